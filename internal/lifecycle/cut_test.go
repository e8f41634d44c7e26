package lifecycle

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMessageCuts checks the two cuts of text that reaches a condition:
// a whole message within 1024 bytes, and an echoed annotation value
// quoted within its budget with the cut said; neither splits a rune.
func TestMessageCuts(t *testing.T) {
	long := strings.Repeat("€", 400) // 1200 bytes
	if got := capMessage(long); len(got) != 1023 || !utf8.ValidString(got) {
		t.Errorf("capMessage of %d bytes = %d bytes, valid %t", len(long), len(got), utf8.ValidString(got))
	}
	if got := capMessage("short"); got != "short" {
		t.Errorf("capMessage(short) = %q", got)
	}
	cases := []struct{ v, want string }{
		{"12", `"12"`},
		{strings.Repeat("7", maxEchoBytes), `"` + strings.Repeat("7", maxEchoBytes) + `"`},
		{strings.Repeat("7", maxEchoBytes-1) + "é", `"` + strings.Repeat("7", maxEchoBytes-1) + `" (cut from 65 bytes)`},
	}
	for _, c := range cases {
		if got := quoteCapped(c.v, maxEchoBytes); got != c.want {
			t.Errorf("quoteCapped(%q) = %s, want %s", c.v, got, c.want)
		}
	}
}
