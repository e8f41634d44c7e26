package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

const testNS = "team-a"

func testSuffix(t testing.TB) string {
	t.Helper()
	s, err := Suffix(testNS, v1alpha1.KindTerraformMachine, "worker-0")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReadGoodShapes(t *testing.T) {
	suffix := testSuffix(t)
	doc := mustJSON(t, sampleDoc(7))
	payload := gzipBytes(t, doc)
	for _, tc := range []struct {
		name   string
		chunks int
	}{
		{"OpenTofu writes a single Secret", 1},
		{"Terraform splits a large state into -part-N chunks read in chunk order", 5},
		{"the reader accepts up to 32 chunks", 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := chunkSecrets(testNS, suffix, split(payload, tc.chunks))
			// The list comes back in any order.
			for i, j := 0, len(secrets)-1; i < j; i, j = i+1, j-1 {
				secrets[i], secrets[j] = secrets[j], secrets[i]
			}
			secrets[len(secrets)-1].Annotations[inputsHashAnnotation] = "h2:abc" // not the base: ignored
			for i := range secrets {
				if secrets[i].Name == SecretName(suffix) {
					secrets[i].Annotations[inputsHashAnnotation] = "h2:base"
				}
			}
			st, err := FromSecrets(secrets, suffix, DefaultLimits)
			if err != nil {
				t.Fatalf("FromSecrets: %v", err)
			}
			if st.Serial != 7 || st.Lineage != "0e5c1f6a-1111-2222-3333-444455556666" || st.RuntimeVersion != "1.12.6" {
				t.Errorf("serial/lineage/version = %d/%s/%s", st.Serial, st.Lineage, st.RuntimeVersion)
			}
			if st.ManagedResources != 3 {
				t.Errorf("ManagedResources = %d, want 3 (count and for_each count once, data sources not at all)", st.ManagedResources)
			}
			if st.Chunks != tc.chunks || st.CompressedBytes != int64(len(payload)) || st.DecompressedBytes != int64(len(doc)) {
				t.Errorf("chunks/compressed/decompressed = %d/%d/%d", st.Chunks, st.CompressedBytes, st.DecompressedBytes)
			}
			if st.InputsHash != "h2:base" {
				t.Errorf("InputsHash = %q, want the base Secret's annotation", st.InputsHash)
			}
			names := st.ChunkNames()
			for i, n := range names {
				if n != ChunkName(suffix, i) {
					t.Errorf("chunk %d is %s", i, n)
				}
			}
			if got := st.Outputs.Names(); strings.Join(got, ",") != "endpoint,ids,token" {
				t.Errorf("outputs = %v", got)
			}
			tok := st.Outputs["token"]
			if !tok.Sensitive || string(tok.Value) != `"`+sentinel+`"` || string(tok.Type) != `"string"` {
				t.Errorf("token output = %s %s %v", tok.Value, tok.Type, tok.Sensitive)
			}
			var ep struct {
				Host string `json:"host"`
				Port int    `json:"port"`
			}
			if err := json.Unmarshal(st.Outputs["endpoint"].Value, &ep); err != nil || ep.Host != "10.0.0.1" || ep.Port != 6443 {
				t.Errorf("endpoint output = %+v, %v", ep, err)
			}
			if st.Outputs["endpoint"].Sensitive {
				t.Error("endpoint is not sensitive")
			}
			// Formatting never shows output values.
			for _, s := range []string{fmt.Sprint(st), fmt.Sprintf("%+v", st), fmt.Sprintf("%#v", st.Outputs), fmt.Sprintf("%v", st.MarshalLog())} {
				if strings.Contains(s, sentinel) || strings.Contains(s, "10.0.0.1") {
					t.Errorf("formatted state shows an output value: %s", s)
				}
			}
		})
	}
}

