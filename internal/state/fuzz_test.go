package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fuzzLimits keep the cap small so the fuzzer reaches it often.
var fuzzLimits = Limits{MaxChunks: 8, MaxDecompressedBytes: 1 << 20, MaxOutputBytes: 64 << 10, MaxOutputsBytes: 256 << 10}

// allocBound is the most a read may allocate: a few times the outputs' cap
// (the outputs are all a read keeps, and a captured value grows by
// doubling), a few times the input (the payloads are hashed and wrapped,
// never copied whole), and the fixed buffers of gzip and the scanner;
// never in proportion to what the state decompresses to.
func allocBound(input int) uint64 {
	return uint64(4*fuzzLimits.MaxOutputsBytes) + uint64(8*input) + 2<<20
}

func fuzzSeeds(f *testing.F) {
	good := gzipBytes(f, mustJSON(f, sampleDoc(3)))
	f.Add(good, uint8(0), false)
	f.Add(good, uint8(3), false)
	f.Add(good[:len(good)/2], uint8(1), false)
	f.Add(mustJSON(f, sampleDoc(3)), uint8(2), true)
	f.Add([]byte(`{"serial":1,"lineage":"l","meta":{},"encrypted_data":"QQ==","encryption_version":"v0"}`), uint8(0), true)
	// A gzip bomb: a small payload that expands far past the cap.
	bomb := append([]byte(`{"version":4,"serial":1,"lineage":"l","x":"`), bytes.Repeat([]byte("a"), 2<<20)...)
	f.Add(gzipBytes(f, append(bomb, '"', '}')), uint8(0), false)
	f.Add(gzipBytes(f, []byte(strings.Repeat("[", 20000))), uint8(0), false)
	// A bomb in the outputs: within the decompressed cap, past the
	// outputs' caps, one output and many.
	one := append([]byte(`{"version":4,"serial":1,"lineage":"l","outputs":{"a":{"value":"`), bytes.Repeat([]byte("a"), 900<<10)...)
	f.Add(gzipBytes(f, append(one, []byte(`"}}}`)...)), uint8(0), false)
	many := []byte(`{"version":4,"serial":1,"lineage":"l","outputs":{`)
	for i := range 20 {
		if i > 0 {
			many = append(many, ',')
		}
		many = append(many, fmt.Sprintf(`"o%d":{"value":"%s","type":"string"}`, i, bytes.Repeat([]byte("b"), 40<<10))...)
	}
	f.Add(gzipBytes(f, append(many, []byte(`}}`)...)), uint8(2), false)
	f.Add([]byte(`{"version":4,"serial":1,"lineage":"l","outputs":{"a":{"value":[1,{"b":"\u00e9"}],"sensitive":true}},"resources":[{"mode":"managed","instances":[{}]}]}`), uint8(0), true)
}

// FuzzDecode feeds the reader (FromSecrets, what the manager calls on the
// state Secrets it lists) random chunk payloads in chunk Secrets: either raw
// (as if a Secret held anything at all) or gzip-compressed first, so the
// JSON parser sees random input. It must never panic, never return content
// with an error or an error without a reason, never keep outputs past their
// caps and never allocate past its bound.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, cuts uint8, compress bool) {
		payload := data
		if compress {
			payload = gzipBytes(t, data)
		}
		n := int(cuts%10) + 1
		chunks := split(payload, n)

		secrets := make([]corev1.Secret, len(chunks))
		for i, p := range chunks {
			secrets[i] = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ChunkName("0123456789abcdef-m", i)}, Data: map[string][]byte{DataKey: p}}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st, err := FromSecrets(secrets, "0123456789abcdef-m", fuzzLimits)
		runtime.ReadMemStats(&after)
		var c *Content
		if st != nil {
			c = &st.Content
		}

		if used := after.TotalAlloc - before.TotalAlloc; used > allocBound(len(payload)) {
			t.Fatalf("read of %d payload bytes allocated %d bytes (bound %d)", len(payload), used, allocBound(len(payload)))
		}
		switch {
		case err == nil && c == nil:
			t.Fatal("no content and no error")
		case err != nil && c != nil:
			t.Fatal("content returned with an error")
		case err != nil:
			if ReasonOf(err) == "" {
				t.Fatalf("error without a StateReadable reason: %v", err)
			}
			if n > fuzzLimits.MaxChunks && !errors.Is(err, ErrTooManyChunks) {
				t.Fatalf("%d chunks: %v", n, err)
			}
		default:
			if c.DecompressedBytes > fuzzLimits.MaxDecompressedBytes {
				t.Fatalf("read %d bytes past the cap", c.DecompressedBytes)
			}
			if compress && !json.Valid(data) {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			total := 0
			for name, o := range c.Outputs {
				if o.Value != nil && !json.Valid(o.Value) {
					t.Fatalf("output %q value is not valid JSON", name)
				}
				if n := len(o.Value) + len(o.Type); n > fuzzLimits.MaxOutputBytes {
					t.Fatalf("output %q kept with %d bytes, past the cap of %d", name, n, fuzzLimits.MaxOutputBytes)
				}
				total += len(o.Value) + len(o.Type)
			}
			if total > fuzzLimits.MaxOutputsBytes {
				t.Fatalf("outputs kept with %d bytes, past the cap of %d", total, fuzzLimits.MaxOutputsBytes)
			}
		}
	})
}

// FuzzScannerMatchesEncodingJSON checks the skipping scanner accepts
// exactly the JSON encoding/json accepts.
func FuzzScannerMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2.5e-3,"x\u00e9",true,false,null,{"a":[]}]`, `{"a":01}`, `"\q"`, `[1,]`, ` 1 `, `-0.0E+1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := newScanner(bytes.NewReader(data))
		err := sc.skipValue(0)
		if err == nil {
			err = sc.atEnd()
		}
		if got, want := err == nil, json.Valid(data); got != want {
			t.Fatalf("%q: scanner valid=%v (%v), encoding/json valid=%v", data, got, err, want)
		}
	})
}
