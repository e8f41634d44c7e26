package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
)

// An SBOM's subject: one release binary, or one platform's image.
type subject struct {
	// sbom is the SBOM's file name under sbom/.
	sbom string
	// component is the SBOM's metadata component (the artifact itself).
	component cdx.Component
	// binaries are the Go binaries it holds, by their path in it.
	binaries map[string][]byte
}

// WriteSBOMs writes a CycloneDX SBOM for every binary, plugin archive and
// image of the folder into sbom/, replacing what was there. Each lists the
// Go modules of every Go binary the artifact holds, read from the build
// information the Go linker embeds, and names the artifact by its SHA-256
// (a file) or its digest (an image).
func WriteSBOMs(dir string) error {
	subjects, err := sbomSubjects(dir)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, SBOMDir)
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, s := range subjects {
		bom, err := s.bom()
		if err != nil {
			return fmt.Errorf("SBOM %s: %w", s.sbom, err)
		}
		var b bytes.Buffer
		if err := cdx.NewBOMEncoder(&b, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, s.sbom), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sbomSubjects finds what needs an SBOM: tfcapi-lint binaries and
// kubectl-captf archives at the folder's top, and every image of every
// layout under images/.
func sbomSubjects(dir string) ([]subject, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []subject
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.Type().IsRegular() && strings.HasPrefix(name, "tfcapi-lint-"):
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			out = append(out, fileSubject(name, b, map[string][]byte{name: b}))
		case e.Type().IsRegular() && strings.HasPrefix(name, "kubectl-captf_") && strings.HasSuffix(name, ".tar.gz"):
			archive, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			bins, err := archiveFiles(archive)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, fileSubject(name, archive, bins))
		}
	}
	images, err := imageSubjects(filepath.Join(dir, ImagesDir))
	if err != nil {
		return nil, err
	}
	return append(out, images...), nil
}

// SBOMName is the SBOM file of a release binary or archive.
func SBOMName(artifact string) string {
	return strings.TrimSuffix(artifact, ".tar.gz") + ".cdx.json"
}

// ImageSBOMName is the SBOM file of one platform's image of a layout.
func ImageSBOMName(repo, tag string, p v1.Platform) string {
	return repo + "-" + tag + "-" + p.OS + "-" + p.Architecture + ".cdx.json"
}

func fileSubject(name string, b []byte, bins map[string][]byte) subject {
	sum := sha256.Sum256(b)
	return subject{
		sbom: SBOMName(name),
		component: cdx.Component{
			BOMRef: "file:" + name,
			Type:   cdx.ComponentTypeApplication,
			Name:   name,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		},
		binaries: bins,
	}
}

// archiveFiles returns the regular files of a gzipped tar.
func archiveFiles(archive []byte) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out["/"+strings.TrimPrefix(h.Name, "/")] = b
	}
}

// imageSubjects lists every platform image of every layout in dir.
func imageSubjects(dir string) ([]subject, error) {
	repos, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []subject
	for _, r := range repos {
		imgs, err := layoutImages(filepath.Join(dir, r.Name()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name(), err)
		}
		for _, li := range imgs {
			bins, err := imageGoBinaries(li.image)
			if err != nil {
				return nil, fmt.Errorf("%s:%s: %w", r.Name(), li.tag, err)
			}
			p := li.platform
			out = append(out, subject{
				sbom: ImageSBOMName(r.Name(), li.tag, p),
				component: cdx.Component{
					BOMRef:     "oci:" + r.Name() + "@" + li.digest.String(),
					Type:       cdx.ComponentTypeContainer,
					Name:       r.Name(),
					Version:    li.tag,
					PackageURL: fmt.Sprintf("pkg:oci/%s@%s?arch=%s&tag=%s", r.Name(), strings.ReplaceAll(li.digest.String(), ":", "%3A"), p.Architecture, li.tag),
					Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: li.digest.Hex}},
				},
				binaries: bins,
			})
		}
	}
	return out, nil
}

// layoutImage is one platform image of a layout, under its tag.
type layoutImage struct {
	tag      string
	platform v1.Platform
	digest   v1.Hash
	image    v1.Image
}

