package lint

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// DefaultPlatform is the platform image lint checks by default.
const DefaultPlatform = "linux/amd64"

// LayoutPrefix marks a local OCI image layout reference: oci:<dir>, or
// oci:<dir>:<name> for the image stored under a reference name.
const LayoutPrefix = "oci:"

// Fixed paths of the image contract, without their leading slash.
var (
	modulePath    = strings.TrimPrefix(contract.ModuleDir, "/")
	runtimePath   = strings.TrimPrefix(contract.RuntimePath, "/")
	providersPath = strings.TrimPrefix(contract.ProvidersDir, "/")
)

// ReservedPaths are the image paths the runner mounts its own content at;
// an image must ship nothing under them.
func ReservedPaths() []string {
	return []string{contract.WorkDir, contract.CredentialsDir, contract.RunnerDir, contract.ConfigDir}
}

const (
	maxListedUnread   = 5
	maxSymlinkHops    = 40
	registryTimeout   = 5 * time.Minute
	attestationOSArch = "unknown/unknown"
)

// ImageOptions are the options of image lint.
type ImageOptions struct {
	// Role, Contract and AllowWarnings are as for module lint.
	Role          contract.Role
	Contract      string
	AllowWarnings []string
	// Platform is the platform to check (os/arch[/variant]); PlatformSet
	// says it was given explicitly, which makes a single-platform image
	// for another platform an image/platform error.
	Platform    string
	PlatformSet bool
	// AllPlatforms checks every platform an index publishes.
	AllPlatforms bool
	// Insecure reaches the registry over plain HTTP.
	Insecure bool
	// Remote adds go-containerregistry options (tests).
	Remote []remote.Option
}

// target is one image to lint and the platform it was picked for.
type target struct {
	platform string
	img      v1.Image
}

// LintImage lints the image ref: a registry reference, or oci:<dir> for
// a local OCI image layout. An invalid reference or option is a
// *UsageError; an image that cannot be pulled or read is a *PullError;
// a module in it that cannot be parsed is a *ParseError.
func LintImage(ref string, o ImageOptions) (*Report, error) {
	mo := ModuleOptions{Role: o.Role, Contract: o.Contract, AllowWarnings: o.AllowWarnings}
	if err := mo.check(); err != nil {
		return nil, err
	}
	if o.Platform == "" {
		o.Platform = DefaultPlatform
	}
	want, err := v1.ParsePlatform(o.Platform)
	if err != nil || want.OS == "" || want.Architecture == "" {
		return nil, usageErrorf("--platform %q: want os/arch[/variant], for example linux/arm64", o.Platform)
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	idx, img, digest, err := open(ctx, ref, o)
	if err != nil {
		return nil, err
	}
	r := &Report{Ref: ref, Digest: digest.String(), Platforms: []string{}}
	fs := &findings{}
	var targets []target
	switch {
	case idx != nil:
		targets, err = pick(idx, *want, o.AllPlatforms, fs)
		if err != nil {
			return nil, &PullError{fmt.Errorf("reading the index of %s: %w", ref, err)}
		}
	default:
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, &PullError{fmt.Errorf("reading the config of %s: %w", ref, err)}
		}
		got := cf.Platform()
		if got == nil {
			got = &v1.Platform{}
		}
		if o.PlatformSet && !got.Satisfies(*want) {
			fs.add(CheckImagePlatform, SeverityError, "", 0,
				"the image is a single-platform image for %s, not %s: publish a manifest for %s or lint with --platform %s",
				platformString(*got), want, want, platformString(*got))
		}
		targets = []target{{platform: platformString(*got), img: img}}
	}
	var capacities []capacityLabels
	for _, t := range targets {
		r.Platforms = append(r.Platforms, t.platform)
		if o.AllPlatforms {
			fs.prefix = "[" + t.platform + "] "
		}
		labels, err := lintOneImage(t, o, r, fs)
		if err != nil {
			return nil, err
		}
		capacities = append(capacities, labels)
	}
	fs.prefix = ""
	if o.Role == contract.RoleMachine {
		compareCapacities(capacities, fs)
	}
	r.Findings = append(r.Findings, fs.list...)
	r.finish(allowSet(o.AllowWarnings))
	return r, nil
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// open resolves ref to an index or an image, and its digest.
func open(ctx context.Context, ref string, o ImageOptions) (v1.ImageIndex, v1.Image, v1.Hash, error) {
	if dir, ok := strings.CutPrefix(ref, LayoutPrefix); ok {
		return openLayout(dir)
	}
	var nopts []name.Option
	if o.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return nil, nil, v1.Hash{}, usageErrorf("invalid image reference %q: %v", ref, err)
	}
	ropts := append([]remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 2}),
	}, o.Remote...)
	desc, err := remote.Get(r, ropts...)
	if err != nil {
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("pulling %s: %w", ref, err)}
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("reading the index %s: %w", ref, err)}
		}
		return idx, nil, desc.Digest, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("reading the image %s: %w", ref, err)}
	}
	return nil, img, desc.Digest, nil
}

