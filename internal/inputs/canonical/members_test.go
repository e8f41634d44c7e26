package canonical

import (
	"slices"
	"testing"
)

// TestMembers: an object's members come back in document order with their
// bytes as written; anything but one object is refused.
func TestMembers(t *testing.T) {
	ms, err := Members([]byte(`{"b": 1.50, "a": {"x": [1]}, "b2": null}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Key+"="+string(m.Raw))
	}
	if want := []string{"b=1.50", `a={"x": [1]}`, "b2=null"}; !slices.Equal(got, want) {
		t.Errorf("members %q, want %q", got, want)
	}
	for _, bad := range []string{`[1]`, `{"a": 1} {}`, `{"a": }`, ``, `{"a": 1`} {
		if _, err := Members([]byte(bad)); err == nil {
			t.Errorf("Members(%q) succeeded", bad)
		}
	}
}
