package terraformmachinetemplate

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

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

// Inspector reads image config labels from a registry.
type Inspector struct {
	// Insecure reaches every registry over plain HTTP. Loopback and
	// private registries are tried over plain HTTP anyway.
	Insecure bool
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
	ropts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(kc),
		remote.WithPlatform(in.Platform),
	}
	if in.UserAgent != "" {
		ropts = append(ropts, remote.WithUserAgent(in.UserAgent))
	}
	if in.Transport != nil {
		ropts = append(ropts, remote.WithTransport(in.Transport))
	}
	img, err := remote.Image(ref, ropts...)
	if err != nil {
		return nil, classify(image, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, classify(image, err)
	}
	return cfg.Config.Labels, nil
}

// classify maps a registry failure onto a bounded reason.
func classify(image string, err error) *InspectError {
	wrapped := fmt.Errorf("failed to read the config of image %s: %w", image, err)
	var te *transport.Error
	if errors.As(err, &te) {
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
