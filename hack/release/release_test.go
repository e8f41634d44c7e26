package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// allPlatformsEnv, set by make test-release, has TestRelease build the
// manager image for linux/amd64 and linux/arm64 and the command-line tools
// for this machine's platform and windows/amd64 too. Without it (make test)
// everything is built for this machine's platform only: each other platform
// costs a link of every binary, minutes on a loaded 2-core machine, and the
// names of the other platforms' files are checked by TestPlatformNames.
const allPlatformsEnv = "CAPTF_TEST_RELEASE_ALL_PLATFORMS"

// TestRelease builds a whole release folder as make release does (see
// allPlatformsEnv for the platforms), checks it with Verify, and then
// breaks it one rule at a time to see Verify refuse it.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every release artifact")
	}
	repo, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const version = "v0.1.0"
	dir := filepath.Join(t.TempDir(), ProviderLabel, version)
	here := "linux/" + runtime.GOARCH
	o := Options{
		Repo: repo, Version: version, Dir: dir, ImageName: DefaultImageName,
		ImagePlatforms: []string{here}, BinaryPlatforms: []string{here},
	}
	if os.Getenv(allPlatformsEnv) != "" {
		o.ImagePlatforms = []string{"linux/amd64", "linux/arm64"}
		o.BinaryPlatforms = []string{here, "windows/amd64"}
	}
	t.Logf("image platforms %v, binary platforms %v", o.ImagePlatforms, o.BinaryPlatforms)
	other := o.BinaryPlatforms[len(o.BinaryPlatforms)-1]
	// The folder is built by the command make release runs, in a process of
	// its own: built into this race-instrumented test binary, compressing
	// and hashing the images' layers costs five times the CPU.
	bin := filepath.Join(t.TempDir(), "release")
	if err := tools.Build(context.Background(), "./hack/release", bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "all", "--version", version, "--dir", dir, "--image-name", o.ImageName,
		"--platforms", strings.Join(o.ImagePlatforms, ","), "--binary-platforms", strings.Join(o.BinaryPlatforms, ","))
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release all: %v\n%s", err, out)
	}
	r, err := Verify(dir)
	if err != nil {
		t.Fatalf("Verify refuses the release it was built with: %v", err)
	}
	t.Log(r)

	// What the issue asks of the folder, named.
	want := []string{ComponentsFile, MetadataFile, NotesFile, ChecksumsFile, KrewFile}
	for _, p := range o.BinaryPlatforms {
		want = append(want, LintBinary(p), PluginArchive(p), "sbom/"+SBOMName(LintBinary(p)))
	}
	tmpl, err := TemplateFiles(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tmpl {
		want = append(want, filepath.Base(f))
	}
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the release lacks %s", f)
		}
	}
	for _, f := range []string{"identity.yaml", "identity-libvirt.yaml", "clusterclass-noop.yaml"} {
		if !slices.ContainsFunc(tmpl, func(p string) bool { return filepath.Base(p) == f }) {
			t.Errorf("the release's templates leave out %s", f)
		}
	}
	if !strings.HasPrefix(r.ManagerImage, DefaultImageName+":"+version+"@sha256:") {
		t.Errorf("manager image %s, want %s:%s pinned by digest", r.ManagerImage, DefaultImageName, version)
	}
	images := []string{"noop-machine:v0.1.0-opentofu (" + here + ")", "noop-machine:v0.1.0-terraform (" + here + ")"}
	for _, p := range o.ImagePlatforms {
		images = append(images, "manager:v0.1.0 ("+p+")")
	}
	for _, img := range images {
		if !slices.Contains(r.Images, img) {
			t.Errorf("images %v lack %s", r.Images, img)
		}
	}
	// The manager's SBOM lists what the manager is made of.
	sbom, err := os.ReadFile(filepath.Join(dir, SBOMDir, "manager-v0.1.0-linux-"+runtime.GOARCH+".cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name       string
			Components []struct{ Name, Version string }
		}
	}
	if err := json.Unmarshal(sbom, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range doc.Components {
		names = append(names, c.Name)
		if c.Name == "/manager" && !slices.ContainsFunc(c.Components, func(m struct{ Name, Version string }) bool {
			return m.Name == "sigs.k8s.io/controller-runtime" && m.Version != ""
		}) {
			t.Errorf("the SBOM of /manager does not list controller-runtime with its version")
		}
	}
	if doc.BOMFormat != "CycloneDX" || !slices.Equal(names, []string{"/manager", "/runner"}) {
		t.Errorf("manager SBOM: format %q, binaries %v; want CycloneDX with /manager and /runner", doc.BOMFormat, names)
	}

	// The Installation page's table of a release folder is this folder.
	if problems := installationPageProblems(t, repo, dir); len(problems) > 0 {
		for _, p := range problems {
			t.Error(p)
		}
	}

	// Each rule of Verify, broken once on the built folder, then mended.
	file := func(name string) string { return filepath.Join(dir, filepath.FromSlash(name)) }
	read := func(name string) []byte {
		b, err := os.ReadFile(file(name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(file(name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resum := func() {
		if err := WriteChecksums(dir); err != nil {
			t.Fatal(err)
		}
	}
	components, template := read(ComponentsFile), read("cluster-template.yaml")
	otherDigest := "sha256:" + strings.Repeat("0", 64)
	digest := r.ManagerImage[strings.LastIndex(r.ManagerImage, "@")+1:]
	sbomFile := "sbom/" + SBOMName(LintBinary(other))
	sbomBytes := read(sbomFile)
	for _, c := range []struct {
		name         string
		break_, mend func()
		says         string
	}{
		{
			name:   "a file that differs from its checksum",
			break_: func() { write("cluster-template.yaml", append(bytes.Clone(template), '#')) },
			mend:   func() { write("cluster-template.yaml", template) },
			says:   "cluster-template.yaml: SHA-256",
		},
		{
			name: "components that run another image than the release's",
			break_: func() {
				write(ComponentsFile, bytes.ReplaceAll(components, []byte(digest), []byte(otherDigest)))
				resum()
			},
			mend: func() { write(ComponentsFile, components); resum() },
			says: "want the release's image",
		},
		{
			name:   "a file that is not part of a release",
			break_: func() { write("extra.yaml", []byte("x")); resum() },
			mend:   func() { os.Remove(file("extra.yaml")); resum() },
			says:   "extra.yaml is not part of a release",
		},
		{
			name:   "a binary without its SBOM",
			break_: func() { os.Rename(file(sbomFile), file("sbom.bak")); resum() },
			mend:   func() { os.Rename(file("sbom.bak"), file(sbomFile)); resum() },
			says:   "want one per binary",
		},
		{
			name: "an SBOM naming another artifact's hash",
			break_: func() {
				sum, _ := fileSHA256(file(LintBinary(other)))
				write(sbomFile, bytes.ReplaceAll(sbomBytes, []byte(sum), []byte(strings.Repeat("1", 64))))
				resum()
			},
			mend: func() { write(sbomFile, sbomBytes); resum() },
			says: "with hash 1111",
		},
		{
			name:   "a template missing",
			break_: func() { os.Remove(file("cluster-template.yaml")); resum() },
			mend:   func() { write("cluster-template.yaml", template); resum() },
			says:   "cluster-template.yaml is missing",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.break_()
			_, err := Verify(dir)
			c.mend()
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Verify = %v, want an error saying %q", err, c.says)
			}
			if _, err := Verify(dir); err != nil {
				t.Fatalf("the mended folder fails: %v", err)
			}
		})
	}
}

// installationPageProblems compares the table of the Installation page's
// "Installing without internet access" section with a release folder: each
// name the table gives (<…> and * read as wildcards, a trailing / as a
// folder) must match an entry of the folder, and each entry at the
// folder's top must be matched by one.
func installationPageProblems(t *testing.T, repo, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "docs", "book", "operator-guide", "installation.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Installing without internet access")
	if !ok {
		return []string{"the Installation page has no section Installing without internet access"}
	}
	section, _, _ = strings.Cut(section, "\n1. ")
	var patterns []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, f := range strings.Split(first, ",") {
			name := strings.Trim(strings.TrimSpace(f), "`")
			patterns = append(patterns, regexp.MustCompile(`<[^>]+>`).ReplaceAllString(name, "*"))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	covered := map[string]bool{}
	for _, p := range patterns {
		folder := strings.HasSuffix(p, "/")
		matches, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "/"))))
		if err != nil || len(matches) == 0 {
			problems = append(problems, fmt.Sprintf("the Installation page names %s; the release folder has nothing by that name", p))
			continue
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err != nil || st.IsDir() != folder {
				problems = append(problems, fmt.Sprintf("the Installation page names %s, but %s is not a %s", p, m, map[bool]string{true: "folder", false: "file"}[folder]))
			}
			rel, _ := filepath.Rel(dir, m)
			covered[strings.Split(filepath.ToSlash(rel), "/")[0]] = true
		}
	}
	for _, e := range entries {
		if !covered[e.Name()] {
			problems = append(problems, fmt.Sprintf("the release folder holds %s, which the Installation page's table does not name", e.Name()))
		}
	}
	return problems
}