func TestReadFailures(t *testing.T) {
	suffix := testSuffix(t)
	payload := gzipBytes(t, mustJSON(t, sampleDoc(3)))
	chunked := func(n int) []corev1.Secret { return chunkSecrets(testNS, suffix, split(payload, n)) }
	envelope := gzipBytes(t, []byte(`{"serial":3,"lineage":"l","meta":{"key_provider.pbkdf2.k":"eyJzYWx0Ijoi"},"encrypted_data":"QUJD","encryption_version":"v0"}`))

	cases := []struct {
		name    string
		secrets []corev1.Secret
		lim     Limits
		kind    error
		reason  string
	}{
		{
			name:    "more than 32 chunks is corrupt",
			secrets: chunked(33), kind: ErrTooManyChunks, reason: ReasonCorrupt,
		},
		{
			name: "more than 64 MiB decompressed is corrupt",
			secrets: func() []corev1.Secret {
				big := bytes.Repeat([]byte(" "), 65<<20)
				copy(big, `{"version":4,"serial":1,"lineage":"l","x":"`)
				big[len(big)-2] = '"'
				big[len(big)-1] = '}'
				return chunkSecrets(testNS, suffix, split(gzipBytes(t, big), 4))
			}(),
			kind: ErrTooLarge, reason: ReasonCorrupt,
		},
		{
			name: "a missing middle chunk is an incomplete set",
			secrets: func() []corev1.Secret {
				s := chunked(5)
				return append(s[:2], s[3:]...)
			}(),
			kind: ErrChunkMissing, reason: ReasonInconsistent,
		},
		{
			name:    "chunks without their base Secret are an incomplete set",
			secrets: chunked(3)[1:], kind: ErrChunkMissing, reason: ReasonInconsistent,
		},
		{
			name: "two Secrets claiming one chunk are a duplicated set",
			secrets: func() []corev1.Secret {
				s := chunked(3)
				dup := s[1]
				dup.Name = SecretName(suffix) + "-part-01"
				return append(s, dup)
			}(),
			kind: ErrChunkDuplicate, reason: ReasonInconsistent,
		},
		{
			name: "a stranger Secret with the backend's labels is an unexpected Secret",
			secrets: append(chunked(2),
				backendSecret(testNS, suffix, "tfstate-other-"+suffix, payload)),
			kind: ErrUnexpectedSecret, reason: ReasonInconsistent,
		},
		{
			name: "a chunk without the tfstate key is inconsistent",
			secrets: func() []corev1.Secret {
				s := chunked(2)
				s[1].Data = map[string][]byte{"other": []byte("x")}
				return s
			}(),
			kind: ErrNoData, reason: ReasonInconsistent,
		},
		{
			name: "a chunked set whose last chunk is missing ends its stream early",
			secrets: func() []corev1.Secret {
				s := chunked(4)
				return s[:3]
			}(),
			kind: ErrTruncatedSet, reason: ReasonInconsistent,
		},
		{
			name:    "a truncated gzip stream is corrupt",
			secrets: chunkSecrets(testNS, suffix, [][]byte{payload[:len(payload)/2]}),
			kind:    ErrGzip, reason: ReasonCorrupt,
		},
		{
			name: "a gzip stream with a bad checksum is corrupt",
			secrets: func() []corev1.Secret {
				p := bytes.Clone(payload)
				p[len(p)-6] ^= 0xff
				return chunkSecrets(testNS, suffix, [][]byte{p})
			}(),
			kind: ErrGzip, reason: ReasonCorrupt,
		},
		{
			name:    "a payload that is not gzip is corrupt",
			secrets: chunkSecrets(testNS, suffix, [][]byte{[]byte(`{"version":4}`)}),
			kind:    ErrGzip, reason: ReasonCorrupt,
		},
		{
			name:    "bad JSON is corrupt",
			secrets: chunkSecrets(testNS, suffix, [][]byte{gzipBytes(t, []byte(`{"version":4,"serial":1,"lineage":"l","outputs":{"a":{"value":[1,2}}}`))}),
			kind:    ErrJSON, reason: ReasonCorrupt,
		},
		{
			name:    "bad JSON at a secret value names the offset, never the content",
			secrets: chunkSecrets(testNS, suffix, [][]byte{gzipBytes(t, []byte(`{"version":4,"serial":1,"lineage":"l","outputs":{"t":{"value":`+sentinel+`}}}`))}),
			kind:    ErrJSON, reason: ReasonCorrupt,
		},
		{
			name:    "JSON that is not an object is corrupt",
			secrets: chunkSecrets(testNS, suffix, [][]byte{gzipBytes(t, []byte(`[4]`))}),
			kind:    ErrJSON, reason: ReasonCorrupt,
		},
		{
			name:    "trailing data after the state object is corrupt",
			secrets: chunkSecrets(testNS, suffix, [][]byte{gzipBytes(t, append(mustJSON(t, sampleDoc(1)), []byte(" {}")...))}),
			kind:    ErrJSON, reason: ReasonCorrupt,
		},
		{
			name:    "an unsupported state version is corrupt",
			secrets: chunkSecrets(testNS, suffix, [][]byte{gzipBytes(t, []byte(`{"version":3,"serial":1,"lineage":"l","modules":[]}`))}),
			kind:    ErrUnsupportedVersion, reason: ReasonCorrupt,
		},
		{
			name:    "OpenTofu's encryption envelope is encrypted, not corrupt",
			secrets: chunkSecrets(testNS, suffix, [][]byte{envelope}),
			kind:    ErrEncrypted, reason: ReasonEncrypted,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.lim
			if lim.MaxChunks == 0 {
				lim = DefaultLimits
			}
			st, err := FromSecrets(tc.secrets, suffix, lim)
			if st != nil {
				t.Fatalf("a state that cannot be read whole returned content: %v", st.MarshalLog())
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error = %v, want %v", err, tc.kind)
			}
			if got := ReasonOf(err); got != tc.reason {
				t.Errorf("reason = %s, want %s", got, tc.reason)
			}
			if strings.Contains(err.Error(), sentinel) {
				t.Errorf("error shows state content: %v", err)
			}
		})
	}
}

