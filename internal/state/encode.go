package state

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultChunkBytes is the most gzip bytes Encode puts in one Secret: the
// kubernetes backend cuts its stream below the API server's 1 MiB object
// limit the same way.
const DefaultChunkBytes = 1 << 20 * 3 / 4

// Encode writes a state file (state v4 JSON, raw) as the kubernetes backend
// stores it: one gzip stream cut into chunks of at most chunkBytes (0:
// DefaultChunkBytes), the base Secret tfstate-default-<suffix> followed by
// its -part-N Secrets, each carrying the backend's own labels and encoding
// annotation plus labels (the backend's labels= setting; CAPTF passes the
// owner labels, captf.io/managed, the cluster name and the move label).
// Read and FromSecrets read back exactly what it writes. It is for callers
// that stand in for a runner (the scale harness, tests); the manager never
// writes state.
func Encode(namespace, suffix string, raw []byte, labels map[string]string, chunkBytes int) ([]corev1.Secret, error) {
	if namespace == "" || suffix == "" {
		return nil, fmt.Errorf("state encode needs a namespace and a suffix (got %q/%q)", namespace, suffix)
	}
	if chunkBytes <= 0 {
		chunkBytes = DefaultChunkBytes
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("failed to compress the state of suffix %s: %w", suffix, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("failed to compress the state of suffix %s: %w", suffix, err)
	}
	stream := buf.Bytes()
	var out []corev1.Secret
	for i := 0; i == 0 || len(stream) > 0; i++ {
		n := min(chunkBytes, len(stream))
		l := maps.Clone(labels)
		if l == nil {
			l = map[string]string{}
		}
		l[BackendStateLabel] = "true"
		l[BackendSuffixLabel] = suffix
		l[BackendWorkspaceLabel] = Workspace
		l[BackendManagedByLabel] = "terraform"
		out = append(out, corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: ChunkName(suffix, i), Labels: l,
				Annotations: map[string]string{backendEncodingAnnotation: "gzip"},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{DataKey: bytes.Clone(stream[:n])},
		})
		stream = stream[n:]
	}
	return out, nil
}
