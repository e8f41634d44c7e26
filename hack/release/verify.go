package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// FixedFiles are the manifests every release folder holds by these names.
var FixedFiles = []string{
	ComponentsFile, MetadataFile, NotesFile, ChecksumsFile, KrewFile,
	"cluster-template.yaml", "cluster-template-libvirt.yaml", "cluster-template-clusterclass.yaml",
	"identity.yaml", "identity-libvirt.yaml",
}

// Report is what Verify found.
type Report struct {
	Version      string
	ManagerImage string
	Files        int
	Images       []string
	Platforms    []string
	SBOMs        int
}

func (r *Report) String() string {
	return fmt.Sprintf("release %s: %d files, checksums match; manager image %s; images %s; binaries for %s; %d SBOMs; clusterctl reads it\n",
		r.Version, r.Files, r.ManagerImage, strings.Join(r.Images, ", "), strings.Join(r.Platforms, ", "), r.SBOMs)
}

// Verify checks a release folder (make verify-local-repository):
//   - it is laid out as clusterctl's local repositories are
//     (.../infrastructure-terraform/<version>/) and holds FixedFiles, at
//     least one clusterclass-*.yaml, the manager and no-op images, the
//     binaries, and nothing else;
//   - checksums.txt lists every other file, each with its SHA-256, and
//     every image blob's name is its SHA-256;
//   - infrastructure-components.yaml runs the manager image of
//     images/manager, pinned by that image index's digest (and
//     CAPTF_MANAGER_IMAGE, when set, is the same);
//   - the no-op images of each role are there on both runtimes;
//   - tfcapi-lint and kubectl-captf cover the same platforms, each archive
//     holds the plugin's binary alone, and the krew manifest names each
//     archive with its checksum;
//   - each binary, archive and platform image has one CycloneDX SBOM
//     naming it by its hash, listing its Go binaries' modules;
//   - metadata.yaml has the version's release series, and the pinned
//     clusterctl renders the components from the folder as a local
//     repository.
func Verify(dir string) (*Report, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r := &Report{Version: filepath.Base(dir)}
	if filepath.Base(filepath.Dir(dir)) != ProviderLabel {
		return nil, fmt.Errorf("%s is not laid out as a clusterctl local repository: want .../%s/<version>", dir, ProviderLabel)
	}
	if err := metadataCovers(filepath.Join(dir, MetadataFile), r.Version); err != nil {
		return nil, err
	}
	all, err := files(dir)
	if err != nil {
		return nil, err
	}
	r.Files = len(all)
	sums, err := checkChecksums(dir, all)
	if err != nil {
		return nil, err
	}
	expected := map[string]bool{}
	for _, f := range FixedFiles {
		expected[f] = true
	}
	for _, f := range all {
		if strings.HasPrefix(f, "clusterclass-") && strings.HasSuffix(f, ".yaml") && !strings.Contains(f, "/") {
			expected[f] = true
		}
	}
	if !slices.ContainsFunc(all, func(f string) bool { return strings.HasPrefix(f, "clusterclass-") }) {
		return nil, errors.New("the folder holds no clusterclass-*.yaml")
	}

	// Images.
	if r.ManagerImage, err = checkManagerImage(dir, r.Version); err != nil {
		return nil, err
	}
	wantImages := map[string][]string{ManagerRepo: {r.Version}}
	for _, role := range contract.Roles() {
		wantImages["noop-"+string(role)] = []string{r.Version + "-opentofu", r.Version + "-terraform"}
	}
	var wantSBOMs []string
	for repo, tags := range wantImages {
		imgs, err := layoutImages(filepath.Join(dir, ImagesDir, repo))
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", repo, err)
		}
		var got []string
		for _, li := range imgs {
			if !slices.Contains(got, li.tag) {
				got = append(got, li.tag)
			}
			wantSBOMs = append(wantSBOMs, ImageSBOMName(repo, li.tag, li.platform))
			r.Images = append(r.Images, fmt.Sprintf("%s:%s (%s)", repo, li.tag, li.platform.String()))
		}
		sort.Strings(got)
		sort.Strings(tags)
		if !slices.Equal(got, tags) {
			return nil, fmt.Errorf("image %s holds tags %v, want %v", repo, got, tags)
		}
	}
	sort.Strings(r.Images)
	for _, f := range all {
		repo, _, ok := strings.Cut(strings.TrimPrefix(f, ImagesDir+"/"), "/")
		if strings.HasPrefix(f, ImagesDir+"/") && ok && wantImages[repo] != nil {
			expected[f] = true
		}
	}

	// Binaries and the plugin.
	var lint, plugin []string
	for _, f := range all {
		if p, ok := platformOf(f, "tfcapi-lint-", "-"); ok {
			lint = append(lint, p)
			expected[f] = true
			wantSBOMs = append(wantSBOMs, SBOMName(f))
		}
		if p, ok := platformOf(strings.TrimSuffix(f, ".tar.gz"), "kubectl-captf_", "_"); ok && strings.HasSuffix(f, ".tar.gz") {
			plugin = append(plugin, p)
			expected[f] = true
			wantSBOMs = append(wantSBOMs, SBOMName(f))
			if err := checkArchive(filepath.Join(dir, f), p); err != nil {
				return nil, err
			}
		}
	}
	if len(lint) == 0 || !slices.Equal(lint, plugin) {
		return nil, fmt.Errorf("tfcapi-lint is built for %v and kubectl-captf for %v: want the same, non-empty", lint, plugin)
	}
	r.Platforms = lint
	if err := checkKrew(filepath.Join(dir, KrewFile), r.Version, plugin, sums); err != nil {
		return nil, err
	}

	// SBOMs.
	sort.Strings(wantSBOMs)
	var gotSBOMs []string
	for _, f := range all {
		if name, ok := strings.CutPrefix(f, SBOMDir+"/"); ok {
			gotSBOMs = append(gotSBOMs, name)
			expected[f] = true
		}
	}
	if !slices.Equal(gotSBOMs, wantSBOMs) {
		return nil, fmt.Errorf("SBOMs %v, want one per binary, archive and platform image: %v", gotSBOMs, wantSBOMs)
	}
	if err := checkSBOMs(dir, sums); err != nil {
		return nil, err
	}
	r.SBOMs = len(gotSBOMs)

	for _, f := range all {
		if !expected[f] {
			return nil, fmt.Errorf("%s is not part of a release", f)
		}
	}
	for f := range expected {
		if !slices.Contains(all, f) {
			return nil, fmt.Errorf("%s is missing", f)
		}
	}
	notes, err := os.ReadFile(filepath.Join(dir, NotesFile))
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(notes, []byte("# CAPTF "+r.Version+"\n")) || !bytes.Contains(notes, []byte(r.ManagerImage)) {
		return nil, fmt.Errorf("%s does not name the version and the manager image", NotesFile)
	}
	if err := clusterctlRenders(dir, r.Version, r.ManagerImage); err != nil {
		return nil, err
	}
	return r, nil
}

