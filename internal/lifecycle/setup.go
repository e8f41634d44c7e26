package lifecycle

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// ReadyBeforeProvisioned are the Ready inputs of every workload kind until
// provisioned latches (reference-facts §1.1).
var ReadyBeforeProvisioned = []string{
	infrav1.DependenciesReadyCondition,
	infrav1.IdentityAllowedCondition,
	infrav1.CredentialsMirroredCondition,
	infrav1.RunnerRBACReadyCondition,
	infrav1.ApplyJobSucceededCondition,
	infrav1.StateReadableCondition,
	infrav1.OutputsValidCondition,
	infrav1.InfrastructureHealthyCondition,
	infrav1.DeletingCondition,
}

// ControllerOptions are what every workload controller is set up with.
type ControllerOptions struct {
	// Concurrency is the number of workers.
	Concurrency int
	// WatchFilter is --watch-filter.
	WatchFilter string
	// Extra adds the kind's own watches.
	Extra func(b *builder.Builder) *builder.Builder
}

// Setup registers the flow as a controller for its kind: the object, its
// Jobs, and the Secrets and Leases that carry its owner labels.
func (f *Flow) Setup(ctx context.Context, mgr ctrl.Manager, opts ControllerOptions) error {
	f.written = &written{}
	kind := string(f.Adapter.Kind())
	obj := f.Adapter.New()
	log := ctrl.LoggerFrom(ctx)
	b := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, opts.WatchFilter))).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(byOwnerLabels(kind)),
			builder.WithPredicates(managedOnly())).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.Concurrency, 1)}).
		Named(lower(kind))
	if opts.Extra != nil {
		b = opts.Extra(b)
	}
	return b.Complete(reconcile.Func(f.Reconcile))
}

func lower(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

func managedOnly() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[infrav1.ManagedLabel] == "true"
	})
}

// byOwnerLabels maps an object carrying CAPTF's owner labels to its owner.
func byOwnerLabels(kind string) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[infrav1.OwnerKindLabel] != kind || l[infrav1.OwnerNameLabel] == "" {
			return nil
		}
		name := l[infrav1.OwnerNameLabel]
		if name != jobs.LabelValue(name) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	}
}

// ByClusterName maps an object carrying the cluster-name label to every
// object of list's kind in its namespace with the same label.
func ByClusterName(c client.Client, list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[clusterv1.ClusterNameLabel]
		if cl, ok := o.(*clusterv1.Cluster); ok {
			name = cl.Name
		}
		if name == "" {
			return nil
		}
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil {
			return nil
		}
		var out []reconcile.Request
		_ = forEach(l, func(item client.Object) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
		})
		return out
	}
}

func forEach(l client.ObjectList, fn func(client.Object)) error {
	switch t := l.(type) {
	case *infrav1.TerraformMachineList:
		for i := range t.Items {
			fn(&t.Items[i])
		}
	case *infrav1.TerraformMachinePoolList:
		for i := range t.Items {
			fn(&t.Items[i])
		}
	case *infrav1.TerraformClusterList:
		for i := range t.Items {
			fn(&t.Items[i])
		}
	}
	return nil
}
