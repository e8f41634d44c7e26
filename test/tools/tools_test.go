package tools

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestBuildReusesTheLink: a second Build of an unchanged package leaves the
// shared binary as it was (go build found it up to date and did not link
// again) and still hands the caller its own copy.
func TestBuildReusesTheLink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a", "podprog"), filepath.Join(dir, "b", "podprog")
	for _, d := range []string{filepath.Dir(first), filepath.Dir(second)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Build(ctx, "./test/env/testdata/podprog", first, "CGO_ENABLED=0"); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := Build(ctx, "./test/env/testdata/podprog", second, "CGO_ENABLED=0"); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("the second Build linked podprog again: %s and %s are different files", first, second)
	}
	if after.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable: %v", second, after.Mode())
	}
}
