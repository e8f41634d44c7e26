package inputs

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkRenderMachine64KiB renders and hashes a machine whose bootstrap
// payload is 64 KiB (a control-plane cloud-config with embedded keys is of
// this order), with cluster exports and a few user variables.
func BenchmarkRenderMachine64KiB(b *testing.B) {
	payload := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range payload {
		payload[i] = byte(r.UintN(256))
	}
	m := bookMachine()
	m.BootstrapData = payload
	vars := Variables{
		Values:    map[string]any{"instance_type": "m6i.xlarge", "root_volume_gib": "100", "subnet_ids": []any{"subnet-0a1", "subnet-0b2"}},
		Sensitive: map[string]bool{"root_volume_gib": true},
	}
	req := Request{Image: bookImage, Inputs: m, Variables: vars}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		out, err := Render(req)
		if err != nil {
			b.Fatal(err)
		}
		if err := out.CheckSize(); err != nil {
			b.Fatal(err)
		}
		size = out.Size()
	}
	b.ReportMetric(float64(size), "bytes/root")
}