// platformOf parses <prefix><os><sep><arch>[.exe] into os/arch.
func platformOf(name, prefix, sep string) (string, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || strings.Contains(rest, "/") {
		return "", false
	}
	rest = strings.TrimSuffix(rest, ".exe")
	goos, arch, ok := strings.Cut(rest, sep)
	if !ok || goos == "" || arch == "" || strings.Contains(arch, sep) {
		return "", false
	}
	return goos + "/" + arch, true
}

// checkChecksums checks checksums.txt against the files and every image
// blob's name against its content.
func checkChecksums(dir string, all []string) (map[string]string, error) {
	sums, err := readChecksums(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range all {
		if f == ChecksumsFile {
			continue
		}
		want, ok := sums[f]
		if !ok {
			return nil, fmt.Errorf("%s has no line for %s", ChecksumsFile, f)
		}
		got, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, fmt.Errorf("%s: SHA-256 %s, %s says %s", f, got, ChecksumsFile, want)
		}
		if i := strings.Index(f, "/blobs/sha256/"); strings.HasPrefix(f, ImagesDir+"/") && i > 0 && f[i+len("/blobs/sha256/"):] != got {
			return nil, fmt.Errorf("%s: the blob's content has SHA-256 %s", f, got)
		}
	}
	for f := range sums {
		if !slices.Contains(all, f) {
			return nil, fmt.Errorf("%s names %s, which the folder lacks", ChecksumsFile, f)
		}
	}
	return sums, nil
}

// checkManagerImage checks that the components run images/manager's index,
// by digest, and returns that reference.
func checkManagerImage(dir, version string) (string, error) {
	digest, err := layoutDigest(filepath.Join(dir, ImagesDir, ManagerRepo), version)
	if err != nil {
		return "", fmt.Errorf("the manager image: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ComponentsFile))
	if err != nil {
		return "", err
	}
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var dep *appsv1.Deployment
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("%s: %w", ComponentsFile, err)
		}
		if u.GetKind() == "Deployment" && u.GetName() == "captf-controller-manager" {
			dep = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
				return "", err
			}
		}
	}
	if dep == nil {
		return "", fmt.Errorf("%s has no Deployment captf-controller-manager", ComponentsFile)
	}
	i := slices.IndexFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "manager" })
	if i < 0 {
		return "", fmt.Errorf("the manager Deployment has no container manager")
	}
	c := dep.Spec.Template.Spec.Containers[i]
	ref := c.Image
	if !strings.HasSuffix(ref, ":"+version+"@"+digest) {
		return "", fmt.Errorf("the manager container runs %s, want the release's image :%s@%s", ref, version, digest)
	}
	for _, e := range c.Env {
		if e.Name == "CAPTF_MANAGER_IMAGE" && e.Value != ref {
			return "", fmt.Errorf("CAPTF_MANAGER_IMAGE is %s, the container runs %s", e.Value, ref)
		}
	}
	return ref, nil
}

