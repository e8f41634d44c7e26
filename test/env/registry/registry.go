package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Registry is a running loopback registry.
type Registry struct {
	// Host is host:port of the registry (127.0.0.1:<port>); image references
	// are Host + "/" + repository.
	Host string

	srv  *http.Server
	done chan struct{}
}

// Start serves a fresh, empty registry on a free port of 127.0.0.1.
func Start() (*Registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failed to listen for the registry: %w", err)
	}
	r := &Registry{
		Host: ln.Addr().String(),
		srv: &http.Server{
			Handler:           ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Ref returns the full reference of repo (e.g. "captf/noop:v1") in this
// registry.
func (r *Registry) Ref(repo string) string { return r.Host + "/" + repo }

// Push uploads img under repo (a repository with a tag, e.g.
// "captf/noop-cluster:dev") and returns the pinned reference
// <host>/<repository>@sha256:<digest>.
func (r *Registry) Push(ctx context.Context, repo string, img v1.Image) (string, error) {
	return PushTo(ctx, r.Host, repo, img)
}

// PushTo is Push to the loopback registry at host (host:port), e.g. one
// another process serves.
func PushTo(ctx context.Context, host, repo string, img v1.Image) (string, error) {
	ref, err := name.ParseReference(host+"/"+repo, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", repo, err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("failed to push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("failed to compute digest of %s: %w", ref, err)
	}
	return ref.Context().Name() + "@" + d.String(), nil
}

// Stop shuts the registry down: gracefully, and by closing the connections
// still open after 5 s (a client that never finished reading a response
// would otherwise keep it from stopping).
func (r *Registry) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = r.srv.Close()
	}
	<-r.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// File is one entry of an image layer built by FilesImage.
type File struct {
	// Path is the absolute path in the image (e.g. "/captf/bin/prog").
	Path string
	// Data is the content of a regular file.
	Data []byte
	// Mode is the permission bits (default 0644; 0755 for Dir).
	Mode int64
	// Dir makes the entry a directory.
	Dir bool
	// Link makes the entry a symbolic link to Link.
	Link string
	// UID and GID own the entry.
	UID, GID int
}

// FilesImage builds a linux OCI image for the running architecture with one
// layer holding files (parent folders are added) and the given config.
func FilesImage(files []File, cfg v1.Config) (v1.Image, error) {
	layer, err := FilesLayer(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, fmt.Errorf("failed to add layer: %w", err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("failed to read image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("failed to set image config: %w", err)
	}
	return img, nil
}

// FilesLayer builds one uncompressed-on-disk, gzip-on-the-wire layer from
// files, adding missing parent folders (0755, root-owned).
func FilesLayer(files []File) (v1.Layer, error) {
	entries := map[string]File{}
	for _, f := range files {
		p := path.Clean("/" + f.Path)
		if p == "/" {
			return nil, fmt.Errorf("invalid file path %q", f.Path)
		}
		f.Path = p
		entries[p] = f
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = File{Path: d, Dir: true}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for p := range entries {
		names = append(names, p)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range names {
		f := entries[p]
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: f.Mode, Uid: f.UID, Gid: f.GID}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
			if h.Mode == 0 {
				h.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("failed to write layer entry %s: %w", p, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("failed to write layer entry %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("failed to finish layer: %w", err)
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("failed to build layer: %w", err)
	}
	return layer, nil
}
