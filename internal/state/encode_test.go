package state

import (
	"fmt"
	"strings"
	"testing"
)

// Encode writes what the kubernetes backend writes, so Read takes it back:
// book, State Management ("the backend's Secrets": one gzip stream, the base
// Secret then -part-N, the backend's labels).
func TestEncodeReadsBack(t *testing.T) {
	raw := []byte(`{"version":4,"terraform_version":"1.10.6","serial":7,"lineage":"l-1","outputs":{"exports":{"value":{"vpc":"` +
		strings.Repeat("x", 4000) + `"},"type":"dynamic"}},"resources":[]}`)
	for _, chunk := range []int{0, 64} {
		t.Run(fmt.Sprintf("chunks_of_%d_bytes", chunk), func(t *testing.T) {
			secrets, err := Encode("ns", "0123456789abcdef-m", raw, map[string]string{managedLabel: "true"}, chunk)
			if err != nil {
				t.Fatal(err)
			}
			if chunk > 0 && len(secrets) < 2 {
				t.Fatalf("want several chunks of %d bytes, got %d Secret", chunk, len(secrets))
			}
			for i, s := range secrets {
				if s.Name != ChunkName("0123456789abcdef-m", i) || s.Labels[BackendStateLabel] != "true" || s.Labels[managedLabel] != "true" ||
					s.Labels[BackendSuffixLabel] != "0123456789abcdef-m" || s.Labels[BackendWorkspaceLabel] != Workspace {
					t.Fatalf("Secret %d is %s with labels %v", i, s.Name, s.Labels)
				}
			}
			st, err := FromSecrets(secrets, "0123456789abcdef-m", DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if st.Serial != 7 || st.Lineage != "l-1" || len(st.Outputs) != 1 {
				t.Fatalf("read back serial %d lineage %q outputs %v", st.Serial, st.Lineage, st.Outputs.Names())
			}
		})
	}
	if _, err := Encode("", "s-m", raw, nil, 0); err == nil {
		t.Fatal("Encode without a namespace: want an error")
	}
}
