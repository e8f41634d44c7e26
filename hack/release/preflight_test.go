package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo is a repository with config/metadata.yaml (release series 0.1
// and 0.2) committed, for the preflight and notes tests.
func gitRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: 0\n  minor: 1\n  contract: v1beta2\n- major: 0\n  minor: 2\n  contract: v1beta2\n"
	if err := os.WriteFile(filepath.Join(dir, "config", MetadataFile), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "-q", "-m", "first")
	return dir, run
}

// TestCheckVersion: what release-preflight refuses before anything is
// built.
func TestCheckVersion(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		setup   func(t *testing.T, dir string, git func(...string) string)
		version string
		fails   string
		note    string
	}{
		{name: "a clean untagged HEAD may be released, with a note to tag it", version: "v0.1.0", note: "HEAD has no tag v0.1.0"},
		{name: "a pre-release is a semver tag", version: "v0.2.0-rc.1", note: "no tag"},
		{name: "the version must be semver with three numbers", version: "v0.1", fails: "not a semver tag"},
		{name: "the version needs its v", version: "0.1.0", fails: "not a semver tag"},
		{name: "build metadata is not a release", version: "v0.1.0+build.1", fails: "not a semver tag"},
		{
			name: "a changed file makes the tree unclean", version: "v0.1.0", fails: "the tree has changes",
			setup: func(t *testing.T, dir string, _ func(...string) string) {
				if err := os.WriteFile(filepath.Join(dir, "config", MetadataFile), []byte("changed"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "an untracked file makes the tree unclean", version: "v0.1.0", fails: "the tree has changes",
			setup: func(t *testing.T, dir string, _ func(...string) string) {
				if err := os.WriteFile(filepath.Join(dir, "new.txt"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "the version's tag on HEAD passes without a note", version: "v0.1.0",
			setup: func(_ *testing.T, _ string, git func(...string) string) { git("tag", "v0.1.0") },
		},
		{
			name: "the version's tag elsewhere fails", version: "v0.1.0", fails: "tag v0.1.0 is on",
			setup: func(_ *testing.T, _ string, git func(...string) string) {
				git("tag", "v0.1.0")
				git("commit", "-q", "--allow-empty", "-m", "second")
			},
		},
		{
			name: "HEAD tagged with another version fails", version: "v0.1.1", fails: "HEAD is tagged v0.1.0",
			setup: func(_ *testing.T, _ string, git func(...string) string) { git("tag", "v0.1.0") },
		},
		{
			name: "a version below an existing tag fails", version: "v0.1.0", fails: "tag v0.2.0 is above v0.1.0",
			setup: func(_ *testing.T, _ string, git func(...string) string) {
				git("tag", "v0.2.0")
				git("commit", "-q", "--allow-empty", "-m", "second")
			},
		},
		{name: "a version without a release series in metadata.yaml fails", version: "v0.3.0", fails: "no release series 0.3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, git := gitRepo(t)
			if c.setup != nil {
				c.setup(t, dir, git)
			}
			notes, err := CheckVersion(ctx, dir, c.version)
			if c.fails != "" {
				if err == nil || !strings.Contains(err.Error(), c.fails) {
					t.Fatalf("CheckVersion(%s) = %v, want an error saying %q", c.version, err, c.fails)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckVersion(%s): %v", c.version, err)
			}
			joined := strings.Join(notes, "\n")
			if (c.note == "") != (joined == "") || !strings.Contains(joined, c.note) {
				t.Errorf("notes %q, want %q", joined, c.note)
			}
		})
	}
}

// TestNotes: the release notes list the commits since the previous
// release tag below the version, newest first, and only those.
func TestNotes(t *testing.T) {
	ctx := context.Background()
	dir, git := gitRepo(t)
	git("tag", "v0.1.0")
	git("commit", "-q", "--allow-empty", "-m", "Pools scale from zero")
	git("tag", "v0.2.0-rc.1")
	git("commit", "-q", "--allow-empty", "-m", "The manager image is pinned by digest")
	if prev, err := PreviousTag(ctx, dir, "v0.2.0"); err != nil || prev != "v0.2.0-rc.1" {
		t.Fatalf("PreviousTag(v0.2.0) = %q, %v; want v0.2.0-rc.1 (a pre-release is below its release)", prev, err)
	}
	b, err := Notes(ctx, dir, "v0.1.1", "example.com/manager:v0.1.1@sha256:abc")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"# CAPTF v0.1.1\n", "example.com/manager:v0.1.1@sha256:abc", "Changes since v0.1.0 (2 commits)",
		"- The manager image is pinned by digest (", "- Pools scale from zero ("} {
		if !strings.Contains(s, want) {
			t.Errorf("the notes lack %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "pinned by digest") > strings.Index(s, "scale from zero") {
		t.Errorf("the notes are not newest first:\n%s", s)
	}
	if strings.Contains(s, "- first") {
		t.Errorf("the notes list a commit of v0.1.0:\n%s", s)
	}
	first, err := Notes(ctx, dir, "v0.0.1", "img")
	if err != nil || !strings.Contains(string(first), "the first release") {
		t.Errorf("notes with no earlier tag: %v\n%s", err, first)
	}
}
