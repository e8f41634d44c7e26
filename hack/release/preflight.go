package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

// Preflight checks that the checkout at repo may be released as version:
// CheckVersion, then make verify (generated files in step, formatting, vet,
// staticcheck) when verify is set.
func Preflight(ctx context.Context, repo, version string, verify bool) error {
	notes, err := CheckVersion(ctx, repo, version)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Println("release-preflight:", n)
	}
	if verify {
		cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "verify")
		cmd.Dir = repo
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("make verify: %w", err)
		}
		if dirty, err := git(ctx, repo, "status", "--porcelain"); err != nil || dirty != "" {
			return fmt.Errorf("make verify changed the tree (a generated file was stale):\n%s%v", dirty, errOrEmpty(err))
		}
	}
	fmt.Printf("release-preflight: %s may be released from %s\n", version, repo)
	return nil
}

func errOrEmpty(err error) any {
	if err == nil {
		return ""
	}
	return err
}

// CheckVersion checks what a release of version needs from the checkout,
// without building anything:
//   - version is a semver tag vMAJOR.MINOR.PATCH (a pre-release suffix is
//     allowed);
//   - the tree is clean: no change, staged or not, and no untracked file;
//   - a tag named version, when one exists, is on HEAD, and no other tag
//     on HEAD names another version;
//   - version is above every other semver tag of the repository;
//   - metadata.yaml maps version's MAJOR.MINOR to a contract (clusterctl
//     refuses a version it has no release series for).
//
// It returns notes for what is allowed but worth saying (an untagged
// HEAD).
func CheckVersion(ctx context.Context, repo, version string) ([]string, error) {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return nil, fmt.Errorf("version %q is not a semver tag vMAJOR.MINOR.PATCH[-PRERELEASE]", version)
	}
	if dirty, err := git(ctx, repo, "status", "--porcelain"); err != nil {
		return nil, err
	} else if dirty != "" {
		return nil, fmt.Errorf("the tree has changes; a release is built from a clean checkout:\n%s", dirty)
	}
	var notes []string
	if _, err := git(ctx, repo, "rev-parse", "-q", "--verify", "refs/tags/"+version); err == nil {
		at, err := git(ctx, repo, "rev-list", "-n", "1", version)
		if err != nil {
			return nil, err
		}
		head, err := git(ctx, repo, "rev-parse", "HEAD")
		if err != nil {
			return nil, err
		}
		if at != head {
			return nil, fmt.Errorf("tag %s is on %s, not on HEAD %s", version, short(at), short(head))
		}
	} else {
		notes = append(notes, fmt.Sprintf("HEAD has no tag %s; tag it (git tag -a %s) before publishing the folder", version, version))
	}
	onHead, err := git(ctx, repo, "tag", "--points-at", "HEAD")
	if err != nil {
		return nil, err
	}
	for _, t := range strings.Fields(onHead) {
		if semver.IsValid(t) && t != version {
			return nil, fmt.Errorf("HEAD is tagged %s, not %s", t, version)
		}
	}
	all, err := git(ctx, repo, "tag", "--list", "v*")
	if err != nil {
		return nil, err
	}
	for _, t := range strings.Fields(all) {
		if semver.IsValid(t) && t != version && semver.Compare(t, version) > 0 {
			return nil, fmt.Errorf("tag %s is above %s: a release must be newer than every tag", t, version)
		}
	}
	if err := metadataCovers(filepath.Join(repo, "config", MetadataFile), version); err != nil {
		return nil, err
	}
	return notes, nil
}

// metadataCovers checks that clusterctl's metadata file has a release
// series for version's MAJOR.MINOR.
func metadataCovers(path, version string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var md struct {
		ReleaseSeries []struct {
			Major, Minor int
			Contract     string
		} `json:"releaseSeries"`
	}
	if err := yaml.Unmarshal(b, &md); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(semver.MajorMinor(version), "v%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("version %s: %w", version, err)
	}
	for _, r := range md.ReleaseSeries {
		if r.Major == major && r.Minor == minor && r.Contract != "" {
			return nil
		}
	}
	return fmt.Errorf("%s has no release series %d.%d: clusterctl would refuse %s", filepath.Base(path), major, minor, version)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