// openLayout reads oci:<dir> or oci:<dir>:<name>. A layout holding one
// manifest gives it; one holding several images with platforms is read as
// a multi-platform index.
func openLayout(spec string) (v1.ImageIndex, v1.Image, v1.Hash, error) {
	dir, refName := spec, ""
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if i := strings.LastIndex(spec, ":"); i > 0 {
			dir, refName = spec[:i], spec[i+1:]
		}
	}
	if dir == "" {
		return nil, nil, v1.Hash{}, usageErrorf("oci: needs a directory, as in oci:<dir>")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("reading the OCI layout %s: %w", dir, err)}
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("reading the OCI layout %s: %w", dir, err)}
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("reading the OCI layout %s: %w", dir, err)}
	}
	var picked []v1.Descriptor
	for _, d := range im.Manifests {
		n := d.Annotations["org.opencontainers.image.ref.name"]
		if refName == "" || n == refName || strings.HasSuffix(n, ":"+refName) {
			picked = append(picked, d)
		}
	}
	switch {
	case len(picked) == 0 && refName != "":
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("the OCI layout %s has no image named %q", dir, refName)}
	case len(picked) == 0:
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("the OCI layout %s holds no image", dir)}
	case len(picked) > 1:
		for _, d := range picked {
			if !d.MediaType.IsImage() || d.Platform == nil {
				return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("the OCI layout %s holds %d manifests: name one as oci:%s:<name>", dir, len(picked), dir)}
			}
		}
		h, err := idx.Digest()
		if err != nil {
			return nil, nil, v1.Hash{}, &PullError{err}
		}
		return idx, nil, h, nil
	}
	d := picked[0]
	if d.MediaType.IsIndex() {
		child, err := idx.ImageIndex(d.Digest)
		if err != nil {
			return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("reading the index %s of %s: %w", d.Digest, dir, err)}
		}
		return child, nil, d.Digest, nil
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return nil, nil, v1.Hash{}, &PullError{fmt.Errorf("reading the image %s of %s: %w", d.Digest, dir, err)}
	}
	return nil, img, d.Digest, nil
}

