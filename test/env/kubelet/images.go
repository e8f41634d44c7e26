package kubelet

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
)

// image is a pulled and unpacked image.
type image struct {
	// ID is the repository digest reported as imageID: <repo>@sha256:<hex>.
	ID string
	// Root is the unpacked file system (read-only lower layer of containers).
	Root   string
	Config v1.Config
}

// imageStore pulls images and unpacks each digest once.
type imageStore struct {
	dir string

	mu       sync.Mutex
	byRef    map[string]*image // image reference as written in the pod
	byDigest map[string]*image
	locks    map[string]*sync.Mutex
}

func newImageStore(dir string) *imageStore {
	return &imageStore{dir: dir, byRef: map[string]*image{}, byDigest: map[string]*image{}, locks: map[string]*sync.Mutex{}}
}

// get returns the image for ref, pulling it unless policy allows the copy
// already held.
func (s *imageStore) get(ctx context.Context, ref string, policy corev1.PullPolicy) (*image, error) {
	s.mu.Lock()
	img, ok := s.byRef[ref]
	s.mu.Unlock()
	if ok && policy != corev1.PullAlways {
		return img, nil
	}
	if policy == corev1.PullNever {
		return nil, fmt.Errorf("image %s is not present and the pull policy is Never", ref)
	}
	img, err := s.pull(ctx, ref)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.byRef[ref] = img
	s.mu.Unlock()
	return img, nil
}

func (s *imageStore) pull(ctx context.Context, ref string) (*image, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	desc, err := remote.Get(r, remote.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("failed to pull %s: %w", ref, err)
	}
	id := r.Context().Name() + "@" + desc.Digest.String()

	s.mu.Lock()
	if img, ok := s.byDigest[id]; ok {
		s.mu.Unlock()
		return img, nil
	}
	lock, ok := s.locks[id]
	if !ok {
		lock = &sync.Mutex{}
		s.locks[id] = lock
	}
	s.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	s.mu.Lock()
	if img, ok := s.byDigest[id]; ok {
		s.mu.Unlock()
		return img, nil
	}
	s.mu.Unlock()

	v1img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("failed to read image %s: %w", ref, err)
	}
	cf, err := v1img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("failed to read the config of %s: %w", ref, err)
	}
	dest := filepath.Join(s.dir, desc.Digest.Hex, "rootfs")
	tmp := dest + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("failed to clear %s: %w", tmp, err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create image folder: %w", err)
	}
	rc := mutate.Extract(v1img)
	err = untar(rc, tmp)
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("failed to unpack %s: %w", ref, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return nil, fmt.Errorf("failed to store unpacked %s: %w", ref, err)
	}
	img := &image{ID: id, Root: dest, Config: cf.Config}
	s.mu.Lock()
	s.byDigest[id] = img
	s.mu.Unlock()
	return img, nil
}

// untar writes the flattened image file system from r into dir, keeping
// owners and modes; no entry may land outside dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("failed to read layer: %w", err)
		}
		rel := filepath.Clean("/" + h.Name)
		if rel == "/" {
			continue
		}
		// The parent may be a symbolic link inside the image: resolve it
		// within dir.
		parent, err := securePath(dir, filepath.Dir(rel))
		if err != nil {
			return err
		}
		target := filepath.Join(parent, filepath.Base(rel))
		if !strings.HasPrefix(target, dir+string(os.PathSeparator)) {
			return fmt.Errorf("layer entry %q escapes the image root", h.Name)
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", filepath.Dir(rel), err)
		}
		mode := os.FileMode(h.Mode) & os.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if fi, err := os.Lstat(target); err != nil || !fi.IsDir() {
				_ = os.RemoveAll(target)
				if err := os.Mkdir(target, 0o755); err != nil {
					return fmt.Errorf("failed to create %s: %w", rel, err)
				}
			}
			dirs = append(dirs, dirMode{target, mode | specialBits(h.Mode)})
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return fmt.Errorf("failed to chown %s: %w", rel, err)
			}
			continue
		case tar.TypeReg:
			_ = os.RemoveAll(target)
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("failed to create %s: %w", rel, err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("failed to write %s: %w", rel, err)
			}
		case tar.TypeSymlink:
			_ = os.RemoveAll(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return fmt.Errorf("failed to create link %s: %w", rel, err)
			}
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return fmt.Errorf("failed to chown %s: %w", rel, err)
			}
			continue
		case tar.TypeLink:
			src, err := securePath(dir, h.Linkname)
			if err != nil {
				return err
			}
			_ = os.RemoveAll(target)
			if err := os.Link(src, target); err != nil {
				return fmt.Errorf("failed to create hard link %s: %w", rel, err)
			}
			continue
		default:
			// Devices and FIFOs are not needed by CAPTF's images.
			continue
		}
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return fmt.Errorf("failed to chown %s: %w", rel, err)
		}
		if err := os.Chmod(target, mode|specialBits(h.Mode)); err != nil {
			return fmt.Errorf("failed to chmod %s: %w", rel, err)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return fmt.Errorf("failed to chmod %s: %w", dirs[i].path, err)
		}
	}
	return nil
}

func specialBits(mode int64) os.FileMode {
	var m os.FileMode
	if mode&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}
