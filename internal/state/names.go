package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Suffix derives the backend's secret_suffix for an object: the first 16 hex
// characters of sha256("<namespace>/<kind>/<name>"), a hyphen and the kind
// code. It depends only on what survives a clusterctl move (never the UID),
// and it always ends in a letter, so the backend never mistakes it for a
// chunk index.
func Suffix(namespace string, kind v1alpha1.WorkloadKind, name string) (string, error) {
	code := kind.Short()
	if code == "" {
		return "", fmt.Errorf("kind %q has no state: expected a workload kind %v", kind, v1alpha1.WorkloadKinds())
	}
	if namespace == "" || name == "" {
		return "", fmt.Errorf("state suffix of %s needs a namespace and a name (got %q/%q)", kind, namespace, name)
	}
	sum := sha256.Sum256([]byte(namespace + "/" + string(kind) + "/" + name))
	return hex.EncodeToString(sum[:])[:16] + "-" + code, nil
}

// SecretName is the base state Secret, tfstate-default-<suffix>.
func SecretName(suffix string) string {
	return "tfstate-" + Workspace + "-" + suffix
}

// ChunkName names chunk index of the state: the base Secret for 0 and
// <base>-part-<index> after it (the chunked shape Terraform writes).
func ChunkName(suffix string, index int) string {
	if index == 0 {
		return SecretName(suffix)
	}
	return SecretName(suffix) + "-part-" + strconv.Itoa(index)
}

// LockLeaseName is the backend's lock Lease, lock-tfstate-default-<suffix>.
func LockLeaseName(suffix string) string {
	return "lock-" + SecretName(suffix)
}

// BackupName is the first Secret of a backup set,
// captf-state-backup-<suffix>-<serial>.
func BackupName(suffix string, serial uint64) string {
	return "captf-state-backup-" + suffix + "-" + strconv.FormatUint(serial, 10)
}

// BackupChunkName names chunk index of a backup set, with the same -part-N
// chunking as the state it copies.
func BackupChunkName(suffix string, serial uint64, index int) string {
	if index == 0 {
		return BackupName(suffix, serial)
	}
	return BackupName(suffix, serial) + "-part-" + strconv.Itoa(index)
}

// chunkIndex returns the chunk index a backend Secret name stands for, or
// false if the name is neither the base Secret nor one of its -part-N chunks.
// Leading zeros parse to the same index, which is how two Secrets can claim
// one chunk.
func chunkIndex(suffix, name string) (int, bool) {
	base := SecretName(suffix)
	if name == base {
		return 0, true
	}
	rest, ok := strings.CutPrefix(name, base+"-part-")
	if !ok || rest == "" || len(rest) > 9 {
		return 0, false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}

// IsChunkName reports whether name is one of the chunk Secrets a state of
// suffix may span: the base Secret or -part-N below DefaultLimits.MaxChunks.
func IsChunkName(suffix, name string) bool {
	n, ok := chunkIndex(suffix, name)
	return ok && n < DefaultLimits.MaxChunks
}

// KindOfSuffix is the workload kind whose code a suffix ends in.
func KindOfSuffix(suffix string) (v1alpha1.WorkloadKind, bool) {
	for _, k := range v1alpha1.WorkloadKinds() {
		if strings.HasSuffix(suffix, "-"+k.Short()) {
			return k, true
		}
	}
	return "", false
}
