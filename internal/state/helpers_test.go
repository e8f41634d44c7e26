package state

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sentinel is an output value tests look for in logs, errors and events.
const sentinel = "s3cr3t-sentinel-9f1c"

// stateDoc builds a state v4 file the way the runtimes write it.
type stateDoc struct {
	Version          int               `json:"version"`
	TerraformVersion string            `json:"terraform_version"`
	Serial           uint64            `json:"serial"`
	Lineage          string            `json:"lineage"`
	Outputs          map[string]docOut `json:"outputs"`
	Resources        []docResource     `json:"resources"`
	CheckResults     any               `json:"check_results"`
}

type docOut struct {
	Value     any  `json:"value"`
	Type      any  `json:"type"`
	Sensitive bool `json:"sensitive,omitempty"`
}

type docResource struct {
	Module    string        `json:"module,omitempty"`
	Mode      string        `json:"mode"`
	Type      string        `json:"type"`
	Name      string        `json:"name"`
	Each      string        `json:"each,omitempty"`
	Provider  string        `json:"provider"`
	Instances []docInstance `json:"instances"`
}

type docInstance struct {
	IndexKey      any            `json:"index_key,omitempty"`
	SchemaVersion int            `json:"schema_version"`
	Attributes    map[string]any `json:"attributes"`
}

// sampleDoc is a small state: three managed resources (one with count 3,
// one with for_each 2, one single), one data source, and outputs including a
// sensitive one holding the sentinel.
func sampleDoc(serial uint64) stateDoc {
	inst := func(key any, attrs map[string]any) docInstance {
		return docInstance{IndexKey: key, Attributes: attrs}
	}
	return stateDoc{
		Version: 4, TerraformVersion: "1.12.6", Serial: serial, Lineage: "0e5c1f6a-1111-2222-3333-444455556666",
		Outputs: map[string]docOut{
			"endpoint": {Value: map[string]any{"host": "10.0.0.1", "port": 6443}, Type: []any{"object", map[string]any{"host": "string", "port": "number"}}},
			"token":    {Value: sentinel, Type: "string", Sensitive: true},
			"ids":      {Value: []string{"a", "b"}, Type: []any{"list", "string"}},
		},
		Resources: []docResource{
			{Module: "module.role", Mode: "managed", Type: "terraform_data", Name: "many", Provider: `provider["terraform.io/builtin/terraform"]`,
				Each: "list", Instances: []docInstance{inst(0, map[string]any{"id": "x0"}), inst(1, map[string]any{"id": "x1"}), inst(2, map[string]any{"id": "x2"})}},
			{Module: "module.role", Mode: "managed", Type: "terraform_data", Name: "keyed", Provider: `provider["terraform.io/builtin/terraform"]`,
				Each: "map", Instances: []docInstance{inst("a", map[string]any{"input": sentinel}), inst("b", map[string]any{"id": "y"})}},
			{Mode: "managed", Type: "terraform_data", Name: "one", Provider: `provider["terraform.io/builtin/terraform"]`,
				Instances: []docInstance{inst(nil, map[string]any{"id": "z", "nested": map[string]any{"deep": []any{1, 2.5e3, true, nil, "q\"\\\u00e9"}}})}},
			{Mode: "data", Type: "terraform_remote_state", Name: "other", Provider: `provider["terraform.io/builtin/terraform"]`,
				Instances: []docInstance{inst(nil, map[string]any{"backend": "local"})}},
		},
		CheckResults: nil,
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// split cuts a payload into n chunks of near-equal size, as Terraform's
// chunked shape stores one gzip stream across Secrets.
func split(b []byte, n int) [][]byte {
	out := make([][]byte, 0, n)
	size := (len(b) + n - 1) / n
	for i := 0; i < n; i++ {
		lo, hi := i*size, (i+1)*size
		if lo > len(b) {
			lo = len(b)
		}
		if hi > len(b) {
			hi = len(b)
		}
		out = append(out, b[lo:hi])
	}
	return out
}

// backendSecret is a Secret as the kubernetes backend writes it.
func backendSecret(namespace, suffix, name string, payload []byte) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels: map[string]string{
				BackendStateLabel: "true", BackendSuffixLabel: suffix, BackendWorkspaceLabel: Workspace,
				BackendManagedByLabel: "terraform", managedLabel: "true",
			},
			Annotations: map[string]string{backendEncodingAnnotation: "gzip"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{DataKey: payload},
	}
}

// chunkSecrets lays chunks out under their backend names.
func chunkSecrets(namespace, suffix string, chunks [][]byte) []corev1.Secret {
	out := make([]corev1.Secret, len(chunks))
	for i, c := range chunks {
		out[i] = backendSecret(namespace, suffix, ChunkName(suffix, i), c)
	}
	return out
}
