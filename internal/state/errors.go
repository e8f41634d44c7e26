package state

import (
	"errors"
	"fmt"

	v1alpha1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// StateReadable reasons a read error maps onto (reference-facts §1.8).
const (
	ReasonCorrupt      = v1alpha1.StateCorruptReason
	ReasonInconsistent = v1alpha1.StateInconsistentReason
	ReasonEncrypted    = v1alpha1.StateEncryptedReason
	ReasonNotFound     = v1alpha1.StateNotFoundReason
)

// ErrNotFound means the object has no state Secret at all: normal before the
// first apply (StateReadable Unknown/StateNotFound), or lost state for an
// object that applied before (see EverApplied).
var ErrNotFound = errors.New("no state Secret found")

// ErrNeverWritten means the base state Secret exists alone and holds no
// tfstate key: the backend creates the Secret, then writes the state into
// it, while it holds the lock it takes to initialize the workspace, and a
// runner stopped between the two leaves it so. The backend itself reads such
// a Secret as no state, and so does CAPTF: it wraps ErrNotFound, and its
// StateReadable reason is StateNotFound, not an unreadable state. The lock
// left held by the stopped runner is recovered as a stale lock.
var ErrNeverWritten = fmt.Errorf("%w: the base state Secret was created but no state was ever written into it", ErrNotFound)

// ErrNotCached means a cached state Secret was listed without its data (the
// manager's cache keeps the data only of state Secrets bound to a live
// object, see DataDroppedAnnotation): the caller reads the state live.
var ErrNotCached = errors.New("the cached state Secrets do not hold their data")

// Each way a state can fail to read has its own sentinel, so callers and tests
// can tell them apart with errors.Is; ReasonOf maps them to a condition reason.
var (
	// ErrTooManyChunks: more chunks than the reader's cap (corrupt).
	ErrTooManyChunks = errors.New("state has more chunks than the reader accepts")
	// ErrTooLarge: decompressed state beyond the reader's cap (corrupt).
	ErrTooLarge = errors.New("decompressed state exceeds the reader's size cap")
	// ErrGzip: the concatenated payload is not a valid gzip stream (corrupt).
	ErrGzip = errors.New("state payload is not valid gzip")
	// ErrJSON: the decompressed state is not valid JSON, or not a state file
	// (corrupt).
	ErrJSON = errors.New("state is not valid state JSON")
	// ErrUnsupportedVersion: a state file format other than v4 (corrupt).
	ErrUnsupportedVersion = errors.New("unsupported state file version")
	// ErrEncrypted: OpenTofu's client-side encryption envelope (encrypted).
	ErrEncrypted = errors.New("state is encrypted by OpenTofu client-side encryption")
	// ErrChunkMissing: a chunk between the base and the highest index is
	// absent, or the base Secret itself is (inconsistent).
	ErrChunkMissing = errors.New("state chunk set is incomplete")
	// ErrChunkDuplicate: two Secrets claim the same chunk index
	// (inconsistent).
	ErrChunkDuplicate = errors.New("state chunk set has a duplicated chunk")
	// ErrUnexpectedSecret: a Secret carries the backend's labels for the
	// suffix but is not named as one of its chunks (inconsistent).
	ErrUnexpectedSecret = errors.New("state chunk set names an unexpected Secret")
	// ErrNoData: a chunk Secret has no tfstate data key while other chunks
	// exist (inconsistent); a base Secret alone without it is
	// ErrNeverWritten.
	ErrNoData = errors.New("state Secret has no tfstate data")
	// ErrTruncatedSet: a chunked set whose gzip stream ends early: its last
	// chunk is missing, possibly mid-write (inconsistent).
	ErrTruncatedSet = errors.New("state chunk set ends before its gzip stream does")
)

// ReadError is returned for a state that exists but cannot be read whole.
// It names what is wrong, never any state content.
type ReadError struct {
	// Reason is the StateReadable reason: ReasonCorrupt, ReasonInconsistent
	// or ReasonEncrypted.
	Reason string
	// Kind is one of the sentinels above.
	Kind error
	// Secret names the Secret at fault, when one is.
	Secret string
	// Detail says more, in words safe to put in a condition message.
	Detail string
	// Err is an underlying cause, if any (for example a gzip error).
	Err error
}

func (e *ReadError) Error() string {
	msg := e.Kind.Error()
	if e.Secret != "" {
		msg += ": Secret " + e.Secret
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes the sentinel and the cause to errors.Is and errors.As.
func (e *ReadError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func reasonOfKind(kind error) string {
	switch kind {
	case ErrEncrypted:
		return ReasonEncrypted
	case ErrChunkMissing, ErrChunkDuplicate, ErrUnexpectedSecret, ErrNoData, ErrTruncatedSet:
		return ReasonInconsistent
	default:
		return ReasonCorrupt
	}
}

func newReadError(kind error, secret, detail string, cause error) *ReadError {
	return &ReadError{Reason: reasonOfKind(kind), Kind: kind, Secret: secret, Detail: detail, Err: cause}
}

func readErrorf(kind error, secret string, format string, args ...any) *ReadError {
	return newReadError(kind, secret, fmt.Sprintf(format, args...), nil)
}

// ReasonOf maps an error from Read to its StateReadable reason:
// ReasonNotFound for ErrNotFound, the ReadError's reason, or "" for anything
// else (an API error, which is neither the state's fault nor a condition
// reason: retry it).
func ReasonOf(err error) string {
	if errors.Is(err, ErrNotFound) {
		return ReasonNotFound
	}
	var re *ReadError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ""
}
