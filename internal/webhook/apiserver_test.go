package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/admission"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// These tests go through a real kube-apiserver: the manager (internal/setup)
// serves the webhooks on 127.0.0.1 and config/webhook's configuration,
// pointed at it, is installed, as in the local environment.

var (
	cfg    *rest.Config
	scheme = setup.NewScheme()
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	code, err := runWithAPIServer(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithAPIServer(m *testing.M) (int, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return 0, err
	}
	sets, err := capi.CRDs()
	if err != nil {
		return 0, err
	}
	env, c, err := envtest.Start(filepath.Join(root, "config", "crd", "bases"), sets[0].Path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	cfg = c
	dir, err := os.MkdirTemp("", "captf-webhook-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	ca, err := admission.Certs(dir)
	if err != nil {
		return 0, err
	}
	port, err := admission.FreePort()
	if err != nil {
		return 0, err
	}
	o := setup.DefaultOptions()
	o.RunnerImage = "registry.example/captf/runner:v1"
	o.DiagnosticsAddress, o.HealthAddr = "0", "0"
	o.SkipControllerNameValidation = true
	o.WebhookHost, o.WebhookPort, o.WebhookCertDir = "127.0.0.1", port, dir
	o.Logger = zap.New(zap.WriteTo(io.Discard))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := setup.New(ctx, cfg, o)
	if err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	remove, err := admission.InstallWhenServing(wctx, cfg, mgr.GetWebhookServer(), "CAPTF",
		filepath.Join(root, "config", "webhook", "manifests.yaml"), port, ca)
	if err != nil {
		return 0, err
	}
	code := m.Run()
	remove()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return code, err
	}
	return code, nil
}

func adminClient(t *testing.T) client.Client {
	t.Helper()
	if cfg == nil {
		t.Skip("no API server in -short mode")
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// as returns a client impersonating user (in system:authenticated).
func as(t *testing.T, user string) client.Client {
	t.Helper()
	ic := rest.CopyConfig(cfg)
	ic.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(ic, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func ns(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// refused fails unless err is an admission refusal naming want.
func refused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal naming %s", want)
	}
	if !strings.Contains(err.Error(), "admission webhook") || !strings.Contains(err.Error(), want) {
		t.Fatalf("want a webhook refusal naming %q, got: %v", want, err)
	}
}

// update reads obj afresh, applies change and updates it, again on a
// conflict (the manager's controllers write the same objects: finalizers,
// status).
func update(c client.Client, obj client.Object, change func(), opts ...client.UpdateOption) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return c.Update(context.Background(), obj, opts...)
	})
}

func image(s string) infrav1.SourceSpec {
	return infrav1.SourceSpec{Image: "registry.example/captf/" + s + ":v1"}
}

// TestRefusedThroughAdmission: rules CEL cannot hold are enforced by the
// webhook on a real request (Module Variables names, image syntax, jobs
// isolation, TerraformMachine variables immutability). A serviceAccountName
// that is not a DNS subdomain is refused by the CRD schema before the
// webhook sees it (api/v1alpha1 TestCRDRejectsInvalidObjects); the webhook
// keeps the check for objects stored before the schema held it.
func TestRefusedThroughAdmission(t *testing.T) {
	c := adminClient(t)
	ctx := context.Background()
	mustCreate(t, c, ns("admission"))
	for _, tt := range []struct {
		name  string
		obj   client.Object
		field string
	}{
		{"machine input as a variable", &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "admission"},
			Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("m"),
				Variables: map[string]apiextensionsv1.JSON{"machine_name": {Raw: []byte(`"x"`)}}}}}, "spec.variables[machine_name]"},
		{"malformed image", &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Name: "i", Namespace: "admission"},
			Spec: infrav1.TerraformMachinePoolSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: "Registry/UPPER::v1"}}}}, "spec.source.image"},
		{"unconfined seccomp", &infrav1.TerraformClusterTemplate{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "admission"},
			Spec: infrav1.TerraformClusterTemplateSpec{Template: infrav1.TerraformClusterTemplateResource{Spec: infrav1.TerraformClusterSpec{
				WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("c"), Jobs: &infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}}}}}}}, "spec.template.spec.jobs.podSecurityContext.seccompProfile.type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, c.Create(ctx, tt.obj), tt.field)
		})
	}

	t.Run("TerraformMachine variables are immutable", func(t *testing.T) {
		tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "immutable", Namespace: "admission"},
			Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("m"),
				Variables: map[string]apiextensionsv1.JSON{"size": {Raw: []byte(`"small"`)}}}}}
		mustCreate(t, c, tm)
		refused(t, update(c, tm, func() { tm.Spec.Variables["size"] = apiextensionsv1.JSON{Raw: []byte(`"large"`)} }), "spec.variables")
		if err := update(c, tm, func() { tm.Spec.Drift = &infrav1.MachineDriftPolicy{IntervalSeconds: ptr.To[int32](0)} }); err != nil {
			t.Fatalf("drift is mutable, yet: %v", err)
		}
	})
}

