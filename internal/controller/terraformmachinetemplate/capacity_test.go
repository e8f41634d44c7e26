package terraformmachinetemplate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

const img = "registry.example/machine:v1"

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name     string
		labels   map[string]string
		reason   string
		capacity corev1.ResourceList
		nodeInfo *infrav1.NodeInfo
		inMsg    string
	}{
		{
			name: "an image without the labels leaves both fields unset (CapacityNotDeclared)",
			labels: map[string]string{
				"io.captf.role": "machine",
			},
			reason: infrav1.CapacityNotDeclaredReason,
			inMsg:  "declares neither",
		},
		{
			name: "both labels parsed: CapacityResolved with capacity and nodeInfo",
			labels: map[string]string{
				contract.LabelCapacity: `{"cpu":"2","memory":"4Gi","nvidia.com/gpu":1}`,
				contract.LabelNodeInfo: `{"architecture":"arm64","operatingSystem":"linux"}`,
			},
			reason: infrav1.CapacityResolvedReason,
			capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("4Gi"),
				"nvidia.com/gpu":      resource.MustParse("1"),
			},
			nodeInfo: &infrav1.NodeInfo{Architecture: "arm64", OperatingSystem: "linux"},
			inMsg:    "capacity cpu=2, memory=4Gi, nvidia.com/gpu=1; nodeInfo linux/arm64",
		},
		{
			name:     "capacity alone is resolved; nodeInfo stays unset",
			labels:   map[string]string{contract.LabelCapacity: `{"cpu":"500m"}`},
			reason:   infrav1.CapacityResolvedReason,
			capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			inMsg:    "no nodeInfo",
		},
		{
			name:     "nodeInfo needs at least one key: operatingSystem alone is enough",
			labels:   map[string]string{contract.LabelNodeInfo: `{"operatingSystem":"linux"}`},
			reason:   infrav1.CapacityResolvedReason,
			nodeInfo: &infrav1.NodeInfo{OperatingSystem: "linux"},
		},
		{
			name:   "capacity must be a JSON object: a list is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelCapacity: `["cpu"]`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  contract.LabelCapacity,
		},
		{
			name:   "a quantity that does not parse is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelCapacity: `{"memory":"lots"}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  `quantity "lots" does not parse`,
		},
		{
			name:   "a negative quantity is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelCapacity: `{"cpu":-1}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  "negative",
		},
		{
			name:   "a resource name that is not a qualified name is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelCapacity: `{"bad name":"1"}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  `"bad name"`,
		},
		{
			name:   "an empty capacity object declares nothing and is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelCapacity: `{}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  "declares no resource",
		},
		{
			name:   "a quantity of another JSON type is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelCapacity: `{"cpu":true}`},
			reason: infrav1.CapacityLabelInvalidReason,
		},
		{
			name:   "trailing data after the object is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelCapacity: `{"cpu":"1"} {}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  "data after",
		},
		{
			name:   "architecture must be amd64, arm64, s390x or ppc64le",
			labels: map[string]string{contract.LabelNodeInfo: `{"architecture":"riscv64"}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  "riscv64",
		},
		{
			name:   "nodeInfo with neither key is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelNodeInfo: `{}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  "neither architecture nor operatingSystem",
		},
		{
			name:   "nodeInfo with an unknown key is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelNodeInfo: `{"os":"linux"}`},
			reason: infrav1.CapacityLabelInvalidReason,
		},
		{
			name:   "operatingSystem over 64 characters is CapacityLabelInvalid",
			labels: map[string]string{contract.LabelNodeInfo: `{"operatingSystem":"` + strings.Repeat("x", 65) + `"}`},
			reason: infrav1.CapacityLabelInvalidReason,
			inMsg:  "1 to 64",
		},
		{
			name: "one invalid label invalidates both: nothing half-resolved reaches status",
			labels: map[string]string{
				contract.LabelCapacity: `{"cpu":"2"}`,
				contract.LabelNodeInfo: `{"architecture":"mips"}`,
			},
			reason: infrav1.CapacityLabelInvalidReason,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Resolve(img, c.labels)
			if got.Reason != c.reason {
				t.Fatalf("reason %s (%s), want %s", got.Reason, got.Message, c.reason)
			}
			if !equality.Semantic.DeepEqual(got.Capacity, c.capacity) {
				t.Errorf("capacity %v, want %v", got.Capacity, c.capacity)
			}
			if !equality.Semantic.DeepEqual(got.NodeInfo, c.nodeInfo) {
				t.Errorf("nodeInfo %+v, want %+v", got.NodeInfo, c.nodeInfo)
			}
			if !strings.Contains(got.Message, c.inMsg) {
				t.Errorf("message %q lacks %q", got.Message, c.inMsg)
			}
			if !strings.Contains(got.Message, img) {
				t.Errorf("message %q does not name the image", got.Message)
			}
		})
	}
}

func FuzzResolve(f *testing.F) {
	f.Add(`{"cpu":"2","memory":"4Gi"}`, `{"architecture":"amd64","operatingSystem":"linux"}`)
	f.Add(`{"cpu":1e3}`, `{}`)
	f.Add(`null`, `null`)
	f.Fuzz(func(t *testing.T, capacity, nodeInfo string) {
		r := Resolve(img, map[string]string{contract.LabelCapacity: capacity, contract.LabelNodeInfo: nodeInfo})
		switch r.Reason {
		case infrav1.CapacityResolvedReason:
			if len(r.Capacity) == 0 || r.NodeInfo == nil {
				t.Fatalf("resolved with both labels present but a field unset: %+v", r)
			}
			for _, q := range r.Capacity {
				if q.Sign() < 0 {
					t.Fatalf("negative quantity resolved")
				}
			}
		case infrav1.CapacityLabelInvalidReason:
			if r.Capacity != nil || r.NodeInfo != nil {
				t.Fatalf("invalid with fields set: %+v", r)
			}
		default:
			t.Fatalf("unexpected reason %s", r.Reason)
		}
	})
}

func BenchmarkResolve(b *testing.B) {
	labels := map[string]string{
		contract.LabelCapacity: `{"cpu":"2","memory":"4Gi","ephemeral-storage":"20Gi","nvidia.com/gpu":1}`,
		contract.LabelNodeInfo: `{"architecture":"amd64","operatingSystem":"linux"}`,
	}
	b.ReportAllocs()
	for b.Loop() {
		Resolve(img, labels)
	}
}

// TestShorten checks the cut of a label value echoed into an error, a
// condition message or an event note: within its bound, marked with "...",
// and never inside a rune (a value cut mid-rune would reach the API as
// invalid UTF-8).
func TestShorten(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"amd64", 32, "amd64"},
		{strings.Repeat("x", 32), 32, strings.Repeat("x", 32)},
		{strings.Repeat("x", 33), 32, strings.Repeat("x", 29) + "..."},
		{"aaaaaa€€€€", 12, "aaaaaa€..."},
		{"aaaaaaa€€€€", 12, "aaaaaaa..."},
	}
	for _, c := range cases {
		got := shorten(c.s, c.n)
		if got != c.want || len(got) > c.n {
			t.Errorf("shorten(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if got := limit(strings.Repeat("é", maxMessage)); len(got) != maxMessage-1 || !strings.HasSuffix(got, "é...") {
		t.Errorf("limit of %d two-byte runes = %d bytes ending %q", maxMessage, len(got), got[len(got)-8:])
	}
}
