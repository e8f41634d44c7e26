package managerimage

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
)

// TestParsePlatforms: make docker-buildx takes PLATFORMS as docker buildx
// --platform does; the manager runs on linux only.
func TestParsePlatforms(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  []string
		inErr string
	}{
		{in: "linux/amd64,linux/arm64", want: []string{"amd64", "arm64"}},
		{in: " linux/arm64 , linux/s390x,", want: []string{"arm64", "s390x"}},
		{in: "linux/amd64", want: []string{"amd64"}},
		{in: "darwin/arm64", inErr: "want linux/<arch>"},
		{in: "linux/arm/v7", inErr: "variants are not supported"},
		{in: "linux/sparc", inErr: `architecture "sparc"`},
		{in: "linux/amd64,linux/amd64", inErr: "listed twice"},
		{in: ",", inErr: "no platform"},
	} {
		got, err := ParsePlatforms(c.in)
		if c.inErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.inErr) {
				t.Errorf("%q: error %v, want one containing %q", c.in, err, c.inErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

// TestIndex assembles the manager image of two architectures into one
// index, pushes it and writes it to an OCI layout, and checks what a
// container runtime does with it: the index lists each platform, and a
// pull for linux/arm64 gets the arm64 image.
func TestIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var images []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		bins := Binaries{Manager: filepath.Join(dir, arch+"-manager"), Runner: filepath.Join(dir, arch+"-runner")}
		for _, f := range []string{bins.Manager, bins.Runner} {
			if err := os.WriteFile(f, []byte("binary for "+arch), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		img, err := Image(bins, Options{Arch: arch, Version: "v0.1.0"})
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}
	idx, err := Index(images...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Index(images[0], images[0]); err == nil || !strings.Contains(err.Error(), "two images for platform linux/amd64") {
		t.Errorf("two images of one platform: %v", err)
	}
	if _, err := Index(); err == nil {
		t.Errorf("an empty index was built")
	}

	check := func(t *testing.T, idx v1.ImageIndex) {
		t.Helper()
		mt, err := idx.MediaType()
		if err != nil || mt != types.OCIImageIndex {
			t.Errorf("index media type %s %v", mt, err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var platforms []string
		for _, d := range m.Manifests {
			if d.Platform != nil {
				platforms = append(platforms, d.Platform.String())
			}
		}
		if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
			t.Errorf("index platforms %v", platforms)
		}
	}
	check(t, idx)

	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/captf/manager:v0.1.0"
	if _, err := imagebuild.PushIndex(ctx, ref, idx, true); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulledIdx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	check(t, pulledIdx)
	arm, err := remote.Image(r, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := arm.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "arm64" || cf.Config.User != User || cf.Config.Entrypoint[0] != ManagerPath {
		t.Errorf("the linux/arm64 pull has architecture %s, user %s, entrypoint %v", cf.Architecture, cf.Config.User, cf.Config.Entrypoint)
	}

	out := filepath.Join(dir, "layout")
	want, _ := idx.Digest()
	for range 2 { // the second write replaces the first under the same name
		d, err := imagebuild.WriteIndexLayout(out, "v0.1.0", idx)
		if err != nil || d != want {
			t.Fatalf("layout digest %s %v, want %s", d, err, want)
		}
	}
	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations[imagebuild.RefNameAnnotation] != "v0.1.0" {
		t.Fatalf("layout index %+v", m.Manifests)
	}
	stored, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	check(t, stored)
}