// TestTemplateImmutableExceptClusterClassDryRun: a real change to a
// template's spec.template.spec is refused; the same change as a
// ClusterClass topology dry-run (server-side dry-run carrying
// topology.cluster.x-k8s.io/dry-run) passes; metadata stays mutable.
func TestTemplateImmutableExceptClusterClassDryRun(t *testing.T) {
	c := adminClient(t)
	mustCreate(t, c, ns("templates"))
	tmt := &infrav1.TerraformMachineTemplate{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: "templates"}}
	tmt.Spec.Template.Spec.Source = image("m")
	mustCreate(t, c, tmt)

	o := tmt.DeepCopy()
	refused(t, update(c, o, func() { o.Spec.Template.Spec.Source = image("m2") }), "spec.template.spec")

	dry := tmt.DeepCopy()
	err := update(c, dry, func() {
		dry.Spec.Template.Spec.Source = image("m2")
		dry.Annotations = map[string]string{clusterv1.TopologyDryRunAnnotation: ""}
	}, client.DryRunAll)
	if err != nil {
		t.Fatalf("the ClusterClass dry-run was refused: %v", err)
	}
	// Not a dry-run, though annotated: refused.
	annotated := tmt.DeepCopy()
	refused(t, update(c, annotated, func() {
		annotated.Spec.Template.Spec.Source = image("m2")
		annotated.Annotations = map[string]string{clusterv1.TopologyDryRunAnnotation: ""}
	}), "spec.template.spec")

	labelled := tmt.DeepCopy()
	if err := update(c, labelled, func() { labelled.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "a"} }); err != nil {
		t.Fatalf("spec.template.metadata is mutable, yet: %v", err)
	}
}

// TestIdentitySubjectAccessReview: creating an identity, or repointing its
// secretRef, needs get on the named Secret (Identities and Credentials).
// alice may manage identities but read only her own namespace's Secrets;
// bob may also read the Secret in kube-system.
func TestIdentitySubjectAccessReview(t *testing.T) {
	admin := adminClient(t)
	ctx := context.Background()
	const sentinel = "root-credential-sentinel-7c1e"
	mustCreate(t, admin, ns("alice-creds"), ns("sar-tenant"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud-root", Namespace: "kube-system"}, Data: map[string][]byte{"KEY": []byte(sentinel)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "alice-creds"}, Data: map[string][]byte{"KEY": []byte("alice")}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "identity-manager"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"terraformclusteridentities"},
			Verbs: []string{"get", "list", "create", "update", "patch", "delete"},
		}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"},
		}}},
	)
	for _, u := range []string{"alice", "bob"} {
		mustCreate(t, admin, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "identity-manager-" + u},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "identity-manager"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u}}})
	}
	mustCreate(t, admin,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads", Namespace: "alice-creds"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-reads", Namespace: "kube-system"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}},
	)
	identity := func(name, secretNS, secret string) *infrav1.TerraformClusterIdentity {
		return &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: secretNS, Name: secret},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{"sar-tenant"}},
		}}
	}
	alice, bob := as(t, "alice"), as(t, "bob")

	// RBAC takes a moment to reach the authorizer's cache.
	envtest.Eventually(t, 30*time.Second, "alice's own identity to be allowed", func() (bool, string) {
		err := alice.Create(ctx, identity("alice-own", "alice-creds", "alice"))
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	t.Run("refused when the creator cannot get the Secret", func(t *testing.T) {
		err := alice.Create(ctx, identity("alice-root", "kube-system", "cloud-root"))
		refused(t, err, "spec.secretRef")
		if strings.Contains(err.Error(), sentinel) {
			t.Fatal("the refusal carries the Secret's value")
		}
	})
	t.Run("repointing at a Secret the user cannot get is refused", func(t *testing.T) {
		own := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "alice-own"}}
		refused(t, update(alice, own, func() { own.Spec.SecretRef = infrav1.SecretReference{Namespace: "kube-system", Name: "cloud-root"} }), "spec.secretRef")
		// Widening allowedNamespaces needs get on the Secret the
		// identity names, which alice has for her own.
		if err := update(alice, own, func() { own.Spec.AllowedNamespaces.List = append(own.Spec.AllowedNamespaces.List, "other") }); err != nil {
			t.Fatalf("widening an identity whose Secret she can get was refused: %v", err)
		}
	})
	t.Run("allowed when the creator can get the Secret", func(t *testing.T) {
		if err := bob.Create(ctx, identity("bob-root", "kube-system", "cloud-root")); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
	t.Run("no mirror of the refused Secret appears", func(t *testing.T) {
		// An object in the allowed namespace uses alice's identity: only
		// her own Secret may ever be mirrored for it.
		mustCreate(t, admin, &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "uses-alice", Namespace: "sar-tenant"},
			Spec: infrav1.TerraformClusterSpec{IdentityRef: &infrav1.IdentityReference{Name: "alice-own"}, WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("c")}}})
		time.Sleep(2 * time.Second)
		secrets := &corev1.SecretList{}
		if err := admin.List(ctx, secrets); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			for _, v := range s.Data {
				if bytes.Contains(v, []byte(sentinel)) && (s.Namespace != "kube-system" || s.Name != "cloud-root") {
					t.Errorf("Secret %s/%s holds the kube-system Secret's value", s.Namespace, s.Name)
				}
			}
		}
	})
}

