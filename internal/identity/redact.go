package identity

import (
	"strings"
)

const redacted = "[redacted]"

// credentials holds a source Secret's data. It never formats, logs or
// marshals its values.
type credentials struct {
	data map[string][]byte
}

func (credentials) String() string                { return redacted }
func (credentials) GoString() string              { return redacted }
func (credentials) MarshalLog() any               { return redacted }
func (credentials) MarshalJSON() ([]byte, error)  { return []byte(`"` + redacted + `"`), nil }
func (c credentials) hash() string                { return SourceHash(c.data) }
func (c credentials) copyData() map[string][]byte { return copyData(c.data) }

func copyData(in map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(in))
	for k, v := range in {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

// minRedactLength is the shortest value scrubbed from error text: shorter
// ones would mangle ordinary words without protecting anything.
const minRedactLength = 4

// redactedError hides credential values that a server error might echo. It
// keeps the original error for errors.Is and errors.As (apierrors checks),
// but its text never carries a value.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err with every credential value of data replaced in
// its message.
func redactError(err error, data map[string][]byte) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, v := range data {
		if len(v) >= minRedactLength {
			clean = strings.ReplaceAll(clean, string(v), redacted)
		}
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}
