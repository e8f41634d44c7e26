package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	// "é" is 2 bytes, "€" 3, "𝄞" 4.
	cases := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"shorter than n is kept", "abc", 5, "abc"},
		{"exactly n bytes is kept", "abc", 3, "abc"},
		{"ASCII is cut at n", "abcdef", 4, "abcd"},
		{"exact length with a multi-byte rune last is kept", "ab€", 5, "ab€"},
		{"a cut after a whole rune keeps it", "a€b", 4, "a€"},
		{"a cut inside a 2-byte rune leaves it out", "aé", 2, "a"},
		{"a cut after the first byte of a 3-byte rune leaves it out", "ab€c", 3, "ab"},
		{"a cut after the second byte of a 3-byte rune leaves it out", "ab€c", 4, "ab"},
		{"a cut inside a 4-byte rune leaves it out", "x𝄞", 4, "x"},
		{"a cut that leaves no whole rune is empty", "€uro", 2, ""},
		{"n = 0 is empty", "abc", 0, ""},
		{"negative n is empty", "abc", -1, ""},
		{"the empty string stays empty", "", 3, ""},
		{"invalid bytes are kept, not walked over", "a\x80\x80\x80b", 3, "a\x80\x80"},
		{"an invalid lead byte before the cut is kept", "ab\xffcd", 3, "ab\xff"},
		{"a broken sequence at the cut is kept as it is", "a\xe2\x82x", 2, "a\xe2"},
		{"a valid rune after invalid bytes is still whole or left out", "\x80é", 2, "\x80"},
		{"U+FFFD written out is a rune like any other", "a\uFFFD", 3, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Truncate(c.s, c.n)
			if got != c.want {
				t.Fatalf("Truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
			}
			if c.n >= 0 && len(got) > c.n {
				t.Fatalf("Truncate(%q, %d) is %d bytes", c.s, c.n, len(got))
			}
			if !strings.HasPrefix(c.s, got) {
				t.Fatalf("Truncate(%q, %d) = %q is not a prefix", c.s, c.n, got)
			}
		})
	}
}

// TestTruncateKeepsValidUTF8Valid cuts a valid string at every length: each
// cut is valid UTF-8 and leaves out at most one rune's worth less than n.
func TestTruncateKeepsValidUTF8Valid(t *testing.T) {
	s := "aé€𝄞bé€𝄞"
	for n := 0; n <= len(s)+1; n++ {
		got := Truncate(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q is not valid UTF-8", s, n, got)
		}
		if short := min(n, len(s)) - len(got); short < 0 || short >= utf8.UTFMax {
			t.Fatalf("Truncate(%q, %d) = %q: %d bytes short of the budget", s, n, got, short)
		}
	}
}
