package cli

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// kube is the clients one command uses, built from the kubectl flags.
type kube struct {
	dyn  dynamic.Interface
	core kubernetes.Interface
	meta metadata.Interface
	// namespace is -n, else the kubeconfig context's namespace.
	namespace string
}

func newKube(flags *genericclioptions.ConfigFlags) (*kube, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("no usable kubeconfig: %w", err)
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("no namespace from the kubeconfig: %w", err)
	}
	k := &kube{namespace: ns}
	if k.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if k.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if k.meta, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return k, nil
}

// object is one TerraformCluster, TerraformMachine or TerraformMachinePool.
type object struct {
	kind kind
	w    infrav1.Workload
}

func (o object) ref() string { return o.kind.lower() + "/" + o.w.GetName() }

func decode(k kind, u *unstructured.Unstructured) (object, error) {
	w := infrav1.WorkloadKind(k.Kind).NewObject()
	if w == nil {
		return object{}, fmt.Errorf("%s is not a workload kind", k.Kind)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, w); err != nil {
		return object{}, fmt.Errorf("%s %s/%s cannot be read as %s: %w", k.Kind, u.GetNamespace(), u.GetName(), infrav1.GroupVersion, err)
	}
	return object{kind: k, w: w}, nil
}

// get reads one object; a missing object or a refused read is an error
// that names the object and what to check.
func (k *kube) get(ctx context.Context, t target) (object, error) {
	u, err := k.dyn.Resource(t.kind.GVR()).Namespace(k.namespace).Get(ctx, t.name, metav1.GetOptions{})
	if err != nil {
		return object{}, explain(err, t.String(), k.namespace)
	}
	return decode(t.kind, u)
}

// list lists one kind in ns ("" for every namespace).
func (k *kube) list(ctx context.Context, kd kind, ns string, selector string) ([]object, error) {
	out, _, err := k.listAt(ctx, kd, ns, metav1.ListOptions{LabelSelector: selector})
	return out, err
}

// listAt lists one kind in ns with opts, and returns the list's
// resourceVersion, where a watch of the same objects starts.
func (k *kube) listAt(ctx context.Context, kd kind, ns string, opts metav1.ListOptions) ([]object, string, error) {
	l, err := k.dyn.Resource(kd.GVR()).Namespace(ns).List(ctx, opts)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("the API server does not serve %s: are CAPTF's CRDs installed?", kd.GVR().GroupResource())
		}
		return nil, "", explain(err, kd.Resource, ns)
	}
	out := make([]object, 0, len(l.Items))
	for i := range l.Items {
		o, err := decode(kd, &l.Items[i])
		if err != nil {
			return nil, "", err
		}
		out = append(out, o)
	}
	return out, l.GetResourceVersion(), nil
}

// jobs lists the runner Jobs CAPTF created in ns ("" for every namespace).
// Without the right to list Jobs it returns none: the commands that only
// decorate their output with Jobs still work.
func (k *kube) jobs(ctx context.Context, ns string) ([]batchv1.Job, error) {
	l, err := k.core.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: infrav1.ManagedLabel + "=true"})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil
		}
		return nil, explain(err, "jobs", ns)
	}
	return l.Items, nil
}

// patchAnnotation sets (or, with value nil, removes) one annotation by a
// merge patch carrying the resourceVersion the caller checked, so the write
// fails with a conflict if the object changed since.
func (k *kube) patchAnnotation(ctx context.Context, o object, key string, value *string) error {
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": o.w.GetResourceVersion(),
		"annotations":     map[string]any{key: value},
	}}
	body, err := jsonMarshal(patch)
	if err != nil {
		return err
	}
	_, err = k.dyn.Resource(o.kind.GVR()).Namespace(o.w.GetNamespace()).Patch(ctx, o.w.GetName(), types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return explain(err, o.ref(), o.w.GetNamespace())
	}
	return nil
}

// errConflict marks a write refused because the object changed since it
// was read.
var errConflict = errors.New("changed since it was read")

// explain turns an API error into one that names the object and what to
// do.
func explain(err error, what, ns string) error {
	where := ""
	if ns != "" {
		where = " in namespace " + ns
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found%s: check the name and the namespace (-n, or -A to list every namespace)", what, where)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("not allowed to access %s%s (%v): ask for a Role that reads and patches Terraform* objects and reads Jobs and pod logs there", what, where, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s%s %w: read it again and retry", what, where, errConflict)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server did not accept your credentials while reading %s%s: check --kubeconfig and --context", what, where)
	}
	return fmt.Errorf("%s%s: %w", what, where, err)
}

var secretsGVR = corev1.SchemeGroupVersion.WithResource("secrets")
