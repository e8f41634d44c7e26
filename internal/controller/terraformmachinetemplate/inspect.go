package terraformmachinetemplate

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// InspectError is a failure to read an image's labels, with the bounded
// reason captf_image_inspect_errors_total counts it under.
type InspectError struct {
	// Reason is one of metrics.InspectReference, InspectAuth,
	// InspectNotFound or InspectRegistry.
	Reason string
	Err    error
}

func (e *InspectError) Error() string { return e.Err.Error() }
func (e *InspectError) Unwrap() error { return e.Err }

// MaxConfigBytes is the largest image config blob an inspection reads; a
// manifest declaring a larger one is refused before the blob is fetched
// (and the blob read stops at its declared size).
const MaxConfigBytes = 4 << 20

// Inspector reads image config labels from a registry.
type Inspector struct {
	// Insecure reaches every registry over plain HTTP. Loopback and
	// private registries are tried over plain HTTP anyway.
	Insecure bool
	// AllowPrivate lets an inspection reach registries on loopback,
	// private (RFC 1918, RFC 4193), link-local and unspecified addresses.
	// Off, such a registry host is refused, whether the reference names
	// the address or a name that resolves to it (checked at connect time,
	// redirects included): a template's image is chosen by whoever may
	// create the template, and the manager must not become their probe of
	// the cluster's internal network.
	AllowPrivate bool
	// Platform picks the image of a multi-platform index.
	Platform v1.Platform
	// Transport, when set, carries the registry requests.
	Transport http.RoundTripper
	// UserAgent names CAPTF to the registry.
	UserAgent string
}

// Labels returns the config labels of image, authenticating with kc.
func (in *Inspector) Labels(ctx context.Context, image string, kc authn.Keychain) (map[string]string, error) {
	var opts []name.Option
	if in.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(image, opts...)
	if err != nil {
		return nil, &InspectError{Reason: metrics.InspectReference, Err: fmt.Errorf("image reference %q does not parse: %w", image, err)}
	}
	if !in.AllowPrivate {
		if err := CheckRegistryHost(ref.Context().RegistryStr()); err != nil {
			return nil, &InspectError{Reason: metrics.InspectReference, Err: fmt.Errorf("image %s: %w", image, err)}
		}
	}
	ropts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(kc),
		remote.WithPlatform(in.Platform),
	}
	if in.UserAgent != "" {
		ropts = append(ropts, remote.WithUserAgent(in.UserAgent))
	}
	switch {
	case in.Transport != nil:
		ropts = append(ropts, remote.WithTransport(in.Transport))
	case !in.AllowPrivate:
		ropts = append(ropts, remote.WithTransport(publicOnlyTransport()))
	}
	img, err := remote.Image(ref, ropts...)
	if err != nil {
		return nil, classify(image, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, classify(image, err)
	}
	if m.Config.Size > MaxConfigBytes {
		return nil, &InspectError{Reason: metrics.InspectRegistry, Err: fmt.Errorf(
			"image %s declares a config blob of %d bytes, more than the %d bytes CAPTF reads; it was not fetched", image, m.Config.Size, MaxConfigBytes)}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, classify(image, err)
	}
	return cfg.Config.Labels, nil
}

// errPrivateRegistry explains a refused registry host.
var errPrivateRegistry = errors.New("is a loopback, private or link-local address; the manager's --allow-private-registries lets template image inspection reach it")

// CheckRegistryHost refuses a registry host (host or host:port) that is
// localhost or a loopback, private, link-local or unspecified IP address.
// A name that resolves to such an address is refused when connecting
// (publicOnlyTransport).
func CheckRegistryHost(registry string) error {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return fmt.Errorf("registry host %s %w", host, errPrivateRegistry)
	}
	if ip, err := netip.ParseAddr(host); err == nil && !publicAddr(ip) {
		return fmt.Errorf("registry host %s %w", host, errPrivateRegistry)
	}
	return nil
}

// publicAddr is false for the addresses an inspection may not reach
// without --allow-private-registries.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast())
}

// publicOnlyTransport is the default transport with a dialer that refuses
// to connect to a non-public address, whatever name led to it (a DNS
// answer or a registry's redirect).
func publicOnlyTransport() http.RoundTripper {
	base, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		base = http.DefaultTransport.(*http.Transport)
	}
	t := base.Clone()
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("registry address %s: %w", host, err)
			}
			if !publicAddr(ip) {
				return fmt.Errorf("registry address %s %w", ip, errPrivateRegistry)
			}
			return nil
		},
	}
	// A proxy from the environment is dialled instead of the registry: one
	// on a private address needs --allow-private-registries too.
	t.DialContext = d.DialContext
	return t
}

// classify maps a registry failure onto a bounded reason. A registry's
// response body never reaches the message (it ends up in a condition and
// an event): an HTTP failure is described by its status code and the
// registry's error codes only.
func classify(image string, err error) *InspectError {
	wrapped := fmt.Errorf("failed to read the config of image %s: %w", image, err)
	var te *transport.Error
	if errors.As(err, &te) {
		wrapped = fmt.Errorf("failed to read the config of image %s: %w", image, withoutBody(te))
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden:
			return &InspectError{Reason: metrics.InspectAuth, Err: wrapped}
		case te.StatusCode == http.StatusNotFound:
			return &InspectError{Reason: metrics.InspectNotFound, Err: wrapped}
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return &InspectError{Reason: metrics.InspectAuth, Err: wrapped}
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode:
				return &InspectError{Reason: metrics.InspectNotFound, Err: wrapped}
			}
		}
	}
	if strings.Contains(err.Error(), "no child with platform") {
		return &InspectError{Reason: metrics.InspectNotFound, Err: wrapped}
	}
	return &InspectError{Reason: metrics.InspectRegistry, Err: wrapped}
}

