package flavors

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// TestAutoscalerReaderRole (RBAC page, "Cluster Autoscaler ClusterRole
// captf-autoscaler-reader"): bound as the page shows, the shipped
// ClusterRole lets the Cluster Autoscaler's ServiceAccount get, list and
// watch TerraformMachineTemplates, and nothing more: no write, no other
// CAPTF kind, no Secret.
func TestAutoscalerReaderRole(t *testing.T) {
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "rbac", "autoscaler_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, role); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns, sa = "autoscaler-rbac", "cluster-autoscaler"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-captf"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "kube-system"}},
	}
	tmt := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "TerraformMachineTemplate",
		"metadata": map[string]any{"name": "md-0", "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"source": map[string]any{"image": "registry.example/noop-machine:v1"}}}},
	}}
	for _, o := range []client.Object{role, binding, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, tmt} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}

	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	as, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	list := func(kind string) error {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1alpha1")
		l.SetKind(kind + "List")
		return as.List(ctx, l)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(tmt.GroupVersionKind())
	if err := as.Get(ctx, client.ObjectKeyFromObject(tmt), got); err != nil {
		t.Errorf("the autoscaler cannot get a TerraformMachineTemplate: %v", err)
	}
	if err := list("TerraformMachineTemplate"); err != nil {
		t.Errorf("the autoscaler cannot list TerraformMachineTemplates: %v", err)
	}
	for what, err := range map[string]error{
		"update a TerraformMachineTemplate": as.Update(ctx, got),
		"list TerraformMachines":            list("TerraformMachine"),
		"list TerraformClusterIdentities":   list("TerraformClusterIdentity"),
		"list Secrets":                      as.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the autoscaler may %s (%v); want Forbidden", what, err)
		}
	}
}
