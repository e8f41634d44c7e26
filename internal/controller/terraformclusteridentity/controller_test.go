package terraformclusteridentity

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// sentinel is a credential value that must never appear in status or
// events.
const sentinel = "captf-sentinel-credential-5f1e"

var (
	cfg    *rest.Config
	scheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = infrav1.AddToScheme(scheme)
	root, err := tools.RepoRoot()
	if err != nil {
		panic(err)
	}
	env, c, err := envtest.Start(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		panic(err)
	}
	cfg = c
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// startManager runs the controller in a manager whose Secret cache holds
// only CAPTF's own Secrets, as the real manager's does.
func startManager(t *testing.T, o Options) client.Client {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Logger:  zap.New(zap.UseDevMode(true), zap.WriteTo(envtest.TestLog(t))),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Each test runs its own manager in this one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{infrav1.ManagedLabel: "true"})},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := Setup(ctx, mgr, o); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func newIdentity(name string, lbls map[string]string) *infrav1.TerraformClusterIdentity {
	return &infrav1.TerraformClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Name: name + "-creds", Namespace: "captf-creds"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}},
		},
	}
}

// mirror is identityName's credential mirror in namespace as the
// credentials step writes it, owned by owners (a mirror counts only with
// an owner that exists).
func mirror(namespace, identityName string, owners ...*infrav1.TerraformCluster) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: identity.MirrorName(identityName), Namespace: namespace,
			Labels:      identity.MirrorLabels(),
			Annotations: map[string]string{infrav1.IdentityAnnotation: identityName, infrav1.SourceHashAnnotation: "h"},
		},
		Data: map[string][]byte{"TOKEN": []byte(sentinel)},
	}
	for _, o := range owners {
		s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{
			APIVersion: infrav1.GroupVersion.String(), Kind: "TerraformCluster", Name: o.Name, UID: o.UID})
	}
	return s
}

// user creates a TerraformCluster of identityName in namespace.
func user(t *testing.T, c client.Client, namespace, identityName string) *infrav1.TerraformCluster {
	t.Helper()
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "uses-" + identityName, Namespace: namespace}}
	tc.Spec.Source.Image = "registry.example/module:v1"
	tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: identityName}
	create(t, c, tc)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc), tc); err != nil {
		t.Fatal(err)
	}
	return tc
}

func ready(c client.Client, name string) (*infrav1.TerraformClusterIdentity, *metav1.Condition) {
	id := &infrav1.TerraformClusterIdentity{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, id); err != nil {
		return nil, nil
	}
	return id, meta.FindStatusCondition(id.Status.Conditions, infrav1.ReadyCondition)
}