// TestIdentityDeleteGuard: an identity in use in a namespace it allows
// cannot be deleted; once unused (and mirrored nowhere) it can.
func TestIdentityDeleteGuard(t *testing.T) {
	c := adminClient(t)
	ctx := context.Background()
	mustCreate(t, c, ns("guard-tenant"), ns("guard-creds"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "guard-creds"}, Data: map[string][]byte{"K": []byte("v")}},
		&infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}, Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: "guard-creds", Name: "creds"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{"guard-tenant"}}}},
	)
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "guard-tenant"},
		Spec: infrav1.TerraformClusterSpec{IdentityRef: &infrav1.IdentityReference{Name: "guarded"}, WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("c")}}}
	mustCreate(t, c, tc)
	id := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}}
	refused(t, c.Delete(ctx, id), "TerraformCluster guard-tenant/user")

	if err := c.Delete(ctx, tc); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, "the unused identity to be deletable", func() (bool, string) {
		err := c.Delete(ctx, id)
		return err == nil || apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestMachineDeleteGuard: a TerraformMachine owned by a live Machine that
// passes the owner checks cannot be deleted directly; delete-for-move is
// honoured only while the Cluster is paused; once the Machine is gone the
// TerraformMachine can be deleted; an owner that does not reference the
// TerraformMachine back does not hold it.
func TestMachineDeleteGuard(t *testing.T) {
	c := adminClient(t)
	ctx := context.Background()
	const namespace = "machine-guard"
	mustCreate(t, c, ns(namespace))
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: namespace}, Spec: clusterv1.ClusterSpec{Paused: ptr.To(false)}}
	mustCreate(t, c, cluster)
	machine := func(name, infra string) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: clusterv1.MachineSpec{
			ClusterName: "c1", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("boot")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachine", Name: infra},
		}}
		mustCreate(t, c, m)
		return m
	}
	owned := func(name string, owner *clusterv1.Machine) *infrav1.TerraformMachine {
		tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: "c1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: owner.Name, UID: owner.UID}},
		}, Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("m")}}}
		mustCreate(t, c, tm)
		return tm
	}

	m1 := machine("m1", "tm1")
	tm1 := owned("tm1", m1)
	refused(t, c.Delete(ctx, tm1.DeepCopy()), "Machine m1")

	t.Run("delete-for-move on a running Cluster is refused", func(t *testing.T) {
		patch := client.MergeFrom(tm1.DeepCopy())
		tm1.Annotations = map[string]string{infrav1.DeleteForMoveAnnotation: ""}
		if err := c.Patch(ctx, tm1, patch); err != nil {
			t.Fatal(err)
		}
		refused(t, c.Delete(ctx, tm1.DeepCopy()), "paused")
	})
	t.Run("delete-for-move on a paused Cluster is honoured", func(t *testing.T) {
		patch := client.MergeFrom(cluster.DeepCopy())
		cluster.Spec.Paused = ptr.To(true)
		if err := c.Patch(ctx, cluster, patch); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, tm1.DeepCopy()); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})

	t.Run("deleting the Machine releases its TerraformMachine", func(t *testing.T) {
		m2 := machine("m2", "tm2")
		tm2 := owned("tm2", m2)
		refused(t, c.Delete(ctx, tm2.DeepCopy()), "Machine m2")
		if err := c.Delete(ctx, m2); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, 30*time.Second, "the TerraformMachine to be deletable", func() (bool, string) {
			err := c.Delete(ctx, tm2.DeepCopy())
			return err == nil || apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})

	t.Run("an owner that does not reference the TerraformMachine does not hold it", func(t *testing.T) {
		m3 := machine("m3", "someone-else")
		tm3 := owned("tm3", m3)
		if err := c.Delete(ctx, tm3); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
}

// grantedEventually polls, as the admin, a SubjectAccessReview for user
// until the API server's authorizer allows attrs: RBAC objects reach the
// authorizer's cache a moment after they are written, later on a loaded
// machine.
func grantedEventually(t *testing.T, admin client.Client, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	envtest.Eventually(t, 90*time.Second, fmt.Sprintf("%s to be allowed to %s %s %s/%s", user, attrs.Verb, attrs.Resource, attrs.Namespace, attrs.Name), func() (bool, string) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: &attrs}}
		if err := admin.Create(context.Background(), sar); err != nil {
			return false, err.Error()
		}
		return sar.Status.Allowed, sar.Status.Reason
	})
}