// pick returns the images of the index to lint: the one for the platform,
// or every platform's. An index without the platform is an image/platform
// finding and no target.
func pick(idx v1.ImageIndex, want v1.Platform, all bool, fs *findings) ([]target, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []target
	var published []string
	for _, d := range im.Manifests {
		if !d.MediaType.IsImage() && d.MediaType != "" {
			continue
		}
		p := v1.Platform{}
		if d.Platform != nil {
			p = *d.Platform
		}
		ps := platformString(p)
		if ps == attestationOSArch || ps == "/" {
			continue
		}
		published = append(published, ps)
		if !all && !p.Satisfies(want) {
			continue
		}
		if !all && len(out) > 0 {
			continue // the first manifest for the platform, as a runtime pulls it
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		out = append(out, target{platform: ps, img: img})
	}
	if len(out) == 0 {
		fs.add(CheckImagePlatform, SeverityError, "", 0,
			"the index has no manifest for %s (it publishes %s): publish one, or lint another platform with --platform",
			platformString(want), strings.Join(orNone(published), ", "))
	}
	return out, nil
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

// node is one entry of an image's flattened file system.
type node struct {
	dir     bool
	regular bool
	link    string // symbolic link target; "" for other types
	mode    fs.FileMode
	uid     int
	gid     int
	data    []byte // module configuration files only
}

// tree is an image's flattened file system, keyed by clean path without a
// leading slash ("" is the root).
type tree struct {
	nodes    map[string]*node
	children map[string][]string
}

func cleanPath(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

// extract flattens the image's layers (whiteouts applied).
func extract(img v1.Image) (*tree, error) {
	t := &tree{nodes: map[string]*node{"": {dir: true, mode: 0o755}}, children: map[string][]string{}}
	rc := mutate.Extract(img)
	defer rc.Close() //nolint:errcheck // read only
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		p := cleanPath(h.Name)
		if p == "" {
			continue
		}
		n := &node{mode: fs.FileMode(h.Mode).Perm(), uid: h.Uid, gid: h.Gid}
		switch h.Typeflag {
		case tar.TypeDir:
			n.dir = true
		case tar.TypeSymlink:
			n.link = h.Linkname
		case tar.TypeLink:
			if target, ok := t.nodes[cleanPath(h.Linkname)]; ok {
				c := *target
				n = &c
			} else {
				n.regular = true
			}
		case tar.TypeReg:
			n.regular = true
			if isModuleFile(path.Base(p)) && h.Size <= MaxFileBytes {
				b, err := io.ReadAll(tr)
				if err != nil {
					return nil, err
				}
				n.data = b
			}
		}
		t.add(p, n)
	}
	for dir := range t.children {
		sort.Strings(t.children[dir])
	}
	return t, nil
}

func (t *tree) add(p string, n *node) {
	if _, ok := t.nodes[p]; !ok {
		parent := path.Dir(p)
		if parent == "." {
			parent = ""
		}
		if _, ok := t.nodes[parent]; !ok {
			t.add(parent, &node{dir: true, mode: 0o755})
		}
		t.children[parent] = append(t.children[parent], path.Base(p))
	}
	t.nodes[p] = n
}

// resolve follows symbolic links (in the path's directories too) and
// returns the final path and node; nil when the path, or a link on the
// way, leads nowhere in the image.
func (t *tree) resolve(p string) (string, *node) {
	hops := 0
	var walk func(p string) (string, *node)
	walk = func(p string) (string, *node) {
		p = cleanPath(p)
		if p == "" {
			return "", t.nodes[""]
		}
		dir, base := path.Split(p)
		rdir, dn := walk(dir)
		if dn == nil || !dn.dir {
			return "", nil
		}
		full := cleanPath(path.Join(rdir, base))
		n := t.nodes[full]
		if n == nil {
			return "", nil
		}
		if n.link == "" {
			return full, n
		}
		if hops++; hops > maxSymlinkHops {
			return "", nil
		}
		target := n.link
		if !path.IsAbs(target) {
			target = path.Join(rdir, target)
		}
		return walk(target)
	}
	return walk(p)
}

// imageSource reads the module at /captf/module of an image.
type imageSource struct{ t *tree }

func (s imageSource) full(p string) string { return cleanPath(path.Join(modulePath, p)) }

func (s imageSource) list(dir string) (files, dirs []string, err error) {
	rp, n := s.t.resolve(s.full(dir))
	if n == nil || !n.dir {
		return nil, nil, fs.ErrNotExist
	}
	for _, c := range s.t.children[rp] {
		_, cn := s.t.resolve(path.Join(rp, c))
		switch {
		case cn == nil:
		case cn.regular:
			files = append(files, c)
		case cn.dir:
			dirs = append(dirs, c)
		}
	}
	return files, dirs, nil
}

func (s imageSource) read(p string) ([]byte, error) {
	_, n := s.t.resolve(s.full(p))
	if n == nil || !n.regular {
		return nil, fs.ErrNotExist
	}
	return n.data, nil
}

func (s imageSource) display(p string) string { return "/" + s.full(p) }

// user is the image's config User, parsed.
type user struct {
	raw      string
	uid, gid int // -1 when unknown
	named    bool
}

func parseUser(s string) user {
	u := user{raw: s, uid: -1, gid: -1}
	name, group, hasGroup := strings.Cut(s, ":")
	switch {
	case name == "" || name == "root":
		u.uid = 0
	case isNumber(name):
		u.uid = atoi(name)
	default:
		u.named = true
	}
	if hasGroup && isNumber(group) {
		u.gid = atoi(group)
	}
	return u
}

func isNumber(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// can reports whether the user has the permission bit (4 read, 1
// execute) on n. A named user is approximated as "anyone": the bit set for
// owner, group or others.
func (u user) can(n *node, bit fs.FileMode) bool {
	perm := n.mode.Perm()
	switch {
	case u.named:
		return perm&(bit<<6|bit<<3|bit) != 0
	case u.uid == 0:
		if bit == 1 && !n.dir {
			return perm&0o111 != 0
		}
		return true
	case n.uid == u.uid:
		return perm&(bit<<6) != 0
	case u.gid >= 0 && n.gid == u.gid:
		return perm&(bit<<3) != 0
	}
	return perm&bit != 0
}

// lintOneImage runs the image checks on one platform's image and lints its
// module; it returns the capacity labels for the cross-platform check.
func lintOneImage(t target, o ImageOptions, r *Report, fs *findings) (capacityLabels, error) {
	cf, err := t.img.ConfigFile()
	if err != nil {
		return capacityLabels{}, &PullError{fmt.Errorf("reading the image config (%s): %w", t.platform, err)}
	}
	tr, err := extract(t.img)
	if err != nil {
		return capacityLabels{}, &PullError{fmt.Errorf("extracting the image layers (%s): %w", t.platform, err)}
	}
	ic := &imageChecks{t: tr, cfg: cf.Config, role: o.Role, contract: o.Contract, fs: fs, user: parseUser(cf.Config.User)}
	if cf.OS != "" {
		ic.os, ic.arch = cf.OS, cf.Architecture
	} else {
		ic.os, ic.arch, _ = strings.Cut(t.platform, "/")
	}
	var modules []*module
	if ic.modulePresent() {
		modules, err = lintModuleSource(imageSource{t: tr}, o.Role, r, fs)
		if err != nil {
			return capacityLabels{}, err
		}
	}
	ic.runtime()
	ic.providers(modules)
	ic.reserved()
	ic.labels()
	ic.users()
	ic.moduleLinks()
	if len(cf.Config.Entrypoint) > 0 || len(cf.Config.Cmd) > 0 {
		fs.add(CheckImageEntrypoint, SeverityInfo, "", 0,
			"the image sets ENTRYPOINT or CMD; the runner replaces them")
	}
	return ic.capacity(), nil
}

type imageChecks struct {
	t        *tree
	cfg      v1.Config
	role     contract.Role
	contract string
	os, arch string
	user     user
	fs       *findings
}

func (c *imageChecks) add(id string, sev Severity, format string, args ...any) {
	c.fs.add(id, sev, "", 0, format, args...)
}

func (c *imageChecks) modulePresent() bool {
	rp, n := c.t.resolve(modulePath)
	if n != nil && n.dir {
		for _, ch := range c.t.children[rp] {
			if _, cn := c.t.resolve(path.Join(rp, ch)); cn != nil && cn.regular && isModuleFile(ch) {
				return true
			}
		}
	}
	c.add(CheckImageModulePresent, SeverityError,
		"/captf/module has no top-level .tf, .tf.json, .tofu or .tofu.json file: copy the module there (the module checks are skipped)")
	return false
}

func (c *imageChecks) runtime() {
	n := c.t.nodes[runtimePath]
	if n == nil {
		if _, pn := c.t.resolve(runtimePath); pn == nil {
			c.add(CheckImageRuntimePresent, SeverityError, "/captf/runtime is missing: copy the tofu or terraform binary there")
			return
		}
	}
	rp, rn := c.t.resolve(runtimePath)
	switch {
	case rn == nil:
		c.add(CheckImageRuntimePresent, SeverityError, "/captf/runtime is a link to something outside the image")
		return
	case !rn.regular:
		c.add(CheckImageRuntimePresent, SeverityError, "/captf/runtime is not a regular file (/%s)", rp)
		return
	case !c.user.can(rn, 1):
		c.add(CheckImageRuntimePresent, SeverityError, "/captf/runtime is not executable by the image's user %q", c.userText())
	}
	label := c.cfg.Labels[contract.LabelRuntime]
	if label == "" {
		return
	}
	if label != contract.RuntimeTofu && label != contract.RuntimeTerraform {
		c.add(CheckImageRuntimeVersion, SeverityWarning, "the %s label is %q, neither %s nor %s", contract.LabelRuntime, label, contract.RuntimeTofu, contract.RuntimeTerraform)
		return
	}
	if named := c.runtimeName(); named != "" && named != label {
		c.add(CheckImageRuntimeVersion, SeverityWarning, "/captf/runtime links to a %s binary, but the %s label says %s", named, contract.LabelRuntime, label)
	}
}

// runtimeName is tofu or terraform when /captf/runtime is a link whose
// target (or a link on the way) is named so; "" otherwise.
func (c *imageChecks) runtimeName() string {
	p := runtimePath
	for range maxSymlinkHops {
		n := c.t.nodes[p]
		if n == nil || n.link == "" {
			return ""
		}
		target := n.link
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(p), target)
		}
		if b := path.Base(target); b == contract.RuntimeTofu || b == contract.RuntimeTerraform {
			return b
		}
		p = cleanPath(target)
	}
	return ""
}

func (c *imageChecks) userText() string {
	if c.user.raw == "" {
		return "root"
	}
	return c.user.raw
}

// runtimeKind is the runtime the providers' default host follows: the
// label, else the runtime link's name; "" when unknown.
func (c *imageChecks) runtimeKind() string {
	if l := c.cfg.Labels[contract.LabelRuntime]; l == contract.RuntimeTofu || l == contract.RuntimeTerraform {
		return l
	}
	return c.runtimeName()
}

func (c *imageChecks) providers(modules []*module) {
	rp, n := c.t.resolve(providersPath)
	if n == nil {
		c.add(CheckImageProvidersAbsent, SeverityInfo, "the image has no /captf/providers mirror: init needs registry egress")
		return
	}
	if !n.dir {
		c.add(CheckImageProvidersLayout, SeverityError, "/captf/providers is not a directory")
		return
	}
	var bad, broken []string
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		for _, ch := range c.t.children[dir] {
			p := path.Join(dir, ch)
			_, cn := c.t.resolve(p)
			if cn == nil {
				broken = append(broken, "/"+p)
				continue
			}
			switch {
			case depth < 3 && cn.dir: // HOST, NAMESPACE, TYPE
				walk(p, depth+1)
			case depth == 3 && cn.regular && (strings.HasSuffix(ch, ".zip") || strings.HasSuffix(ch, ".json")): // packed
			case depth == 3 && cn.dir: // VERSION
				walk(p, depth+1)
			case depth == 4 && cn.dir: // TARGET
				c.walkBroken(p, &broken)
			default:
				bad = append(bad, "/"+p)
			}
		}
	}
	walk(rp, 0)
	if len(bad) > 0 {
		c.add(CheckImageProvidersLayout, SeverityError,
			"/captf/providers has entries that are neither packed (HOST/NAMESPACE/TYPE/*.zip, *.json) nor unpacked (HOST/NAMESPACE/TYPE/VERSION/TARGET/): %s",
			listed(bad))
	}
	if len(broken) > 0 {
		c.add(CheckImageProvidersComplete, SeverityError, "/captf/providers has broken links: %s", listed(broken))
	}
	target := c.os + "_" + c.arch
	var missing []string
	for _, src := range requiredProviders(modules) {
		if !c.hasPackage(rp, src, target) {
			missing = append(missing, src.String())
		}
	}
	if len(missing) > 0 {
		c.add(CheckImageProvidersComplete, SeverityError,
			"/captf/providers has no package for %s of: %s (run providers mirror with -platform=%s)", target, strings.Join(missing, ", "), target)
	}
}

