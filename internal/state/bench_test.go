package state

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// benchSize is the decompressed size of the benchmark states: 64 MiB less
// 64 KiB, just under the reader's cap.
const benchSize = 64<<20 - 64<<10

// benchState builds a state file of about size bytes. Varied states hold
// cloud-like attributes (ARNs, IDs, tags, a certificate-sized blob) with a
// few random hex characters each, compressing about 10x as real state does.
// Repetitive states repeat the same attributes and compress over 100x, so
// the whole state fits one Secret and OpenTofu can read it through the
// kubernetes backend.
func benchState(tb testing.TB, size int, varied bool) []byte {
	tb.Helper()
	var buf bytes.Buffer
	buf.Grow(size + 1<<20)
	head := mustJSON(tb, sampleDoc(77))
	// Reuse sampleDoc's header and outputs; write resources by hand.
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(head, &doc); err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(&buf, `{"version":4,"terraform_version":"1.12.6","serial":77,"lineage":"0e5c1f6a-1111-2222-3333-444455556666","outputs":%s,"resources":[`, doc["outputs"])
	blob := bytes.Repeat([]byte("MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ"), 16)
	x := uint64(0x9E3779B97F4A7C15)
	rnd := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	for n := 0; buf.Len() < size-4096; n++ {
		if n > 0 {
			buf.WriteByte(',')
		}
		id := uint64(n)
		if varied {
			id = rnd()
		}
		attrs := map[string]any{
			"id":            fmt.Sprintf("i-%016x", id),
			"arn":           fmt.Sprintf("arn:aws:ec2:eu-west-1:123456789012:instance/i-%016x", id),
			"private_ip":    fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255),
			"subnet_id":     fmt.Sprintf("subnet-%08x", id>>32),
			"instance_type": "m6i.large",
			"tags":          map[string]string{"Name": fmt.Sprintf("worker-%d", n), "captf.io/managed-by": "captf", "captf.io/cluster": "prod-eu-1"},
			"user_data":     string(blob),
			"root_block_device": []map[string]any{{
				"volume_size": 100, "volume_type": "gp3", "encrypted": true, "iops": 3000,
				"volume_id": fmt.Sprintf("vol-%016x", id^0xabcdef),
			}},
		}
		if varied {
			attrs["user_data_hash"] = fmt.Sprintf("%016x%016x", rnd(), rnd())
		}
		// The builtin provider's type, so tofu init needs no registry.
		r := docResource{Module: "module.role", Mode: "managed", Type: "terraform_data", Name: fmt.Sprintf("node_%d", n),
			Provider: `provider["terraform.io/builtin/terraform"]`, Instances: []docInstance{{Attributes: attrs}}}
		buf.Write(mustJSON(tb, r))
	}
	buf.WriteString(`],"check_results":null}`)
	for buf.Len() < size {
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// benchCase is one state stored twice in the apiserver: as a 32-chunk set
// for the reader and, when it fits, as a single Secret for tofu.
type benchCase struct {
	name       string
	plain      []byte
	ns         string
	chunked    string // suffix of the 32-chunk copy
	single     string // suffix of the single-Secret copy ("" if too big)
	compressed int
	cache      client.Reader
}

var (
	benchOnce  sync.Once
	benchCases []*benchCase
)

func setupBench(b *testing.B) []*benchCase {
	b.Helper()
	benchOnce.Do(func() {
		e := sharedEnv(b)
		ns := e.namespace(b)
		for _, varied := range []bool{false, true} {
			name := "repetitive"
			if varied {
				name = "varied"
			}
			plain := benchState(b, benchSize, varied)
			gz := gzipBytes(b, plain)
			bc := &benchCase{name: name, plain: plain, ns: ns, compressed: len(gz)}
			bc.chunked, _ = Suffix(ns, v1alpha1.KindTerraformCluster, "bench-"+name)
			e.create(b, secretsAsObjects(ns, chunkSecrets(ns, bc.chunked, split(gz, 32)))...)
			if len(gz) < 1000<<10 {
				bc.single, _ = Suffix(ns, v1alpha1.KindTerraformMachine, "bench-"+name)
				e.create(b, secretsAsObjects(ns, chunkSecrets(ns, bc.single, [][]byte{gz}))...)
			}
			benchCases = append(benchCases, bc)
		}
		c := e.managedCache(b)
		for _, bc := range benchCases {
			bc.cache = c
			eventually(b, 30*time.Second, func() error {
				_, err := Read(context.Background(), c, ns, bc.chunked, DefaultLimits)
				return err
			})
		}
	})
	return benchCases
}

// peakHeap runs f once and returns how far the in-use heap rose above where
// it started, sampled every millisecond.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s runtime.MemStats
		for {
			runtime.ReadMemStats(&s)
			if s.HeapInuse > peak {
				peak = s.HeapInuse
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	if s.HeapInuse > peak {
		peak = s.HeapInuse
	}
	return peak - base
}

// BenchmarkReadVsTofuOutput reads and parses a 32-chunk, ~64 MiB state
// through the manager-style label-selected cache, and runs `tofu output
// -json` on the same state in the same run: through the kubernetes backend
// for the state that fits one Secret, and from a local state file for the
// one that does not (OpenTofu cannot read a chunked set). Run with
// -benchtime=3x; the parent logs the ratio.
func BenchmarkReadVsTofuOutput(b *testing.B) {
	cases := setupBench(b)
	ctx := context.Background()
	for _, bc := range cases {
		var readerNs, tofuNs float64
		b.Run(bc.name+"/reader-32-chunks", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.plain)))
			for b.Loop() {
				st, err := Read(ctx, bc.cache, bc.ns, bc.chunked, DefaultLimits)
				if err != nil {
					b.Fatal(err)
				}
				if st.Chunks != 32 || st.Serial != 77 || len(st.Outputs) != 3 {
					b.Fatalf("read %v", st.MarshalLog())
				}
			}
			readerNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			peak := peakHeap(func() {
				if _, err := Read(ctx, bc.cache, bc.ns, bc.chunked, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(bc.compressed)/(1<<20), "compressed-MiB")
		})
		b.Run(bc.name+"/reader-32-chunks-live-apiserver", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.plain)))
			c := sharedEnv(b).client
			for b.Loop() {
				if _, err := Read(ctx, c, bc.ns, bc.chunked, DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/tofu-output-json", func(b *testing.B) {
			w := newTofuWorkspaceB(b, sharedEnv(b), bc)
			for b.Loop() {
				out := w.run(w.outputArgs()...)
				var m map[string]json.RawMessage
				if err := json.Unmarshal(out, &m); err != nil || len(m) != 3 {
					b.Fatalf("tofu output: %v %s", err, out)
				}
			}
			tofuNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if readerNs > 0 {
				b.ReportMetric(tofuNs/readerNs, "x-reader-time")
			}
		})
		if readerNs > 0 && tofuNs > 0 {
			b.Logf("%s state (%.1f MiB JSON, %.2f MiB gzip): reader %.0f ms, tofu output -json (%s) %.0f ms, reader %.1fx faster",
				bc.name, float64(len(bc.plain))/(1<<20), float64(bc.compressed)/(1<<20), readerNs/1e6, bc.tofuSource(), tofuNs/1e6, tofuNs/readerNs)
		}
	}
}