// registryError is a registry's HTTP failure without its response body.
type registryError struct {
	status int
	codes  []string
	cause  *transport.Error
}

func (e *registryError) Error() string {
	msg := fmt.Sprintf("the registry answered HTTP %d", e.status)
	if t := http.StatusText(e.status); t != "" {
		msg += " " + t
	}
	if len(e.codes) > 0 {
		msg += " (" + strings.Join(e.codes, ", ") + ")"
	}
	return msg
}

func (e *registryError) Unwrap() error { return e.cause }

func withoutBody(te *transport.Error) error {
	re := &registryError{status: te.StatusCode, cause: te}
	for _, d := range te.Errors {
		code := string(d.Code)
		if code != "" && len(code) <= 64 && !slices.Contains(re.codes, code) {
			re.codes = append(re.codes, code)
		}
	}
	return re
}

// PullSecretKeychain builds a keychain from the image pull Secrets named
// in namespace, read through r, in order: the first Secret with an entry
// for a registry wins, and a registry none of them names is reached
// anonymously. A Secret that does not exist is skipped, as the kubelet
// skips it; one that cannot be read or parsed is an error naming it (never
// its content).
func PullSecretKeychain(ctx context.Context, r client.Reader, namespace string, refs []corev1.LocalObjectReference) (authn.Keychain, error) {
	kc := &pullSecrets{}
	for _, ref := range refs {
		s := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, &InspectError{Reason: metrics.InspectAuth, Err: fmt.Errorf("failed to read image pull Secret %s/%s: %w", namespace, ref.Name, err)}
		}
		entries, err := dockerEntries(s)
		if err != nil {
			return nil, &InspectError{Reason: metrics.InspectAuth, Err: fmt.Errorf("image pull Secret %s/%s: %w", namespace, ref.Name, err)}
		}
		kc.entries = append(kc.entries, entries...)
	}
	return kc, nil
}

type pullSecrets struct{ entries []dockerEntry }

type dockerEntry struct {
	// host is the registry host; path an optional repository prefix.
	host, path string
	auth       authn.AuthConfig
}

// Resolve picks the first entry for the resource's registry whose path,
// if any, prefixes the repository.
func (k *pullSecrets) Resolve(res authn.Resource) (authn.Authenticator, error) {
	reg := canonicalHost(res.RegistryStr())
	repo := strings.TrimPrefix(res.String(), res.RegistryStr())
	repo = strings.TrimPrefix(repo, "/")
	for _, e := range k.entries {
		if e.host != reg {
			continue
		}
		if e.path != "" && repo != e.path && !strings.HasPrefix(repo, e.path+"/") {
			continue
		}
		return authn.FromConfig(e.auth), nil
	}
	return authn.Anonymous, nil
}

// dockerAuth is one entry of a docker config file.
type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// dockerEntries reads a kubernetes.io/dockerconfigjson (.dockerconfigjson)
// or kubernetes.io/dockercfg (.dockercfg) Secret.
func dockerEntries(s *corev1.Secret) ([]dockerEntry, error) {
	var auths map[string]dockerAuth
	if raw, ok := s.Data[corev1.DockerConfigJsonKey]; ok {
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, fmt.Errorf("key %s is not a docker config", corev1.DockerConfigJsonKey)
		}
		auths = cfg.Auths
	} else if raw, ok := s.Data[corev1.DockerConfigKey]; ok {
		if err := json.Unmarshal(raw, &auths); err != nil {
			return nil, fmt.Errorf("key %s is not a docker config", corev1.DockerConfigKey)
		}
	} else {
		return nil, fmt.Errorf("has neither %s nor %s", corev1.DockerConfigJsonKey, corev1.DockerConfigKey)
	}
	// Longer (more specific) paths first, then by host and path.
	keys := make([]string, 0, len(auths))
	for k := range auths {
		keys = append(keys, k)
	}
	out := make([]dockerEntry, 0, len(keys))
	for _, k := range keys {
		a := auths[k]
		host, path := splitServer(k)
		if host == "" {
			continue
		}
		cfg := authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if a.Auth != "" && cfg.Username == "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the auth field of registry %s is not base64", host)
			}
			user, pass, ok := strings.Cut(string(dec), ":")
			if !ok {
				return nil, fmt.Errorf("the auth field of registry %s is not user:password", host)
			}
			cfg.Username, cfg.Password = user, pass
		}
		out = append(out, dockerEntry{host: host, path: path, auth: cfg})
	}
	sortEntries(out)
	return out, nil
}

func sortEntries(es []dockerEntry) {
	slices.SortFunc(es, func(a, b dockerEntry) int {
		if len(a.path) != len(b.path) {
			return len(b.path) - len(a.path)
		}
		return cmp.Or(strings.Compare(a.host, b.host), strings.Compare(a.path, b.path))
	})
}

// splitServer turns a docker config key ("https://index.docker.io/v1/",
// "registry.example.com:5000/team") into a canonical host and a repository
// path prefix.
func splitServer(key string) (host, path string) {
	k := strings.TrimSpace(key)
	k = strings.TrimPrefix(k, "https://")
	k = strings.TrimPrefix(k, "http://")
	host, path, _ = strings.Cut(k, "/")
	path = strings.Trim(path, "/")
	if path == "v1" || path == "v2" {
		path = ""
	}
	return canonicalHost(host), path
}

func canonicalHost(h string) string {
	h = strings.ToLower(h)
	switch h {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return name.DefaultRegistry
	}
	return h
}
