package terraformmachinetemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/authn/k8schain"
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

// MaxManifestBytes is the largest manifest or index an inspection reads:
// the size the OCI distribution specification asks every registry to
// accept, far above a module image's few kilobytes (a multi-platform index
// with attestations is under 10 KiB). A response that declares more is
// refused unread, and one that does not declare its length is read no
// further than the cap. Every other response of an inspection (a token, an
// error, a redirect's target) is held to the same cap.
const MaxManifestBytes = 4 << 20

// MaxConcurrentInspections is how many inspections read from registries at
// once, whatever --terraformmachinetemplate-concurrency says; a reconcile
// beyond it waits for a slot before its timeout starts. One inspection
// holds at most an index and an image manifest (MaxManifestBytes each) and
// a config blob (MaxConfigBytes), 12 MiB, about twice that while they are
// read into growing buffers and decoded: some 25 MiB, so 4 at once stay
// near 100 MiB, a fifth of the manager's 512 Mi memory limit, beside the
// informer caches that need the rest. Inspections are rare (once per
// template image), so 4 do not queue in practice.
const MaxConcurrentInspections = 4

// Inspector reads image config labels from a registry.
type Inspector struct {
	// Insecure reaches every registry over plain HTTP. Loopback and
	// private registries are tried over plain HTTP anyway.
	Insecure bool
	// AllowPrivate lets an inspection reach registries on addresses that
	// are not public: those of the special-purpose blocks that are not
	// globally reachable (specialRanges: loopback, private, shared,
	// link-local, unspecified, documentation and the rest). Off, such a
	// registry host is refused, whether the reference names the address
	// or a name that resolves to it (checked at connect time, redirects
	// included): a template's image is chosen by whoever may create the
	// template, and the manager must not become their probe of the
	// cluster's internal network.
	AllowPrivate bool
	// Platform picks the image of a multi-platform index.
	Platform v1.Platform
	// Transport, when set, carries the registry requests.
	Transport http.RoundTripper
	// UserAgent names CAPTF to the registry.
	UserAgent string
	// Timeout, when positive, bounds one inspection from the moment it
	// has a slot (MaxConcurrentInspections).
	Timeout time.Duration

	// resolver, when set, resolves registry names for the public-only
	// transport, and afterCheck, when set, runs after its address check
	// passed, just before connecting (tests: it refuses every connection,
	// so that nothing leaves the machine even when the check lets an
	// address through).
	resolver   *net.Resolver
	afterCheck func(network, address string, c syscall.RawConn) error

	slotsOnce sync.Once
	slots     chan struct{}
}

// acquire waits for one of the MaxConcurrentInspections slots; release
// gives it back.
func (in *Inspector) acquire(ctx context.Context) (release func(), err error) {
	in.slotsOnce.Do(func() { in.slots = make(chan struct{}, MaxConcurrentInspections) })
	select {
	case in.slots <- struct{}{}:
		return func() { <-in.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
	release, err := in.acquire(ctx)
	if err != nil {
		return nil, &InspectError{Reason: metrics.InspectRegistry, Err: fmt.Errorf("image %s: waiting for an inspection slot: %w", image, err)}
	}
	defer release()
	if in.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Timeout)
		defer cancel()
	}
	ropts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(kc),
		remote.WithPlatform(in.Platform),
	}
	if in.UserAgent != "" {
		ropts = append(ropts, remote.WithUserAgent(in.UserAgent))
	}
	var base http.RoundTripper
	switch {
	case in.Transport != nil:
		base = in.Transport
	case !in.AllowPrivate:
		base = publicOnlyTransport(in.resolver, in.afterCheck)
	default:
		base = remote.DefaultTransport
	}
	ropts = append(ropts, remote.WithTransport(&cappedTransport{next: base}))
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
var errPrivateRegistry = errors.New("not a public address; the manager's --allow-private-registries lets template image inspection reach it")

// privateRegistryError names the refused address and the special-purpose
// block that holds it.
func privateRegistryError(what string, host string, why string) error {
	return fmt.Errorf("%s %s is %s: %w", what, host, why, errPrivateRegistry)
}