func (bc *benchCase) tofuSource() string {
	if bc.single != "" {
		return "kubernetes backend, one Secret"
	}
	return "local state file"
}

// benchWorkspace runs tofu output against a bench case's state.
type benchWorkspace struct {
	*tofuWorkspace
	stateFile string
}

func newTofuWorkspaceB(b *testing.B, e *testEnv, bc *benchCase) *benchWorkspace {
	b.Helper()
	w := &benchWorkspace{}
	if bc.single != "" {
		w.tofuWorkspace = newTofuWorkspaceTB(b, e, bc.ns, bc.single, benchModuleBackend)
		w.run("init", "-input=false", "-no-color",
			"-backend-config=config_path="+e.kubeconfig,
			"-backend-config=namespace="+bc.ns,
			"-backend-config=secret_suffix="+bc.single)
		return w
	}
	w.tofuWorkspace = newTofuWorkspaceTB(b, e, bc.ns, "", benchModuleLocal)
	w.stateFile = filepath.Join(w.dir, "bench.tfstate")
	if err := os.WriteFile(w.stateFile, bc.plain, 0o600); err != nil {
		b.Fatal(err)
	}
	return w
}

func (w *benchWorkspace) outputArgs() []string {
	if w.stateFile != "" {
		return []string{"output", "-json", "-state=" + w.stateFile}
	}
	return []string{"output", "-json"}
}

const (
	benchModuleBackend = "terraform {\n  backend \"kubernetes\" {}\n}\n"
	benchModuleLocal   = "# no backend: local state\n"
)
