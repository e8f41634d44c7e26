package imagebuild

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one file, directory or symbolic link of a layer.
type Entry struct {
	// Path is the absolute path inside the image, for example
	// /captf/runtime.
	Path string
	// Mode holds the permission bits, plus fs.ModeDir for a directory or
	// fs.ModeSymlink for a symbolic link.
	Mode fs.FileMode
	// UID and GID own the entry.
	UID, GID int
	// Source is a host file whose content a regular file gets; Data is used
	// when Source is empty.
	Source string
	Data   []byte
	// Linkname is a symbolic link's target.
	Linkname string
}

// Layer is one image layer: its entries, written in the order given after
// every missing parent directory.
type Layer struct {
	Entries []Entry
	// ParentUID and ParentGID own the parent directories the layer adds for
	// its entries; ParentMode is their mode (0755 when zero).
	ParentUID, ParentGID int
	ParentMode           fs.FileMode
}

// Spec describes an image built from scratch.
type Spec struct {
	// Platform is the image's OS and architecture.
	Platform v1.Platform
	// Layers are stacked in order.
	Layers []Layer
	// User is the config's User ("65532", "65532:65532"…).
	User string
	// Labels are the config's labels.
	Labels map[string]string
	// Entrypoint, Cmd, Env and WorkingDir go to the config as they are.
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
}

// epoch stamps every entry and the config, so the same inputs always build
// the same digest.
var epoch = time.Unix(0, 0).UTC()

// Build builds an OCI image (OCI manifest and config media types, gzip
// layers) from the spec.
func Build(spec Spec) (v1.Image, error) {
	if spec.Platform.OS == "" || spec.Platform.Architecture == "" {
		return nil, errors.New("image platform needs an OS and an architecture")
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for i, l := range spec.Layers {
		layer, err := newLayer(l)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = spec.Platform.OS, spec.Platform.Architecture, spec.Platform.Variant
	cf.Created = v1.Time{Time: epoch}
	cf.Config.User = spec.User
	cf.Config.Labels = spec.Labels
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.Cmd = spec.Cmd
	cf.Config.Env = spec.Env
	cf.Config.WorkingDir = spec.WorkingDir
	return mutate.ConfigFile(img, cf)
}

// newLayer returns a gzip OCI layer whose tar stream is generated from the
// entries each time it is read; the compressed bytes are kept after the
// first pass so a layer is compressed once. A layer with host files is
// built once per process for the same entries and files (layers).
func newLayer(l Layer) (v1.Layer, error) {
	entries, err := withParents(l)
	if err != nil {
		return nil, err
	}
	key := sha256.New()
	sources := false
	for _, e := range entries {
		fmt.Fprintf(key, "%q %d %d %d %q %x", e.Path, e.Mode, e.UID, e.GID, e.Linkname, sha256.Sum256(e.Data))
		if e.Source == "" {
			fmt.Fprintln(key)
			continue
		}
		fi, err := os.Stat(e.Source)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Path, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: source %s is not a regular file", e.Path, e.Source)
		}
		sources = true
		fmt.Fprintf(key, " %q %d %d\n", e.Source, fi.Size(), fi.ModTime().UnixNano())
	}
	if !sources {
		return compressedLayer(entries)
	}
	return layers.get(string(key.Sum(nil)), func() (v1.Layer, error) { return compressedLayer(entries) })
}

func compressedLayer(entries []Entry) (v1.Layer, error) {
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, entries)) }()
		return pr, nil
	}
	return tarball.LayerFromOpener(opener,
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.BestSpeed),
		tarball.WithCompressedCaching)
}

// layerMemo keeps the layers built from host files by a key of their
// entries and of each file's path, size and modification time, so images
// that share a layer (the runtime of the three module images, say)
// compress it once per process.
type layerMemo struct {
	mu sync.Mutex
	m  map[string]v1.Layer
}

var layers = &layerMemo{m: map[string]v1.Layer{}}

func (c *layerMemo) get(key string, build func() (v1.Layer, error)) (v1.Layer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.m[key]; ok {
		return l, nil
	}
	l, err := build()
	if err != nil {
		return nil, err
	}
	c.m[key] = l
	return l, nil
}

// withParents cleans the entries' paths, checks them and prepends every
// parent directory not listed, so the layer unpacks on its own.
func withParents(l Layer) ([]Entry, error) {
	mode := l.ParentMode
	if mode == 0 {
		mode = 0o755
	}
	listed := map[string]bool{}
	var out []Entry
	for _, e := range l.Entries {
		if !path.IsAbs(e.Path) {
			return nil, fmt.Errorf("entry path %q is not absolute", e.Path)
		}
		e.Path = path.Clean(e.Path)
		if e.Path == "/" {
			return nil, errors.New("an entry cannot be the root directory")
		}
		if listed[e.Path] {
			return nil, fmt.Errorf("entry %s is listed twice", e.Path)
		}
		listed[e.Path] = true
		out = append(out, e)
	}
	var parents []Entry
	for _, e := range out {
		for dir := path.Dir(e.Path); dir != "/"; dir = path.Dir(dir) {
			if listed[dir] {
				continue
			}
			listed[dir] = true
			parents = append(parents, Entry{Path: dir, Mode: fs.ModeDir | mode, UID: l.ParentUID, GID: l.ParentGID})
		}
	}
	slices.SortFunc(parents, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return append(parents, out...), nil
}

func writeTar(w io.Writer, entries []Entry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(e.Path, "/"),
			Mode:    int64(e.Mode.Perm()),
			Uid:     e.UID,
			Gid:     e.GID,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		switch {
		case e.Mode.IsDir():
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case e.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.Linkname
		default:
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		if e.Source == "" {
			hdr.Size = int64(len(e.Data))
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := tw.Write(e.Data); err != nil {
				return err
			}
			continue
		}
		if err := copyFile(tw, hdr, e.Source); err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
	}
	return tw.Close()
}

func copyFile(tw *tar.Writer, hdr *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return fmt.Errorf("source %s changed size while it was read", src)
	}
	return nil
}

// DirEntries returns an entry for every directory, regular file and
// symbolic link under dir, placed under dest and owned by uid:gid.
// Directories get 0755; files 0755 when any execute bit is set on the host,
// else 0644, so the image user can read everything. .terraform directories
// and state files are left out: they never belong in an image.
func DirEntries(dir, dest string, uid, gid int) ([]Entry, error) {
	root := Entry{Path: dest, Mode: fs.ModeDir | 0o755, UID: uid, GID: gid}
	entries := []Entry{root}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() && d.Name() == ".terraform" || strings.Contains(d.Name(), ".tfstate") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		e := Entry{Path: path.Join(dest, filepath.ToSlash(rel)), UID: uid, GID: gid}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			e.Mode = fs.ModeDir | 0o755
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.Mode, e.Linkname = fs.ModeSymlink|0o777, target
		case info.Mode().IsRegular():
			e.Mode, e.Source = 0o644, p
			if info.Mode()&0o111 != 0 {
				e.Mode = 0o755
			}
		default:
			return fmt.Errorf("%s is neither a directory, a regular file nor a symbolic link", p)
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return entries, nil
}