func TestReadNoSecretsIsNotFound(t *testing.T) {
	_, err := FromSecrets(nil, testSuffix(t), DefaultLimits)
	if !errors.Is(err, ErrNotFound) || ReasonOf(err) != ReasonNotFound {
		t.Fatalf("err = %v", err)
	}
	if ReasonOf(errors.New("api down")) != "" {
		t.Fatal("an API error has no StateReadable reason")
	}
}

// TestReadNeverWrittenIsNotFound checks Terraform State (the backend; locks):
// the backend creates the base Secret, then writes the state into it, while
// holding its init lock. A base Secret alone without the tfstate key is a
// state never written, which the backend reads as no state: StateNotFound,
// not an unreadable state. A chunk set with a chunk lacking the key stays
// inconsistent.
func TestReadNeverWrittenIsNotFound(t *testing.T) {
	suffix := testSuffix(t)
	base := chunkSecrets(testNS, suffix, [][]byte{[]byte("x")})
	base[0].Data = nil
	_, err := FromSecrets(base, suffix, DefaultLimits)
	if !errors.Is(err, ErrNeverWritten) || !errors.Is(err, ErrNotFound) || ReasonOf(err) != ReasonNotFound {
		t.Fatalf("a base Secret never written: err = %v, reason %q; want ErrNeverWritten, StateNotFound", err, ReasonOf(err))
	}
	chunks := chunkSecrets(testNS, suffix, [][]byte{[]byte("x"), []byte("y")})
	chunks[0].Data = nil
	_, err = FromSecrets(chunks, suffix, DefaultLimits)
	if !errors.Is(err, ErrNoData) || errors.Is(err, ErrNotFound) || ReasonOf(err) != ReasonInconsistent {
		t.Fatalf("a base Secret without data before a chunk: err = %v, reason %q; want ErrNoData, StateInconsistent", err, ReasonOf(err))
	}
}

