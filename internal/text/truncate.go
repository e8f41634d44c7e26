package text

import "unicode/utf8"

// Truncate returns the longest prefix of s that is at most n bytes long and
// does not end inside a valid UTF-8 sequence: a rune that would cross the
// n-th byte is left out whole. Bytes that are not valid UTF-8 are kept as
// they are, one byte each, so the cut walks back over a valid sequence only,
// never over invalid bytes. n <= 0 gives "".
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	// The rune that holds byte n, if it began before n, began at most
	// utf8.UTFMax-1 bytes before it.
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if !utf8.RuneStart(s[i]) {
			continue
		}
		// An invalid byte decodes with size 1: it is kept.
		if _, size := utf8.DecodeRuneInString(s[i:]); size > 1 && i+size > n {
			return s[:i]
		}
		break
	}
	return s[:n]
}
