package registry

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestPushThenPullByDigest(t *testing.T) {
	r, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if !strings.HasPrefix(r.Host, "127.0.0.1:") {
		t.Fatalf("registry listens on %s, want loopback", r.Host)
	}
	img, err := FilesImage([]File{
		{Path: "/captf/bin/prog", Data: []byte("#!prog"), Mode: 0o755},
		{Path: "/captf/link", Link: "bin/prog"},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
	}, v1.Config{User: "65532", Labels: map[string]string{"io.captf.test": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := r.Push(context.Background(), "captf/test:v1", img)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	if pinned != r.Host+"/captf/test@"+d.String() {
		t.Fatalf("pinned reference %q", pinned)
	}
	ref, err := name.ParseReference(pinned)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Config.User != "65532" || cf.Config.Labels["io.captf.test"] != "yes" {
		t.Fatalf("config not kept: %+v", cf)
	}
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(got))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[strings.TrimSuffix(h.Name, "/")] = h
	}
	for name, check := range map[string]func(*tar.Header) bool{
		"captf":          func(h *tar.Header) bool { return h.Typeflag == tar.TypeDir && h.Mode == 0o755 },
		"captf/bin/prog": func(h *tar.Header) bool { return h.Typeflag == tar.TypeReg && h.Mode == 0o755 && h.Size == 6 },
		"captf/link":     func(h *tar.Header) bool { return h.Typeflag == tar.TypeSymlink && h.Linkname == "bin/prog" },
		"tmp":            func(h *tar.Header) bool { return h.Typeflag == tar.TypeDir && h.Mode == 0o1777 },
	} {
		if h, ok := entries[name]; !ok || !check(h) {
			t.Errorf("layer entry %s = %+v", name, h)
		}
	}
}

func TestFilesImageRejectsTheRoot(t *testing.T) {
	if _, err := FilesImage([]File{{Path: "/"}}, v1.Config{}); err == nil {
		t.Fatal("an entry for / was accepted")
	}
}