func TestDecodeOddButValidStates(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		managed    int
		outputs    int
	}{
		{"null outputs and resources read as none", `{"version":4,"serial":0,"lineage":"l","outputs":null,"resources":null}`, 0, 0},
		{"unknown top-level fields are skipped", `{"future":{"a":[1,{"b":"\u00e9\n"}]},"version":4,"serial":9,"lineage":"l"}`, 0, 0},
		{"escaped names decode", `{"version":4,"serial":1,"lineage":"l","outputs":{"a\u0062":{"value":1,"type":"number"}},"resources":[{"mode":"m\u0061naged"}]}`, 1, 1},
		{"whitespace everywhere", " \n{ \"version\" : 4 , \"serial\" : 1 , \"lineage\" : \"l\" , \"resources\" : [ { \"mode\" : \"managed\" } , { \"mode\" : \"data\" } ] }\n ", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode([][]byte{gzipBytes(t, []byte(tc.json))}, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if c.ManagedResources != tc.managed || len(c.Outputs) != tc.outputs {
				t.Errorf("managed=%d outputs=%d", c.ManagedResources, len(c.Outputs))
			}
		})
	}
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{"a":1}`, `{"a":-0.5e+10}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":"\x"}`, `{"a":"\u12"}`,
		`{"a":"` + "\x01" + `"}`, `{"a":tru}`, `{"a":[1,]}`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":[[[]]]}`, `{"a":"\ud83d\ude00"}`,
		`{"a":nul}`, `{"a":-}`, `{"a":1e}`, `{"a":[1 2]}`, `{"a":{"b":{}}}`, `{1:2}`,
	} {
		sc := newScanner(strings.NewReader(in))
		err := sc.skipValue(0)
		if err == nil {
			err = sc.atEnd()
		}
		if got, want := err == nil, json.Valid([]byte(in)); got != want {
			t.Errorf("%q: scanner valid=%v (%v), encoding/json valid=%v", in, got, err, want)
		}
	}
}

// TestReadOutputCaps: the outputs are all a read keeps of a state, so they
// are bounded however far the state expands (Terraform State: a state over
// the reader's caps is corrupt, never partly read). One output over
// MaxOutputBytes, or outputs together over MaxOutputsBytes, make the state
// StateCorrupt with a message naming the output and the cap, never its
// value; outputs within both caps read whole.
func TestReadOutputCaps(t *testing.T) {
	lim := Limits{MaxChunks: 4, MaxDecompressedBytes: 8 << 20, MaxOutputBytes: 1000, MaxOutputsBytes: 2500}
	doc := func(sizes ...int) []byte {
		b := []byte(`{"version":4,"serial":3,"lineage":"l","outputs":{`)
		for i, n := range sizes {
			if i > 0 {
				b = append(b, ',')
			}
			// The value's JSON is n bytes: the quotes and n-2 letters.
			b = append(b, fmt.Sprintf(`"o%d":{"value":"%s","sensitive":true}`, i, strings.Repeat(sentinel[:1], n-2))...)
		}
		// Resources far past the outputs' caps are skipped, not kept.
		return append(b, fmt.Sprintf(`},"resources":[{"mode":"managed","x":"%s"}]}`, strings.Repeat("r", 4<<20))...)
	}
	cases := []struct {
		name  string
		sizes []int
		want  string // "" reads
	}{
		{"outputs within both caps", []int{1000, 1000, 500}, ""},
		{"one output over its cap", []int{10, 1001}, `output "o1" takes more than 1000 bytes`},
		{"outputs together over the total", []int{1000, 1000, 501}, `the outputs up to "o2" take more than 2500 bytes together`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			secrets := []corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: ChunkName("0123456789abcdef-m", 0)},
				Data: map[string][]byte{DataKey: gzipBytes(t, doc(c.sizes...))}}}
			st, err := FromSecrets(secrets, "0123456789abcdef-m", lim)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				for i, n := range c.sizes {
					if got := len(st.Outputs[fmt.Sprintf("o%d", i)].Value); got != n {
						t.Errorf("o%d read with %d bytes, want %d", i, got, n)
					}
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || ReasonOf(err) != ReasonCorrupt || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v (reason %q), want ErrTooLarge, StateCorrupt, %q", err, ReasonOf(err), c.want)
			}
			if strings.Contains(err.Error(), strings.Repeat(sentinel[:1], 8)) {
				t.Fatalf("the error holds the output's value: %v", err)
			}
		})
	}
}