func eventsFor(t *testing.T, c client.Client, name string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := c.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "TerraformClusterIdentity" && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func reasons(evs []eventsv1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	slices.Sort(out)
	return out
}

// TestIdentityStatus covers the book's "Confirm it worked": Ready is
// True/SecretFound once the Secret exists, False/SecretNotFound otherwise,
// and status.namespaces lists every namespace it allows holding a mirror
// CAPTF made.
func TestIdentityStatus(t *testing.T) {
	c := startManager(t, Options{SyncPeriod: time.Second})
	ctx := context.Background()
	create(t, c, namespace("captf-creds"), namespace("tenant-a"), namespace("tenant-b"), namespace("tenant-c"))
	create(t, c, newIdentity("cloud", nil))

	t.Run("missing Secret is Ready False/SecretNotFound with a Warning event in default", func(t *testing.T) {
		envtest.Eventually(t, 30*time.Second, "Ready False", func() (bool, string) {
			_, r := ready(c, "cloud")
			return r != nil && r.Status == metav1.ConditionFalse && r.Reason == infrav1.SecretNotFoundReason, "ready " + condString(r)
		})
		envtest.Eventually(t, 30*time.Second, "IdentitySecretNotFound event", func() (bool, string) {
			evs := eventsFor(t, c, "cloud")
			return slices.Contains(reasons(evs), infrav1.IdentitySecretNotFoundEvent), strings.Join(reasons(evs), ",")
		})
		for _, e := range eventsFor(t, c, "cloud") {
			if e.Type != corev1.EventTypeWarning || e.Namespace != metav1.NamespaceDefault || e.ReportingController != "captf.io/manager" {
				t.Errorf("event %s: type %s namespace %s controller %s", e.Reason, e.Type, e.Namespace, e.ReportingController)
			}
		}
	})

	t.Run("the Secret appearing is picked up within a sync period: Ready True/SecretFound", func(t *testing.T) {
		create(t, c, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cloud-creds", Namespace: "captf-creds"},
			Data:       map[string][]byte{"TOKEN": []byte(sentinel)},
		})
		envtest.Eventually(t, 30*time.Second, "Ready True", func() (bool, string) {
			_, r := ready(c, "cloud")
			return r != nil && r.Status == metav1.ConditionTrue && r.Reason == infrav1.SecretFoundReason, "ready " + condString(r)
		})
		envtest.Eventually(t, 30*time.Second, "IdentitySecretFound event", func() (bool, string) {
			evs := eventsFor(t, c, "cloud")
			return slices.Contains(reasons(evs), infrav1.IdentitySecretFoundEvent), strings.Join(reasons(evs), ",")
		})
	})

	t.Run("status.namespaces follows the mirrors at once", func(t *testing.T) {
		create(t, c, mirror("tenant-b", "cloud", user(t, c, "tenant-b", "cloud")), mirror("tenant-a", "cloud", user(t, c, "tenant-a", "cloud")),
			mirror("tenant-a", "other", user(t, c, "tenant-a", "other")),
			// Not CAPTF's: no owner.
			mirror("tenant-c", "cloud"))
		envtest.Eventually(t, 30*time.Second, "namespaces [tenant-a tenant-b]", func() (bool, string) {
			id, _ := ready(c, "cloud")
			return id != nil && slices.Equal(id.Status.Namespaces, []string{"tenant-a", "tenant-b"}), strings.Join(id.Status.Namespaces, ",")
		})
		if err := c.Delete(ctx, mirror("tenant-b", "cloud")); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, 30*time.Second, "namespaces [tenant-a]", func() (bool, string) {
			id, _ := ready(c, "cloud")
			return id != nil && slices.Equal(id.Status.Namespaces, []string{"tenant-a"}), strings.Join(id.Status.Namespaces, ",")
		})
	})

	t.Run("a pass that observes nothing new writes nothing", func(t *testing.T) {
		id, _ := ready(c, "cloud")
		rv := id.ResourceVersion
		time.Sleep(3 * time.Second) // three sync periods
		id, _ = ready(c, "cloud")
		if id.ResourceVersion != rv {
			t.Errorf("resourceVersion moved from %s to %s with nothing changed", rv, id.ResourceVersion)
		}
		if n := len(eventsFor(t, c, "cloud")); n != 2 {
			t.Errorf("%d events, want 2 (one per transition): %v", n, reasons(eventsFor(t, c, "cloud")))
		}
	})

	t.Run("the Secret going missing is Ready False/SecretNotFound again", func(t *testing.T) {
		if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud-creds", Namespace: "captf-creds"}}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, 30*time.Second, "Ready False", func() (bool, string) {
			_, r := ready(c, "cloud")
			return r != nil && r.Status == metav1.ConditionFalse, "ready " + condString(r)
		})
	})

	t.Run("no credential value in status or events", func(t *testing.T) {
		id, _ := ready(c, "cloud")
		for _, cond := range id.Status.Conditions {
			if strings.Contains(cond.Message, sentinel) {
				t.Errorf("condition %s carries the credential", cond.Type)
			}
		}
		for _, e := range eventsFor(t, c, "cloud") {
			if strings.Contains(e.Note, sentinel) {
				t.Errorf("event %s carries the credential", e.Reason)
			}
		}
	})
}

// TestWatchFilter: with --watch-filter only labeled identities reconcile.
func TestWatchFilter(t *testing.T) {
	c := startManager(t, Options{SyncPeriod: time.Second, WatchFilter: "mine"})
	create(t, c, newIdentity("filtered-in", map[string]string{clusterv1.WatchLabel: "mine"}), newIdentity("filtered-out", nil))
	create(t, c, namespace("tenant-f"), mirror("tenant-f", "filtered-out"))
	envtest.Eventually(t, 30*time.Second, "labeled identity reconciled", func() (bool, string) {
		_, r := ready(c, "filtered-in")
		return r != nil, "no Ready"
	})
	time.Sleep(2 * time.Second)
	if id, r := ready(c, "filtered-out"); r != nil || len(id.Status.Namespaces) > 0 {
		t.Errorf("unlabeled identity was reconciled: %+v", id.Status)
	}
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return "<nil>"
	}
	return string(c.Status) + "/" + c.Reason + ": " + c.Message
}

// TestSourceChangesWakeTheIdentity: with the manager's SourceWatch, the
// identity's source Secret appearing or going is seen at once, not at the
// next sync period (here an hour away).
func TestSourceChangesWakeTheIdentity(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clients, err := corev1client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	live, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := startManager(t, Options{SyncPeriod: time.Hour, Sources: identity.NewSourceWatch(ctx, clients, live)})
	create(t, c, namespace("captf-watched"))
	id := newIdentity("watched", nil)
	id.Spec.SecretRef.Namespace = "captf-watched"
	create(t, c, id)
	envtest.Eventually(t, 30*time.Second, "Ready False", func() (bool, string) {
		_, r := ready(c, "watched")
		return r != nil && r.Reason == infrav1.SecretNotFoundReason, "ready " + condString(r)
	})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: id.Spec.SecretRef.Name, Namespace: "captf-watched"}, Data: map[string][]byte{"TOKEN": []byte(sentinel)}}
	create(t, c, secret)
	envtest.Eventually(t, 30*time.Second, "Ready True", func() (bool, string) {
		_, r := ready(c, "watched")
		return r != nil && r.Reason == infrav1.SecretFoundReason, "ready " + condString(r)
	})
	if err := c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, "Ready False again", func() (bool, string) {
		_, r := ready(c, "watched")
		return r != nil && r.Reason == infrav1.SecretNotFoundReason, "ready " + condString(r)
	})
}
