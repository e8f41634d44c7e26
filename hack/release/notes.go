package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// PreviousTag is the highest semver tag below version among the tags that
// are ancestors of HEAD ("" when there is none).
func PreviousTag(ctx context.Context, repo, version string) (string, error) {
	out, err := git(ctx, repo, "tag", "--merged", "HEAD", "--list", "v*")
	if err != nil {
		return "", err
	}
	var tags []string
	for _, t := range strings.Fields(out) {
		if semver.IsValid(t) && semver.Compare(t, version) < 0 {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 {
		return "", nil
	}
	sort.Slice(tags, func(i, j int) bool { return semver.Compare(tags[i], tags[j]) < 0 })
	return tags[len(tags)-1], nil
}

// Notes renders the release notes: how to install this version, the
// manager image by digest, and the commits since the previous tag (every
// commit of HEAD when there is none), newest first.
func Notes(ctx context.Context, repo, version, image string) ([]byte, error) {
	prev, err := PreviousTag(ctx, repo, version)
	if err != nil {
		return nil, err
	}
	rng := "HEAD"
	if prev != "" {
		rng = prev + "..HEAD"
	}
	log, err := git(ctx, repo, "log", "--no-merges", "--format=%h %s", rng)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# CAPTF %s\n\n", version)
	fmt.Fprintf(&b, "Install with `clusterctl init --infrastructure terraform:%s` (the Installation page of the book covers air-gapped installs from this folder).\n\n", version)
	fmt.Fprintf(&b, "Manager image: `%s`\n\n", image)
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if log == "" {
		lines = nil
	}
	if prev != "" {
		fmt.Fprintf(&b, "## Changes since %s (%d commits)\n\n", prev, len(lines))
	} else {
		fmt.Fprintf(&b, "## Changes (%d commits, the first release)\n\n", len(lines))
	}
	for _, l := range lines {
		hash, subject, _ := strings.Cut(l, " ")
		fmt.Fprintf(&b, "- %s (%s)\n", subject, hash)
	}
	return b.Bytes(), nil
}

func notes(ctx context.Context, o Options) error {
	ref, err := ManagerImageRef(o)
	if err != nil {
		return err
	}
	b, err := Notes(ctx, o.Repo, o.Version, ref)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.Dir, NotesFile), b, 0o644)
}