// TestPlatformNames checks the file names a release gives each platform's
// artifacts, the ones make test's TestRelease does not build among them
// (Installation page, "Installing without internet access").
func TestPlatformNames(t *testing.T) {
	for _, c := range []struct {
		platform, lint, plugin, lintSBOM, pluginSBOM string
	}{
		{"linux/amd64", "tfcapi-lint-linux-amd64", "kubectl-captf_linux_amd64.tar.gz", "tfcapi-lint-linux-amd64.cdx.json", "kubectl-captf_linux_amd64.cdx.json"},
		{"linux/arm64", "tfcapi-lint-linux-arm64", "kubectl-captf_linux_arm64.tar.gz", "tfcapi-lint-linux-arm64.cdx.json", "kubectl-captf_linux_arm64.cdx.json"},
		{"darwin/arm64", "tfcapi-lint-darwin-arm64", "kubectl-captf_darwin_arm64.tar.gz", "tfcapi-lint-darwin-arm64.cdx.json", "kubectl-captf_darwin_arm64.cdx.json"},
		{"windows/amd64", "tfcapi-lint-windows-amd64.exe", "kubectl-captf_windows_amd64.tar.gz", "tfcapi-lint-windows-amd64.exe.cdx.json", "kubectl-captf_windows_amd64.cdx.json"},
	} {
		if got := LintBinary(c.platform); got != c.lint {
			t.Errorf("LintBinary(%s) = %s, want %s", c.platform, got, c.lint)
		}
		if got := PluginArchive(c.platform); got != c.plugin {
			t.Errorf("PluginArchive(%s) = %s, want %s", c.platform, got, c.plugin)
		}
		if got := SBOMName(LintBinary(c.platform)); got != c.lintSBOM {
			t.Errorf("SBOMName(%s) = %s, want %s", c.lint, got, c.lintSBOM)
		}
		if got := SBOMName(PluginArchive(c.platform)); got != c.pluginSBOM {
			t.Errorf("SBOMName(%s) = %s, want %s", c.plugin, got, c.pluginSBOM)
		}
	}
	if !slices.Contains(DefaultBinaryPlatforms, "windows/amd64") || !slices.Contains(DefaultImagePlatforms, "linux/arm64") {
		t.Errorf("a release's platforms are %v (images) and %v (binaries); want linux/arm64 images and windows/amd64 binaries among them", DefaultImagePlatforms, DefaultBinaryPlatforms)
	}
}
