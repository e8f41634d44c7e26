package lint

import "fmt"

// UsageError is a bad command line: exit code ExitUsage.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// PullError is an image that cannot be pulled or extracted: exit code
// ExitUnparsable.
type PullError struct{ Err error }

func (e *PullError) Error() string { return e.Err.Error() }
func (e *PullError) Unwrap() error { return e.Err }