// layoutImages lists the images of an OCI layout: each tag's image, or
// each platform image of a tag's index.
func layoutImages(dir string) ([]layoutImage, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []layoutImage
	for _, d := range m.Manifests {
		tag := d.Annotations[imagebuild.RefNameAnnotation]
		if d.MediaType.IsIndex() {
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			cm, err := child.IndexManifest()
			if err != nil {
				return nil, err
			}
			for _, cd := range cm.Manifests {
				img, err := child.Image(cd.Digest)
				if err != nil {
					return nil, err
				}
				out = append(out, layoutImage{tag: tag, platform: *cd.Platform, digest: cd.Digest, image: img})
			}
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		out = append(out, layoutImage{tag: tag, platform: *cf.Platform(), digest: d.Digest, image: img})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].tag+out[i].platform.String() < out[j].tag+out[j].platform.String()
	})
	return out, nil
}

// imageGoBinaries returns the ELF files of an image's layers (the last
// layer's copy of a path wins); other files are skipped unread.
func imageGoBinaries(img v1.Image) (map[string][]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		err = elfFiles(rc, out)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// elfFiles adds the regular files of a tar stream that start with the ELF
// magic number to out.
func elfFiles(r io.Reader, out map[string][]byte) error {
	tr := tar.NewReader(r)
	magic := make([]byte, 4)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg || h.Size < int64(len(magic)) {
			continue
		}
		if _, err := io.ReadFull(tr, magic); err != nil {
			return err
		}
		if string(magic) != "\x7fELF" {
			continue
		}
		rest, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		out["/"+strings.TrimPrefix(h.Name, "/")] = append(append([]byte{}, magic...), rest...)
	}
}

// bom assembles the subject's SBOM: the artifact as metadata component,
// one application component per Go binary with its modules inside, and
// the dependency graph artifact → binaries → modules.
func (s subject) bom() (*cdx.BOM, error) {
	bom := cdx.NewBOM()
	sum := sha256.Sum256([]byte(s.component.BOMRef))
	bom.SerialNumber = "urn:uuid:" + uuidFrom(sum[:])
	c := s.component
	bom.Metadata = &cdx.Metadata{
		Component: &c,
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "captf-release", Group: module,
		}}},
	}
	var comps []cdx.Component
	var deps []cdx.Dependency
	var top []string
	paths := make([]string, 0, len(s.binaries))
	for p := range s.binaries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		b := s.binaries[path]
		bi, err := buildinfo.Read(bytes.NewReader(b))
		if err != nil {
			continue // an ELF file that is not a Go binary
		}
		fileSum := sha256.Sum256(b)
		ref := "binary:" + path
		top = append(top, ref)
		app := cdx.Component{
			BOMRef:     ref,
			Type:       cdx.ComponentTypeApplication,
			Name:       path,
			Version:    bi.Main.Version,
			PackageURL: purl(bi.Main.Path, bi.Main.Version),
			Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(fileSum[:])}},
			Properties: &[]cdx.Property{{Name: "go:version", Value: bi.GoVersion}, {Name: "go:main", Value: bi.Main.Path}},
		}
		var mods []cdx.Component
		var modRefs []string
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			mref := ref + "#" + purl(d.Path, d.Version)
			mods = append(mods, cdx.Component{BOMRef: mref, Type: cdx.ComponentTypeLibrary, Name: d.Path, Version: d.Version, PackageURL: purl(d.Path, d.Version)})
			modRefs = append(modRefs, mref)
		}
		if len(mods) > 0 {
			app.Components = &mods
		}
		comps = append(comps, app)
		deps = append(deps, cdx.Dependency{Ref: ref, Dependencies: &modRefs})
	}
	if len(comps) == 0 {
		return nil, errors.New("it holds no Go binary")
	}
	bom.Components = &comps
	deps = append([]cdx.Dependency{{Ref: c.BOMRef, Dependencies: &top}}, deps...)
	bom.Dependencies = &deps
	return bom, nil
}

// purl is a Go module's package URL.
func purl(path, version string) string {
	if version == "" || version == "(devel)" {
		return "pkg:golang/" + path
	}
	return "pkg:golang/" + path + "@" + version
}

// uuidFrom formats 16 bytes of a hash as a name-based (version 5 style)
// UUID, so the same artifact always gets the same serial number.
func uuidFrom(h []byte) string {
	u := make([]byte, 16)
	copy(u, h)
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}
