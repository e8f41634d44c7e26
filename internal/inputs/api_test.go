package inputs

import (
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestNamesEqualTheAPIConstants(t *testing.T) {
	for got, want := range map[string]string{
		EndpointSourceUser:          v1alpha1.EndpointSourceUser,
		EndpointSourceModule:        v1alpha1.EndpointSourceModule,
		AutoscalerMinSizeAnnotation: v1alpha1.AutoscalerMinSizeAnnotation,
		AutoscalerMaxSizeAnnotation: v1alpha1.AutoscalerMaxSizeAnnotation,
	} {
		if got != want {
			t.Errorf("%q differs from api/v1alpha1 %q", got, want)
		}
	}
}