// CheckRegistryHost refuses a registry host (host or host:port) that is
// localhost or an IP address in a special-purpose block that is not
// globally reachable (specialRanges: loopback, private, shared, link-local,
// documentation, NAT64 and 6to4 forms of those, and the rest). A name that
// resolves to such an address is refused when connecting
// (publicOnlyTransport).
func CheckRegistryHost(registry string) error {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return privateRegistryError("registry host", host, "localhost")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := nonPublic(ip); why != "" {
			return privateRegistryError("registry host", host, why)
		}
	}
	return nil
}

// publicOnlyTransport is the default transport with a dialer that refuses
// to connect to a non-public address, whatever name led to it (a DNS
// answer or a registry's redirect). resolver, when set, resolves names;
// afterCheck, when set, runs once an address passed the check.
func publicOnlyTransport(resolver *net.Resolver, afterCheck func(network, address string, c syscall.RawConn) error) http.RoundTripper {
	base, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		base = http.DefaultTransport.(*http.Transport)
	}
	t := base.Clone()
	d := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  resolver,
		// Control runs once the name is resolved, before the connection
		// is made: nothing is sent to a refused address.
		Control: refuseNonPublic,
	}
	if afterCheck != nil {
		d.Control = func(network, address string, c syscall.RawConn) error {
			if err := refuseNonPublic(network, address, c); err != nil {
				return err
			}
			return afterCheck(network, address, c)
		}
	}
	// A proxy from the environment is dialled instead of the registry: one
	// on a private address needs --allow-private-registries too.
	t.DialContext = d.DialContext
	return t
}

// refuseNonPublic is the dialer's check of the address it is about to
// connect to.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("registry address %s: %w", host, err)
	}
	if why := nonPublic(ip); why != "" {
		return privateRegistryError("registry address", ip.String(), why)
	}
	return nil
}

// cappedTransport holds every GET response of an inspection to
// MaxManifestBytes (the library would read a manifest of up to 100 MiB):
// a response that declares a larger body is refused before its body is
// read, and any other body fails once it passes the cap, never having
// read more than one byte past it.
type cappedTransport struct{ next http.RoundTripper }

func (t *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet {
		return resp, err
	}
	what := responseKind(req.URL.Path)
	if resp.ContentLength > MaxManifestBytes {
		_ = resp.Body.Close()
		return nil, &tooLargeError{what: what, size: resp.ContentLength}
	}
	resp.Body = &cappedBody{rc: resp.Body, left: MaxManifestBytes, what: what}
	return resp, nil
}

// responseKind names what a registry path holds, for the error.
func responseKind(path string) string {
	switch {
	case strings.Contains(path, "/manifests/"):
		return "manifest"
	case strings.Contains(path, "/blobs/"):
		return "blob"
	}
	return "response"
}

// tooLargeError is a registry response over MaxManifestBytes; size is what
// it declared, -1 when it declared nothing and sent more than the cap.
type tooLargeError struct {
	what string
	size int64
}

func (e *tooLargeError) Error() string {
	if e.size >= 0 {
		return fmt.Sprintf("the registry declares a %s of %d bytes, more than the %d bytes CAPTF reads; it was not read", e.what, e.size, int64(MaxManifestBytes))
	}
	return fmt.Sprintf("the registry sent a %s of more than %d bytes, the most CAPTF reads; reading stopped there", e.what, int64(MaxManifestBytes))
}