// TestIdentityWideningNeedsSecretAccess: the SubjectAccessReview that
// guards spec.secretRef also guards every allowedNamespaces change that
// widens who receives the credentials (Identities and Credentials;
// identity.AllowedNamespacesWidening is the rule). carol may update
// identities but not get their source Secret: she can no longer add a
// namespace or a selector, or change a selector, and so have the
// credentials mirrored where she can create a Cluster; narrowing stays
// free for her. dave, who may get the Secret, may widen.
func TestIdentityWideningNeedsSecretAccess(t *testing.T) {
	admin := adminClient(t)
	ctx := context.Background()
	const sentinel = "widening-credential-sentinel-41d9"
	const idName = "widen"
	mustCreate(t, admin, ns("widen-creds"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: "widen-creds"}, Data: map[string][]byte{"KEY": []byte(sentinel)}},
		&infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: idName}, Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: "widen-creds", Name: "cloud"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{"widen-a", "widen-b"}},
		}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "identity-editor"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"terraformclusteridentities"},
			Verbs: []string{"get", "list", "update", "patch"},
		}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cloud-reader", Namespace: "widen-creds"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cloud"}, Verbs: []string{"get"},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dave-reads-cloud", Namespace: "widen-creds"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cloud-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dave"}}},
	)
	for _, u := range []string{"carol", "dave"} {
		mustCreate(t, admin, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "identity-editor-" + u},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "identity-editor"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u}}})
		grantedEventually(t, admin, u, authorizationv1.ResourceAttributes{Group: infrav1.GroupVersion.Group, Resource: "terraformclusteridentities", Verb: "update", Name: idName})
	}
	grantedEventually(t, admin, "dave", authorizationv1.ResourceAttributes{Namespace: "widen-creds", Version: "v1", Resource: "secrets", Verb: "get", Name: "cloud"})
	carol, dave := as(t, "carol"), as(t, "dave")
	id := func() *infrav1.TerraformClusterIdentity {
		return &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: idName}}
	}
	stored := func(t *testing.T) *infrav1.AllowedNamespaces {
		t.Helper()
		got := id()
		if err := admin.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			t.Fatal(err)
		}
		return got.Spec.AllowedNamespaces
	}
	// refusedWidening: a refusal naming the field, the user and the
	// Secret, never its content, and nothing stored.
	refusedWidening := func(t *testing.T, err error, fieldPath, detail string, before *infrav1.AllowedNamespaces) {
		t.Helper()
		refused(t, err, fieldPath)
		for _, want := range []string{`user "carol" may not get Secret widen-creds/cloud`, detail} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal does not say %q: %v", want, err)
			}
		}
		if strings.Contains(err.Error(), sentinel) {
			t.Fatal("the refusal carries the Secret's value")
		}
		if after := stored(t); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("allowedNamespaces changed from %v to %v", before, after)
		}
	}

	t.Run("a user who cannot get the Secret may not add a namespace", func(t *testing.T) {
		o, before := id(), stored(t)
		err := update(carol, o, func() { o.Spec.AllowedNamespaces.List = append(o.Spec.AllowedNamespaces.List, "carol-cluster") })
		refusedWidening(t, err, "spec.allowedNamespaces.list", "adds namespace(s) carol-cluster", before)
	})
	t.Run("nor add a selector", func(t *testing.T) {
		o, before := id(), stored(t)
		err := update(carol, o, func() {
			o.Spec.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"owner": "carol"}}
		})
		refusedWidening(t, err, "spec.allowedNamespaces.selector", "adds a selector", before)
	})
	t.Run("she may still make changes that widen nothing", func(t *testing.T) {
		o := id()
		if err := update(carol, o, func() { o.Labels = map[string]string{"reviewed-by": "carol"} }); err != nil {
			t.Fatalf("a label change was refused: %v", err)
		}
		if err := update(carol, o, func() { o.Spec.AllowedNamespaces.List = []string{"widen-b", "widen-a"} }); err != nil {
			t.Fatalf("reordering the list was refused: %v", err)
		}
	})
	t.Run("a user who can get the Secret may widen", func(t *testing.T) {
		o := id()
		err := update(dave, o, func() {
			o.Spec.AllowedNamespaces.List = append(o.Spec.AllowedNamespaces.List, "widen-c")
			o.Spec.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		})
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
	t.Run("changing a selector is refused to the user who cannot get the Secret", func(t *testing.T) {
		o, before := id(), stored(t)
		err := update(carol, o, func() {
			o.Spec.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "carol"}}
		})
		refusedWidening(t, err, "spec.allowedNamespaces.selector", "changes the selector", before)
	})
	t.Run("narrowing stays free: removing a namespace, adding a selector requirement, removing the selector", func(t *testing.T) {
		o := id()
		if err := update(carol, o, func() { o.Spec.AllowedNamespaces.List = []string{"widen-a", "widen-c"} }); err != nil {
			t.Fatalf("removing a namespace was refused: %v", err)
		}
		if err := update(carol, o, func() { o.Spec.AllowedNamespaces.Selector.MatchLabels["env"] = "prod" }); err != nil {
			t.Fatalf("adding a selector requirement was refused: %v", err)
		}
		if err := update(carol, o, func() { o.Spec.AllowedNamespaces.Selector = nil }); err != nil {
			t.Fatalf("removing the selector was refused: %v", err)
		}
		if got := stored(t); fmt.Sprint(got.List) != "[widen-a widen-c]" || got.Selector != nil {
			t.Fatalf("stored %+v", got)
		}
	})
	t.Run("re-adding a namespace she removed is widening again", func(t *testing.T) {
		o, before := id(), stored(t)
		err := update(carol, o, func() { o.Spec.AllowedNamespaces.List = append(o.Spec.AllowedNamespaces.List, "widen-b") })
		refusedWidening(t, err, "spec.allowedNamespaces.list", "adds namespace(s) widen-b", before)
	})
}

