package identity

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
)

const (
	// RunnerName names the default runner ServiceAccount, the RoleBinding
	// CAPTF manages in each namespace and the static ClusterRole it binds.
	RunnerName = "captf-runner"

	// MirrorPrefix starts every credential mirror's name.
	MirrorPrefix = "captf-creds-"

	// TrueValue is the value of captf.io/managed, captf.io/mirrored and
	// captf.io/runner.
	TrueValue = "true"

	// SourceHashPrefix starts every captf.io/source-hash value.
	SourceHashPrefix = "sha256:"

	// maxNameLength is the longest Secret name (a DNS subdomain).
	maxNameLength = 253
	// nameHashLength is how many hex characters of sha256 stand in for the
	// cut part of an over-long name.
	nameHashLength = 16
)

// MirrorName is the name of an identity's credential mirror:
// captf-creds-<identity>. A name that would exceed 253 characters keeps a
// prefix of the identity name and ends in the first 16 hex characters of
// the identity name's sha256, so it stays unique, deterministic and a valid
// DNS subdomain.
func MirrorName(identity string) string {
	name := MirrorPrefix + identity
	if len(name) <= maxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(identity))
	keep := maxNameLength - len(MirrorPrefix) - 1 - nameHashLength
	prefix := strings.TrimRight(identity[:keep], ".-")
	return MirrorPrefix + prefix + "-" + hex.EncodeToString(sum[:])[:nameHashLength]
}

// SourceHash is the captf.io/source-hash of a Secret's data: sha256 over the
// keys in sorted order, each key and value length-prefixed so no two
// different maps hash alike. It identifies a version of the credentials
// without revealing them.
func SourceHash(data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(keys)))
	h.Write(n[:])
	for _, k := range keys {
		binary.BigEndian.PutUint64(n[:], uint64(len(k)))
		h.Write(n[:])
		h.Write([]byte(k))
		v := data[k]
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write(v)
	}
	return SourceHashPrefix + hex.EncodeToString(h.Sum(nil))
}
