package watches

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestIndexes(t *testing.T) {
	yes := true
	tc := &infrav1.TerraformCluster{}
	tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: "own"}
	tc.Spec.VariablesFrom = []infrav1.VariablesSource{
		{ConfigMapRef: &infrav1.LocalObjectReference{Name: "sizing"}},
		{SecretRef: &infrav1.LocalObjectReference{Name: "db"}},
		{ConfigMapRef: &infrav1.LocalObjectReference{Name: "sizing"}},
	}
	tcDefaults := tc.DeepCopy()
	tcDefaults.Spec.Defaults = &infrav1.ClusterDefaults{IdentityRef: &infrav1.IdentityReference{Name: "passed"}}

	tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{clusterv1.ClusterNameLabel: "cl"}}}
	tm.Spec.VariablesFrom = tc.Spec.VariablesFrom
	tmProvisioned := tm.DeepCopy()
	tmProvisioned.Status.Initialization = &infrav1.Initialization{Provisioned: &yes}
	tmOwn := tm.DeepCopy()
	tmOwn.Spec.IdentityRef = &infrav1.IdentityReference{Name: "own"}

	pool := &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{clusterv1.ClusterNameLabel: "cl"}}}
	pool.Spec.VariablesFrom = tc.Spec.VariablesFrom
	pool.Status.Initialization = &infrav1.Initialization{Provisioned: &yes}

	capi := &clusterv1.Cluster{}
	capi.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformCluster", Name: "tc"}
	otherInfra := capi.DeepCopy()
	otherInfra.Spec.InfrastructureRef.Kind = "DockerCluster"

	for _, c := range []struct {
		name string
		fn   func(client.Object) []string
		obj  client.Object
		want []string
	}{
		{"a cluster's ConfigMaps, each once", configMapSources, tc, []string{"sizing"}},
		{"a cluster's Secrets", secretSources, tc, []string{"db"}},
		{"an unprovisioned machine's ConfigMaps", configMapSources, tm, []string{"sizing"}},
		{"a provisioned machine reads no source again", configMapSources, tmProvisioned, nil},
		{"a provisioned machine's Secrets neither", secretSources, tmProvisioned, nil},
		{"a provisioned pool still reads its sources", secretSources, pool, []string{"db"}},
		{"a cluster's own identity", ownIdentity, tc, []string{"own"}},
		{"a cluster passes its own identity down", passedIdentity, tc, []string{"own"}},
		{"a cluster passes spec.defaults.identityRef down first", passedIdentity, tcDefaults, []string{"passed"}},
		{"a machine without identityRef inherits from its Cluster", inheritsIdentityFrom, tm, []string{"cl"}},
		{"a machine with its own identityRef inherits nothing", inheritsIdentityFrom, tmOwn, nil},
		{"a machine's own identity", ownIdentity, tmOwn, []string{"own"}},
		{"a pool without identityRef inherits from its Cluster", inheritsIdentityFrom, pool, []string{"cl"}},
		{"a Cluster's TerraformCluster", terraformClusterOf, capi, []string{"tc"}},
		{"a Cluster of another infrastructure", terraformClusterOf, otherInfra, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.fn(c.obj); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