// TestIdentityDeleteGuardIgnoresOtherTenants: the delete guard and
// status.namespaces count only objects in namespaces the identity allows
// and mirrors CAPTF made (Identities and Credentials, "Delete an
// identity"). mallory, a tenant of a namespace the identity does not
// allow, creates a TerraformCluster naming it and a perfect look-alike of
// its mirror owned by that cluster, and a look-alike owned by nothing in a
// namespace it does allow: neither holds the identity back nor shows in
// its status, while the real user and the mirror CAPTF makes for it do.
func TestIdentityDeleteGuardIgnoresOtherTenants(t *testing.T) {
	admin := adminClient(t)
	ctx := context.Background()
	const (
		idName  = "lookalike"
		creds   = "lookalike-creds"
		home    = "lookalike-home"   // allowed, the real user's
		spare   = "lookalike-spare"  // allowed, unused
		outside = "lookalike-tenant" // mallory's, not allowed
	)
	mustCreate(t, admin, ns(creds), ns(home), ns(spare), ns(outside),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: creds}, Data: map[string][]byte{"KEY": []byte("v")}},
		&infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: idName}, Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: creds, Name: "cloud"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{home, spare}},
		}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lookalike-tenant"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"terraformclusters"}, Verbs: []string{"get", "create"}},
		}},
	)
	for _, namespace := range []string{outside, spare} {
		mustCreate(t, admin, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory", Namespace: namespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lookalike-tenant"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}})
		grantedEventually(t, admin, "mallory", authorizationv1.ResourceAttributes{Namespace: namespace, Version: "v1", Resource: "secrets", Verb: "create"})
	}
	grantedEventually(t, admin, "mallory", authorizationv1.ResourceAttributes{Namespace: outside, Group: infrav1.GroupVersion.Group, Resource: "terraformclusters", Verb: "create"})
	mallory := as(t, "mallory")
	cluster := func(namespace, name string) *infrav1.TerraformCluster {
		return &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: infrav1.TerraformClusterSpec{IdentityRef: &infrav1.IdentityReference{Name: idName}, WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("c")}}}
	}
	lookAlike := func(namespace string, owners ...metav1.OwnerReference) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: identity.MirrorName(idName), Namespace: namespace,
			Labels:          identity.MirrorLabels(),
			Annotations:     map[string]string{infrav1.IdentityAnnotation: idName, infrav1.SourceHashAnnotation: identity.SourceHash(nil)},
			OwnerReferences: owners,
		}}
	}
	squatter := cluster(outside, "squatter")
	mustCreate(t, mallory, squatter)
	mustCreate(t, mallory,
		lookAlike(outside, metav1.OwnerReference{APIVersion: infrav1.GroupVersion.String(), Kind: "TerraformCluster", Name: squatter.Name, UID: squatter.UID}),
		lookAlike(spare))

	// The real user, and its mirror as CAPTF's credentials step makes it
	// (the cluster has no Cluster API owner, so the manager runs nothing
	// for it).
	real := cluster(home, "real")
	mustCreate(t, admin, real)
	access, err := identity.CheckAccess(ctx, admin, admin, real, nil)
	if err != nil || !access.Allowed() {
		t.Fatalf("access %v, %v", access, err)
	}
	if m, err := identity.SyncMirror(ctx, admin, admin, access, real, nil); err != nil || !m.Ready() {
		t.Fatalf("mirror %+v, %v", m.Verdict, err)
	}
	id := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: idName}}
	statusNamespaces := func() []string {
		got := &infrav1.TerraformClusterIdentity{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(id), got); err != nil {
			t.Fatal(err)
		}
		return got.Status.Namespaces
	}

	t.Run("status.namespaces lists the real mirror's namespace only", func(t *testing.T) {
		envtest.Eventually(t, 60*time.Second, "status.namespaces to be ["+home+"]", func() (bool, string) {
			got := statusNamespaces()
			return fmt.Sprint(got) == "["+home+"]", fmt.Sprint(got)
		})
	})
	t.Run("the real user holds the identity; the squatter is not named", func(t *testing.T) {
		err := admin.Delete(ctx, id.DeepCopy(), client.DryRunAll)
		refused(t, err, "TerraformCluster "+home+"/real")
		if strings.Contains(err.Error(), "more") || strings.Contains(err.Error(), outside) {
			t.Fatalf("the refusal counts the other tenant: %v", err)
		}
	})
	t.Run("with the real user gone, the squatter and the look-alikes hold nothing", func(t *testing.T) {
		if err := admin.Delete(ctx, real); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, 60*time.Second, "the real user to be gone", func() (bool, string) {
			err := admin.Get(ctx, client.ObjectKeyFromObject(real), &infrav1.TerraformCluster{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		// Deleting the mirror releases the namespace (Identities and
		// Credentials), whether or not the deletion cleanup did already.
		mirror := lookAlike(home)
		if err := admin.Delete(ctx, mirror); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		envtest.Eventually(t, 60*time.Second, "status.namespaces to empty and the identity to be deletable", func() (bool, string) {
			if got := statusNamespaces(); len(got) > 0 {
				return false, "status.namespaces " + fmt.Sprint(got)
			}
			err := admin.Delete(ctx, id.DeepCopy(), client.DryRunAll)
			return err == nil, fmt.Sprint(err)
		})
		for _, o := range []client.Object{squatter.DeepCopy(), lookAlike(outside), lookAlike(spare)} {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatalf("%T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
		if err := admin.Delete(ctx, id.DeepCopy()); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
}
