package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RefNameAnnotation names an image inside an OCI image layout.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes the image into the OCI image layout at dir (created
// when missing), under the reference name refName (for example a tag),
// replacing an image already stored under that name. It returns the image
// digest.
func WriteLayout(dir, refName string, img v1.Image) (v1.Hash, error) {
	p, err := openLayout(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.ReplaceImage(img, match.Annotation(RefNameAnnotation, refName),
		layout.WithAnnotations(map[string]string{RefNameAnnotation: refName})); err != nil {
		return v1.Hash{}, fmt.Errorf("write image to %s: %w", dir, err)
	}
	return img.Digest()
}

// WriteIndexLayout is WriteLayout for a multi-platform image index.
func WriteIndexLayout(dir, refName string, idx v1.ImageIndex) (v1.Hash, error) {
	p, err := openLayout(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.ReplaceIndex(idx, match.Annotation(RefNameAnnotation, refName),
		layout.WithAnnotations(map[string]string{RefNameAnnotation: refName})); err != nil {
		return v1.Hash{}, fmt.Errorf("write image index to %s: %w", dir, err)
	}
	return idx.Digest()
}

// openLayout opens the OCI image layout at dir, creating it when dir is
// missing or empty.
func openLayout(dir string) (layout.Path, error) {
	p, err := layout.FromPath(dir)
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("open OCI layout %s: %w", dir, err)
	}
	// No index.json: only a missing or empty directory becomes a layout.
	if entries, rerr := os.ReadDir(dir); rerr == nil && len(entries) > 0 {
		return "", fmt.Errorf("%s is neither empty nor an OCI image layout", dir)
	}
	if p, err = layout.Write(dir, empty.Index); err != nil {
		return "", fmt.Errorf("create OCI layout %s: %w", dir, err)
	}
	return p, nil
}

// ReadLayout returns the image stored under refName in the OCI image layout
// at dir.
func ReadLayout(dir, refName string) (v1.Image, error) {
	idx, d, err := LayoutEntry(dir, refName)
	if err != nil {
		return nil, err
	}
	return idx.Image(d.Digest)
}

// ReadIndexLayout returns the multi-platform image index stored under
// refName in the OCI image layout at dir (WriteIndexLayout).
func ReadIndexLayout(dir, refName string) (v1.ImageIndex, error) {
	idx, d, err := LayoutEntry(dir, refName)
	if err != nil {
		return nil, err
	}
	return idx.ImageIndex(d.Digest)
}

// LayoutEntry returns the top index of the OCI image layout at dir and the
// descriptor it keeps under refName (an image or an image index; its
// digest is what a registry serves the pushed copy under).
func LayoutEntry(dir, refName string) (v1.ImageIndex, v1.Descriptor, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	for _, d := range m.Manifests {
		if d.Annotations[RefNameAnnotation] == refName {
			return idx, d, nil
		}
	}
	return nil, v1.Descriptor{}, fmt.Errorf("no image named %q in %s", refName, dir)
}

// Push pushes the image to ref (registry/repository:tag). A loopback or
// private registry is reached over plain HTTP, as go-containerregistry does
// for those names; insecure forces plain HTTP for any registry. It returns
// the image's digest reference.
func Push(ctx context.Context, ref string, img v1.Image, insecure bool, opts ...remote.Option) (name.Digest, error) {
	return push(ref, insecure, img, func(r name.Reference) error {
		return remote.Write(r, img, append([]remote.Option{remote.WithContext(ctx)}, opts...)...)
	})
}

// PushIndex is Push for a multi-platform image index: every platform's
// image, then the index under ref.
func PushIndex(ctx context.Context, ref string, idx v1.ImageIndex, insecure bool, opts ...remote.Option) (name.Digest, error) {
	return push(ref, insecure, idx, func(r name.Reference) error {
		return remote.WriteIndex(r, idx, append([]remote.Option{remote.WithContext(ctx)}, opts...)...)
	})
}

// push parses ref, writes what has digest d to it and returns its digest
// reference.
func push(ref string, insecure bool, d interface{ Digest() (v1.Hash, error) }, write func(name.Reference) error) (name.Digest, error) {
	var nopts []name.Option
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := write(r); err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w", ref, err)
	}
	h, err := d.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(h.String()), nil
}