// checkArchive checks that a plugin archive holds the plugin's binary
// alone.
func checkArchive(path, platform string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		names = append(names, h.Name)
	}
	goos, _, _ := strings.Cut(platform, "/")
	if want := "kubectl-captf" + exe(goos); !slices.Equal(names, []string{want}) {
		return fmt.Errorf("%s holds %v, want %s alone", filepath.Base(path), names, want)
	}
	return nil
}

// checkKrew checks the krew manifest's version and platforms.
func checkKrew(path, version string, platforms []string, sums map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m struct {
		Kind string
		Spec struct {
			Version   string
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				}
				URI    string
				SHA256 string `json:"sha256"`
				Bin    string
			}
		}
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s: %w", KrewFile, err)
	}
	if m.Kind != "Plugin" || m.Spec.Version != version {
		return fmt.Errorf("%s: kind %q version %q, want a Plugin of %s", KrewFile, m.Kind, m.Spec.Version, version)
	}
	var got []string
	for _, p := range m.Spec.Platforms {
		plat := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		got = append(got, plat)
		archive := PluginArchive(plat)
		if !strings.HasSuffix(p.URI, "/"+version+"/"+archive) || p.SHA256 != sums[archive] {
			return fmt.Errorf("%s: %s points at %s with SHA-256 %s; the archive is %s with %s", KrewFile, plat, p.URI, p.SHA256, archive, sums[archive])
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, platforms) {
		return fmt.Errorf("%s names %v, the archives are for %v", KrewFile, got, platforms)
	}
	return nil
}

// checkSBOMs checks that each SBOM names its artifact by the artifact's
// hash and lists at least one Go binary with its modules.
func checkSBOMs(dir string, sums map[string]string) error {
	entries, err := os.ReadDir(filepath.Join(dir, SBOMDir))
	if err != nil {
		return err
	}
	imgs := map[string]string{} // SBOM name → image digest hex
	repos, err := os.ReadDir(filepath.Join(dir, ImagesDir))
	if err != nil {
		return err
	}
	for _, r := range repos {
		lis, err := layoutImages(filepath.Join(dir, ImagesDir, r.Name()))
		if err != nil {
			return err
		}
		for _, li := range lis {
			imgs[ImageSBOMName(r.Name(), li.tag, li.platform)] = li.digest.Hex
		}
	}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, SBOMDir, e.Name()))
		if err != nil {
			return err
		}
		var bom cdx.BOM
		err = cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom)
		f.Close()
		if err != nil {
			return fmt.Errorf("SBOM %s: %w", e.Name(), err)
		}
		if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Hashes == nil || len(*bom.Metadata.Component.Hashes) != 1 {
			return fmt.Errorf("SBOM %s names no artifact by its hash", e.Name())
		}
		got := (*bom.Metadata.Component.Hashes)[0].Value
		want, ok := imgs[e.Name()]
		if !ok {
			want = sums[bom.Metadata.Component.Name]
		}
		if got != want || want == "" {
			return fmt.Errorf("SBOM %s names %s with hash %s, want %s", e.Name(), bom.Metadata.Component.Name, got, want)
		}
		if bom.Components == nil || len(*bom.Components) == 0 || (*bom.Components)[0].Components == nil || len(*(*bom.Components)[0].Components) == 0 {
			return fmt.Errorf("SBOM %s lists no Go binary with its modules", e.Name())
		}
	}
	return nil
}

// clusterctlRenders has the pinned clusterctl read the folder as the local
// repository of provider terraform and render its components, which must
// keep the pinned manager image.
func clusterctlRenders(dir, version, image string) error {
	cc, err := tools.Path("clusterctl")
	if err != nil {
		return err
	}
	home, err := os.MkdirTemp("", "captf-release-clusterctl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	conf := filepath.Join(home, "clusterctl.yaml")
	if err := os.WriteFile(conf, []byte("providers:\n- name: terraform\n  type: InfrastructureProvider\n  url: "+
		filepath.Join(dir, ComponentsFile)+"\n"), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(cc, "generate", "provider", "--infrastructure", "terraform:"+version, "--config", conf)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("clusterctl generate provider --infrastructure terraform:%s: %w: %s", version, err, stderr.String())
	}
	if !bytes.Contains(out, []byte("image: "+image)) {
		return fmt.Errorf("clusterctl's rendering of the components lost the manager image %s", image)
	}
	return nil
}
