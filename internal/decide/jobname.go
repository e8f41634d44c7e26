package decide

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// MaxJobNameLength is the longest Job name: a pod named after the Job (plus
// "-" and five random characters) then fits a 63-character hostname
// untruncated, which the state lock's holder identity relies on.
const MaxJobNameLength = 57

// MaxAttempt bounds attempt numbers so that a corrupt attempt label cannot
// overflow the next attempt or push a name past MaxJobNameLength.
const MaxAttempt = 1 << 30

// JobName is the deterministic name of a Job:
//
//	captf-<c|m|mp>-<name>-<op>-a<attempt>-<hash6>
//
// hash6 is the first six hex characters of SHA-256 over the inputs hash, the
// operation, the attempt and the tick, separated by NUL bytes. The tick is
// 0 for an operation that has none (see Decide for the ticks of refresh,
// drift, drift remediation and restore). When the name would exceed 57
// characters, the object name is replaced by the first 16 hex characters of
// its SHA-256.
func JobName(kind v1alpha1.WorkloadKind, name string, op Operation, attempt int, inputsHash string, tick int64) string {
	attempt = min(max(attempt, 0), MaxAttempt)
	var num [40]byte
	a := strconv.AppendInt(num[:0], int64(attempt), 10)
	t := strconv.AppendInt(num[len(a):len(a)], tick, 10)

	var in [192]byte
	h := append(in[:0], inputsHash...)
	h = append(h, 0)
	h = append(h, op...)
	h = append(h, 0)
	h = append(h, a...)
	h = append(h, 0)
	h = append(h, t...)
	sum := sha256.Sum256(h)
	var hash6 [6]byte
	hex.Encode(hash6[:], sum[:3])

	short := kind.Short()
	fixed := len("captf-") + len(short) + 1 + 1 + len(op) + len("-a") + len(a) + 1 + len(hash6)
	var hashedName [16]byte
	if fixed+len(name) > MaxJobNameLength {
		n := sha256.Sum256([]byte(name))
		hex.Encode(hashedName[:], n[:8])
		name = ""
	}
	var out [MaxJobNameLength + 32]byte
	b := append(out[:0], "captf-"...)
	b = append(b, short...)
	b = append(b, '-')
	if name == "" {
		b = append(b, hashedName[:]...)
	} else {
		b = append(b, name...)
	}
	b = append(b, '-')
	b = append(b, op...)
	b = append(b, "-a"...)
	b = append(b, a...)
	b = append(b, '-')
	b = append(b, hash6[:]...)
	return string(b)
}

// NextAttempt is the attempt number of a new Job of op: one more than the
// highest attempt retained for that operation.
func NextAttempt(jobs []JobRecord, op Operation) int {
	h := summarize(jobs)
	return h.nextAttempt(op)
}

func (h *history) nextAttempt(op Operation) int {
	if opIndex(op) < 0 {
		return 1
	}
	return min(h.op(op).maxAttempt, MaxAttempt-1) + 1
}