func (c *imageChecks) walkBroken(dir string, broken *[]string) {
	for _, ch := range c.t.children[dir] {
		p := path.Join(dir, ch)
		_, cn := c.t.resolve(p)
		if cn == nil {
			*broken = append(*broken, "/"+p)
			continue
		}
		if cn.dir && c.t.nodes[p].link == "" {
			c.walkBroken(p, broken)
		}
	}
}

func listed(paths []string) string {
	if len(paths) <= maxListedUnread {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:maxListedUnread], ", ") + fmt.Sprintf(" (and %d more)", len(paths)-maxListedUnread)
}

// providerSource is a provider's source address; host is "" when the
// source does not name one (the runtime's registry applies).
type providerSource struct{ host, namespace, typ string }

func (p providerSource) String() string {
	s := p.namespace + "/" + p.typ
	if p.host != "" {
		s = p.host + "/" + s
	}
	return s
}

// requiredProviders lists the providers the modules need: every
// required_providers entry, and the providers resources imply by their
// type's prefix. The builtin terraform provider is left out.
func requiredProviders(modules []*module) []providerSource {
	seen := map[string]bool{}
	var out []providerSource
	addSrc := func(local, src string) {
		ps := parseProviderSource(local, src)
		if ps.typ == "terraform" && (ps.namespace == "builtin" || ps.namespace == "hashicorp" && src == "") {
			return
		}
		if k := ps.String(); !seen[k] {
			seen[k] = true
			out = append(out, ps)
		}
	}
	for _, m := range modules {
		for local, src := range m.requiredProviders {
			addSrc(local, src)
		}
		for _, r := range m.resources {
			if _, ok := m.requiredProviders[r.providerName]; ok || r.providerName == "" {
				continue
			}
			addSrc(r.providerName, "")
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func parseProviderSource(local, src string) providerSource {
	if src == "" {
		return providerSource{namespace: "hashicorp", typ: strings.ToLower(local)}
	}
	parts := strings.Split(strings.ToLower(src), "/")
	switch len(parts) {
	case 1:
		return providerSource{namespace: "hashicorp", typ: parts[0]}
	case 2:
		return providerSource{namespace: parts[0], typ: parts[1]}
	}
	return providerSource{host: parts[0], namespace: parts[1], typ: parts[2]}
}

// hasPackage reports whether the mirror holds the provider for target, in
// either layout, under its host (the runtime's registry when the source
// names none: registry.opentofu.org for tofu, registry.terraform.io for
// terraform, either when the runtime is unknown).
func (c *imageChecks) hasPackage(mirror string, src providerSource, target string) bool {
	hosts := []string{src.host}
	if src.host == "" {
		switch c.runtimeKind() {
		case contract.RuntimeTofu:
			hosts = []string{"registry.opentofu.org"}
		case contract.RuntimeTerraform:
			hosts = []string{"registry.terraform.io"}
		default:
			hosts = []string{"registry.opentofu.org", "registry.terraform.io"}
		}
	}
	for _, h := range hosts {
		dir, n := c.t.resolve(path.Join(mirror, h, src.namespace, src.typ))
		if n == nil || !n.dir {
			continue
		}
		for _, ch := range c.t.children[dir] {
			_, cn := c.t.resolve(path.Join(dir, ch))
			if cn == nil {
				continue
			}
			if cn.regular && strings.HasPrefix(ch, "terraform-provider-"+src.typ+"_") && strings.HasSuffix(ch, "_"+target+".zip") {
				return true
			}
			if cn.dir {
				if _, tn := c.t.resolve(path.Join(dir, ch, target)); tn != nil && tn.dir {
					return true
				}
			}
		}
	}
	return false
}

func (c *imageChecks) reserved() {
	var found []string
	for _, p := range ReservedPaths() {
		rp, n := c.t.resolve(p)
		if n == nil || !n.dir {
			if n != nil {
				found = append(found, p)
			}
			continue
		}
		if len(c.t.children[rp]) > 0 {
			found = append(found, p)
		}
	}
	if len(found) > 0 {
		c.add(CheckImageReservedPaths, SeverityError,
			"the image ships files under %s, where the Job mounts its own: remove them", strings.Join(found, ", "))
	}
}

func (c *imageChecks) labels() {
	switch role := c.cfg.Labels[contract.LabelRole]; {
	case role == "":
		c.add(CheckImageLabelRole, SeverityInfo, "the %s label is not set", contract.LabelRole)
	case role != string(c.role):
		c.add(CheckImageLabelRole, SeverityError, "the %s label is %q, but --role is %s", contract.LabelRole, role, c.role)
	}
	switch v := c.cfg.Labels[contract.LabelContract]; {
	case v == "":
		c.add(CheckImageLabelContract, SeverityInfo, "the %s label is not set", contract.LabelContract)
	case v != c.contract:
		c.add(CheckImageLabelContract, SeverityWarning, "the %s label is %q, but --contract is %s", contract.LabelContract, v, c.contract)
	}
}

func (c *imageChecks) users() {
	switch {
	case c.user.uid == 0:
		c.add(CheckImageUserRoot, SeverityWarning,
			"the image runs as root (User %q): set a non-root numeric USER such as 65532", c.user.raw)
		return
	case c.user.named:
		c.add(CheckImageUserUnresolved, SeverityWarning,
			"the image's User %q is a name: permission checks are approximated and image/module-readable is skipped; set a numeric USER", c.user.raw)
		return
	}
	var unread []string
	// The path down to each tree must be traversable.
	for _, top := range []string{modulePath, providersPath} {
		rp, n := c.t.resolve(top)
		if n == nil {
			continue
		}
		for p := path.Dir(rp); p != "."; p = path.Dir(p) {
			if pn := c.t.nodes[p]; pn != nil && pn.dir && !c.user.can(pn, 1) {
				unread = append(unread, "/"+p)
			}
		}
		c.walkReadable(rp, &unread)
	}
	sort.Strings(unread)
	unread = compact(unread)
	if len(unread) > 0 {
		c.add(CheckImageModuleReadable, SeverityWarning,
			"user %s cannot read or traverse: %s", c.user.raw, listed(unread))
	}
}

func compact(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func (c *imageChecks) walkReadable(p string, unread *[]string) {
	n := c.t.nodes[p]
	if n == nil || n.link != "" {
		return
	}
	if n.dir {
		if !c.user.can(n, 4) || !c.user.can(n, 1) {
			*unread = append(*unread, "/"+p)
			return
		}
		for _, ch := range c.t.children[p] {
			c.walkReadable(path.Join(p, ch), unread)
		}
		return
	}
	if n.regular && !c.user.can(n, 4) {
		*unread = append(*unread, "/"+p)
	}
}

func (c *imageChecks) moduleLinks() {
	rp, n := c.t.resolve(modulePath)
	if n == nil || !n.dir {
		return
	}
	var bad []string
	var walk func(p string)
	walk = func(p string) {
		for _, ch := range c.t.children[p] {
			cp := path.Join(p, ch)
			cn := c.t.nodes[cp]
			switch {
			case cn == nil:
			case cn.link != "":
				fp, fn := c.t.resolve(cp)
				if fn == nil || !fn.regular || !strings.HasPrefix(fp+"/", rp+"/") {
					bad = append(bad, "/"+cp)
				}
			case cn.dir:
				walk(cp)
			}
		}
	}
	walk(rp)
	if len(bad) > 0 {
		c.add(CheckImageModuleLink, SeverityError,
			"links under /captf/module that do not end at a regular file inside it: %s", listed(bad))
	}
}