// cappedBody fails a body once it passes its cap.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	what string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &tooLargeError{what: b.what, size: -1}
	}
	// One byte past the cap tells a body of exactly the cap from a longer
	// one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, &tooLargeError{what: b.what, size: -1}
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// classify maps a registry failure onto a bounded reason. A registry's
// response body never reaches the message (it ends up in a condition and
// an event): an HTTP failure is described by its status code and the
// registry's error codes only.
func classify(image string, err error) *InspectError {
	wrapped := fmt.Errorf("failed to read the config of image %s: %w", image, err)
	var tl *tooLargeError
	if errors.As(err, &tl) {
		return &InspectError{Reason: metrics.InspectRegistry, Err: fmt.Errorf("image %s: %w", image, tl)}
	}
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

// Keychain builds the keychain an inspection reads the image with, from the
// credential sources the kubelet would use to pull it for the template's
// Jobs, through go-containerregistry's Kubernetes keychain (k8schain): the
// image pull Secrets named in namespace (the template's
// spec.template.spec.jobs.imagePullSecrets), then those of the ServiceAccount
// the Jobs run as, then the manager's own docker config and the cloud
// registries' credential helpers (Amazon ECR, Google Container and Artifact
// Registry, Azure Container Registry), each of which answers only for its
// own registries. Entries match as the kubelet matches them: the longest
// matching key wins, a key's path must prefix the repository's, and a
// wildcard host (*.registry.example.com) matches one DNS label. A registry
// nothing names is reached anonymously.
//
// Secrets and the ServiceAccount are read through r. One that does not
// exist is skipped, as the kubelet skips it; one that cannot be read, or a
// Secret that is not a docker config of its type, is an error naming it
// (never its content).
func Keychain(ctx context.Context, r client.Reader, namespace, serviceAccount string, refs []corev1.LocalObjectReference) (authn.Keychain, error) {
	secrets, err := pullSecrets(ctx, r, namespace, refs)
	if err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: serviceAccount}, sa); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, &InspectError{Reason: metrics.InspectAuth, Err: fmt.Errorf("failed to read the runner ServiceAccount %s/%s: %w", namespace, serviceAccount, err)}
	default:
		own, err := pullSecrets(ctx, r, namespace, sa.ImagePullSecrets)
		if err != nil {
			return nil, err
		}
		secrets = append(secrets, own...)
	}
	kc, err := k8schain.NewFromPullSecrets(ctx, secrets)
	if err != nil {
		// pullSecrets parsed each Secret already; say which ones, not why.
		names := make([]string, len(secrets))
		for i, s := range secrets {
			names[i] = namespace + "/" + s.Name
		}
		return nil, &InspectError{Reason: metrics.InspectAuth, Err: fmt.Errorf("the image pull Secrets %s cannot be used as docker configs", strings.Join(names, ", "))}
	}
	return kc, nil
}

// pullSecrets reads the docker config Secrets refs name in namespace,
// skipping those that do not exist, and checks each is one the kubelet
// would use.
func pullSecrets(ctx context.Context, r client.Reader, namespace string, refs []corev1.LocalObjectReference) ([]corev1.Secret, error) {
	var out []corev1.Secret
	for _, ref := range refs {
		s := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, &InspectError{Reason: metrics.InspectAuth, Err: fmt.Errorf("failed to read image pull Secret %s/%s: %w", namespace, ref.Name, err)}
		}
		if err := checkDockerConfig(s); err != nil {
			return nil, &InspectError{Reason: metrics.InspectAuth, Err: fmt.Errorf("image pull Secret %s/%s: %w", namespace, ref.Name, err)}
		}
		out = append(out, *s)
	}
	return out, nil
}

// checkDockerConfig reports why s is no docker config the kubelet reads: a
// kubernetes.io/dockerconfigjson Secret with .dockerconfigjson, or a
// kubernetes.io/dockercfg one with .dockercfg, whose auth fields decode.
// The parser's own errors can quote the Secret's bytes, so they are not
// passed on.
func checkDockerConfig(s *corev1.Secret) error {
	var key string
	var want corev1.SecretType
	var cfg any
	switch {
	case s.Data[corev1.DockerConfigJsonKey] != nil:
		key, want = corev1.DockerConfigJsonKey, corev1.SecretTypeDockerConfigJson
		cfg = &struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}{}
	case s.Data[corev1.DockerConfigKey] != nil:
		key, want = corev1.DockerConfigKey, corev1.SecretTypeDockercfg
		cfg = &map[string]authn.AuthConfig{}
	default:
		return fmt.Errorf("has neither %s nor %s", corev1.DockerConfigJsonKey, corev1.DockerConfigKey)
	}
	if json.Unmarshal(s.Data[key], cfg) != nil {
		return fmt.Errorf("key %s is not a docker config (or an auth field in it is not base64 of user:password)", key)
	}
	if s.Type != want {
		return fmt.Errorf("has the key %s but the type %q, not %s, so the kubelet ignores it", key, s.Type, want)
	}
	return nil
}
