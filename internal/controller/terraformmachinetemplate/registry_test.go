package terraformmachinetemplate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

const (
	regUser = "captf"
	regPass = "captf-sentinel-registry-password-93c1"
)

// testRegistry is an in-process OCI registry; with auth it demands HTTP
// basic credentials regUser:regPass, as a private registry would.
type testRegistry struct {
	host string
	auth bool
}

func startRegistry(t testing.TB, auth bool) *testRegistry {
	t.Helper()
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	if auth {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != regUser || p != regPass {
				w.Header().Set("WWW-Authenticate", `Basic realm="captf-test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testRegistry{host: strings.TrimPrefix(srv.URL, "http://"), auth: auth}
}

// push builds an image with labels (module-image shaped: one small file,
// USER 65532) and pushes it to repo:tag.
func (r *testRegistry) push(t testing.TB, repoTag string, labels map[string]string) string {
	t.Helper()
	img, err := imagebuild.Build(imagebuild.Spec{
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		User:     "65532",
		Labels:   labels,
		Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
			{Path: contract.ModuleDir + "/main.tf", Mode: 0o644, UID: 65532, GID: 65532, Data: []byte("# machine\n")},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ref := r.host + "/" + repoTag
	var opts []remote.Option
	if r.auth {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: regUser, Password: regPass}))
	}
	if _, err := imagebuild.Push(context.Background(), ref, img, true, opts...); err != nil {
		t.Fatal(err)
	}
	return ref
}

func dockerConfigSecret(namespace, secretName, server, user, pass string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{server: map[string]string{"auth": auth}}})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: namespace},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: b},
	}
}

func fakeReader(t *testing.T, objs ...client.Object) *fake.ClientBuilder {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	return b
}

// TestInspectorReadsConfigLabels reads labels from a real registry, and
// maps failures onto bounded reasons.
func TestInspectorReadsConfigLabels(t *testing.T) {
	ctx := context.Background()
	open := startRegistry(t, false)
	ref := open.push(t, "machine:v1", map[string]string{contract.LabelCapacity: `{"cpu":"2"}`})
	in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, AllowPrivate: true}

	labels, err := in.Labels(ctx, ref, authn.NewMultiKeychain())
	if err != nil {
		t.Fatal(err)
	}
	if labels[contract.LabelCapacity] != `{"cpu":"2"}` {
		t.Errorf("labels %v", labels)
	}

	for _, c := range []struct {
		name, ref, reason string
	}{
		{"a tag the registry does not hold is not_found", open.host + "/machine:missing", metrics.InspectNotFound},
		{"a repository the registry does not hold is not_found", open.host + "/nothing:v1", metrics.InspectNotFound},
		{"a reference that does not parse is reference", "Not A Reference", metrics.InspectReference},
		{"an unreachable registry is registry", "127.0.0.1:1/machine:v1", metrics.InspectRegistry},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := in.Labels(ctx, c.ref, authn.NewMultiKeychain())
			var ie *InspectError
			if !errors.As(err, &ie) || ie.Reason != c.reason {
				t.Fatalf("error %v, want reason %s", err, c.reason)
			}
		})
	}
}

// TestPullSecretsAuthenticate: "honour spec.template.spec.jobs.imagePullSecrets".
func TestPullSecretsAuthenticate(t *testing.T) {
	ctx := context.Background()
	private := startRegistry(t, true)
	ref := private.push(t, "machine:v1", map[string]string{contract.LabelNodeInfo: `{"architecture":"amd64"}`})
	in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, AllowPrivate: true}

	t.Run("without credentials the registry refuses: auth", func(t *testing.T) {
		kc, err := Keychain(ctx, fakeReader(t).Build(), "ns", "captf-runner", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = in.Labels(ctx, ref, kc)
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Reason != metrics.InspectAuth {
			t.Fatalf("error %v, want reason auth", err)
		}
		if strings.Contains(err.Error(), regPass) {
			t.Errorf("error carries the password")
		}
	})
	t.Run("the pull Secret's credentials are used; a missing Secret is skipped", func(t *testing.T) {
		r := fakeReader(t, dockerConfigSecret("ns", "pull", "http://"+private.host, regUser, regPass)).Build()
		kc, err := Keychain(ctx, r, "ns", "captf-runner", []corev1.LocalObjectReference{{Name: "absent"}, {Name: "pull"}})
		if err != nil {
			t.Fatal(err)
		}
		labels, err := in.Labels(ctx, ref, kc)
		if err != nil {
			t.Fatal(err)
		}
		if labels[contract.LabelNodeInfo] == "" {
			t.Errorf("labels %v", labels)
		}
	})
	t.Run("wrong credentials: auth, and the error never names the password", func(t *testing.T) {
		r := fakeReader(t, dockerConfigSecret("ns", "pull", private.host, regUser, "wrong-"+regPass)).Build()
		kc, err := Keychain(ctx, r, "ns", "captf-runner", []corev1.LocalObjectReference{{Name: "pull"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = in.Labels(ctx, ref, kc)
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Reason != metrics.InspectAuth {
			t.Fatalf("error %v, want reason auth", err)
		}
		if strings.Contains(err.Error(), regPass) {
			t.Errorf("error carries the password")
		}
	})
	t.Run("a pull Secret that is not a docker config is an error naming it, not its content", func(t *testing.T) {
		bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "ns"},
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(regPass)}}
		_, err := Keychain(ctx, fakeReader(t, bad).Build(), "ns", "captf-runner", []corev1.LocalObjectReference{{Name: "bad"}})
		if err == nil || !strings.Contains(err.Error(), "ns/bad") || strings.Contains(err.Error(), regPass) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("a pull Secret whose type is not its key's is an error saying the kubelet ignores it", func(t *testing.T) {
		opaque := dockerConfigSecret("ns", "opaque", private.host, regUser, regPass)
		opaque.Type = corev1.SecretTypeOpaque
		_, err := Keychain(ctx, fakeReader(t, opaque).Build(), "ns", "captf-runner", []corev1.LocalObjectReference{{Name: "opaque"}})
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Reason != metrics.InspectAuth || !strings.Contains(err.Error(), "ns/opaque") ||
			!strings.Contains(err.Error(), "the kubelet ignores it") || strings.Contains(err.Error(), regPass) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("the runner ServiceAccount's image pull Secrets are used", func(t *testing.T) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "captf-runner", Namespace: "ns"},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "absent"}, {Name: "sa-pull"}}}
		r := fakeReader(t, sa, dockerConfigSecret("ns", "sa-pull", private.host, regUser, regPass)).Build()
		kc, err := Keychain(ctx, r, "ns", "captf-runner", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Labels(ctx, ref, kc); err != nil {
			t.Fatal(err)
		}
		// Another ServiceAccount's Secrets are not the Jobs'.
		kc, err = Keychain(ctx, r, "ns", "other", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Labels(ctx, ref, kc); err == nil {
			t.Fatal("the Secrets of a ServiceAccount the Jobs do not run as authenticated")
		}
	})
	t.Run("a ServiceAccount that cannot be read is an auth error naming it", func(t *testing.T) {
		r := fakeReader(t).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.ServiceAccount); ok {
					return apierrors.NewForbidden(corev1.Resource("serviceaccounts"), key.Name, errors.New("no grant"))
				}
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build()
		_, err := Keychain(ctx, r, "ns", "captf-runner", nil)
		var ie *InspectError
		if !errors.As(err, &ie) || ie.Reason != metrics.InspectAuth || !strings.Contains(err.Error(), "ServiceAccount ns/captf-runner") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("the manager's docker config is a credential source after the Secrets", func(t *testing.T) {
		dir := t.TempDir()
		auth := base64.StdEncoding.EncodeToString([]byte(regUser + ":" + regPass))
		cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{private.host: map[string]string{"auth": auth}}})
		if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", dir)
		kc, err := Keychain(ctx, fakeReader(t).Build(), "ns", "captf-runner", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Labels(ctx, ref, kc); err != nil {
			t.Fatal(err)
		}
	})
}

// TestKeychainMatching: pull Secret entries match image references as the
// kubelet matches them.
func TestKeychainMatching(t *testing.T) {
	entries := func(servers ...string) authn.Keychain {
		var objs []client.Object
		var refs []corev1.LocalObjectReference
		for i, server := range servers {
			name := fmt.Sprintf("pull-%d", i)
			objs = append(objs, dockerConfigSecret("ns", name, server, string(rune('a'+i)), "p"))
			refs = append(refs, corev1.LocalObjectReference{Name: name})
		}
		kc, err := Keychain(context.Background(), fakeReader(t, objs...).Build(), "ns", "captf-runner", refs)
		if err != nil {
			t.Fatal(err)
		}
		return kc
	}
	for _, c := range []struct {
		name    string
		servers []string
		ref     string
		want    string // username, "" = anonymous
	}{
		{"a docker hub key in its legacy form matches docker.io images", []string{"https://index.docker.io/v1/"}, "docker.io/library/busybox:1", "a"},
		{"a host key matches any repository of that host", []string{"registry.example.com"}, "registry.example.com/team/machine:v1", "a"},
		{"a host:port key matches only that port", []string{"registry.example.com:5000"}, "registry.example.com/team/machine:v1", ""},
		{"a path key is preferred over a host key", []string{"registry.example.com", "registry.example.com/team"}, "registry.example.com/team/machine:v1", "b"},
		{"a path key matches the repositories it prefixes, as the kubelet's does", []string{"registry.example.com/team"}, "registry.example.com/team/machine:v1", "a"},
		{"a path key does not match another path", []string{"registry.example.com/team"}, "registry.example.com/other/machine:v1", ""},
		{"a wildcard host matches one DNS label", []string{"*.example.com"}, "registry.example.com/team/machine:v1", "a"},
		{"a wildcard host does not match two labels", []string{"*.example.com"}, "eu.registry.example.com/team/machine:v1", ""},
		{"another registry is reached anonymously", []string{"registry.example.com"}, "other.example.com/machine:v1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref, err := name.ParseReference(c.ref)
			if err != nil {
				t.Fatal(err)
			}
			a, err := entries(c.servers...).Resolve(ref.Context())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := a.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Username != c.want {
				t.Errorf("username %q, want %q", cfg.Username, c.want)
			}
		})
	}
}
