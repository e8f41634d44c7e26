package identity

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// ServiceAccountFor is the ServiceAccount obj's Jobs run as: its own
// spec.jobs.serviceAccountName; else, for a machine or pool, its cluster's
// spec.defaults.jobs.serviceAccountName; else captf-runner. cluster is nil
// when it cannot be resolved.
func ServiceAccountFor(obj client.Object, cluster *infrav1.TerraformCluster) string {
	var own *infrav1.JobPolicy
	switch o := obj.(type) {
	case *infrav1.TerraformCluster:
		if o.Spec.Jobs != nil && o.Spec.Jobs.ServiceAccountName != "" {
			return o.Spec.Jobs.ServiceAccountName
		}
		return RunnerName
	case *infrav1.TerraformMachine:
		own = o.Spec.Jobs
	case *infrav1.TerraformMachinePool:
		own = o.Spec.Jobs
	}
	if own != nil && own.ServiceAccountName != "" {
		return own.ServiceAccountName
	}
	if sa := clusterDefaultServiceAccount(cluster); sa != "" {
		return sa
	}
	return RunnerName
}

func clusterDefaultServiceAccount(cluster *infrav1.TerraformCluster) string {
	if cluster == nil || cluster.Spec.Defaults == nil || cluster.Spec.Defaults.Jobs == nil {
		return ""
	}
	return cluster.Spec.Defaults.Jobs.ServiceAccountName
}

func ownServiceAccount(obj client.Object) string {
	var p *infrav1.JobPolicy
	switch o := obj.(type) {
	case *infrav1.TerraformMachine:
		p = o.Spec.Jobs
	case *infrav1.TerraformMachinePool:
		p = o.Spec.Jobs
	}
	if p == nil {
		return ""
	}
	return p.ServiceAccountName
}

// RunnerServiceAccounts is the union, sorted, of the ServiceAccounts the
// namespace's objects run as (ServiceAccountFor each). A machine or pool
// that sets none itself and whose cluster cannot be resolved yet could run
// as any cluster's default, so every cluster default of the namespace is
// kept, and captf-runner too. Pure.
func RunnerServiceAccounts(w *Workloads) []string {
	set := map[string]struct{}{}
	unresolved := false
	w.each(func(_ infrav1.WorkloadKind, obj client.Object, cluster *infrav1.TerraformCluster) {
		_, isCluster := obj.(*infrav1.TerraformCluster)
		if !isCluster && cluster == nil && ownServiceAccount(obj) == "" {
			unresolved = true
			return
		}
		set[ServiceAccountFor(obj, cluster)] = struct{}{}
	})
	if unresolved {
		set[RunnerName] = struct{}{}
		for i := range w.Clusters {
			if sa := clusterDefaultServiceAccount(&w.Clusters[i]); sa != "" {
				set[sa] = struct{}{}
			}
		}
	}
	out := make([]string, 0, len(set))
	for sa := range set {
		out = append(out, sa)
	}
	slices.Sort(out)
	return out
}

// ServiceAccountState is what the opt-in check found for a ServiceAccount.
type ServiceAccountState string

const (
	// ServiceAccountReady: captf-runner, or an override labeled
	// captf.io/runner=true.
	ServiceAccountReady ServiceAccountState = "Ready"
	// ServiceAccountMissing: the override does not exist.
	ServiceAccountMissing ServiceAccountState = "Missing"
	// ServiceAccountNotLabeled: the override lacks captf.io/runner=true.
	ServiceAccountNotLabeled ServiceAccountState = "NotLabeled"
	// ServiceAccountInvalid: the name is not a valid ServiceAccount name
	// (a DNS subdomain), so no such ServiceAccount can exist.
	ServiceAccountInvalid ServiceAccountState = "Invalid"
)

// ValidServiceAccountName reports whether name can name a ServiceAccount:
// a DNS subdomain. A name that cannot is never looked up. Pure.
func ValidServiceAccountName(name string) bool {
	return len(validation.IsDNS1123Subdomain(name)) == 0
}

// OptInState applies the opt-in rule to an override ServiceAccount (nil
// when it does not exist). captf-runner itself needs no opt-in. Pure.
func OptInState(name string, sa *corev1.ServiceAccount) ServiceAccountState {
	switch {
	case name == RunnerName:
		return ServiceAccountReady
	case !ValidServiceAccountName(name):
		return ServiceAccountInvalid
	case sa == nil:
		return ServiceAccountMissing
	case sa.Labels[infrav1.RunnerLabel] != TrueValue:
		return ServiceAccountNotLabeled
	}
	return ServiceAccountReady
}

// RBACFacts are what ensuring a namespace's runner RBAC found for one
// object, as plain facts.
type RBACFacts struct {
	// ServiceAccount is the one the object's Jobs run as, and its state.
	ServiceAccount      string
	ServiceAccountState ServiceAccountState
	// ForeignRoleBinding: a captf-runner RoleBinding without
	// captf.io/managed=true exists.
	ForeignRoleBinding bool
	// Error is an API error while reading or writing.
	Error error
}

// RBACVerdict maps the facts onto RunnerRBACReady (reference-facts §1.6),
// in this order: an API error, the object's own override not opted in, a
// foreign RoleBinding, ready.
func RBACVerdict(f RBACFacts) Verdict {
	var c Verdict
	switch {
	case f.Error != nil:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.RBACFailedReason
		c.Message = fmt.Sprintf("Failed to ensure the runner ServiceAccount and RoleBinding: %v", f.Error)
	case f.ServiceAccountState == ServiceAccountInvalid:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason
		c.Message = fmt.Sprintf("spec.jobs.serviceAccountName %q is not a valid ServiceAccount name (a DNS subdomain); no such ServiceAccount can exist", f.ServiceAccount)
	case f.ServiceAccountState == ServiceAccountMissing:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason
		c.Message = fmt.Sprintf("ServiceAccount %q named by spec.jobs.serviceAccountName does not exist; create it with the label %s=%s", f.ServiceAccount, infrav1.RunnerLabel, TrueValue)
	case f.ServiceAccountState == ServiceAccountNotLabeled:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason
		c.Message = fmt.Sprintf("ServiceAccount %q lacks the label %s=%s that opts it in as a runner", f.ServiceAccount, infrav1.RunnerLabel, TrueValue)
	case f.ForeignRoleBinding:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.RBACFailedReason
		c.Message = fmt.Sprintf("RoleBinding %s exists without the label %s=%s; CAPTF never modifies it", RunnerName, infrav1.ManagedLabel, TrueValue)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, infrav1.RBACReadyReason
		c.Message = fmt.Sprintf("ServiceAccount %q is bound to ClusterRole %s", f.ServiceAccount, RunnerName)
	}
	return c
}

// RoleBindingAction is what keeping the captf-runner RoleBinding needs.
type RoleBindingAction string

const (
	// RoleBindingCreate: no captf-runner RoleBinding exists.
	RoleBindingCreate RoleBindingAction = "Create"
	// RoleBindingUpdate: the managed binding's subjects differ.
	RoleBindingUpdate RoleBindingAction = "Update"
	// RoleBindingRecreate: the managed binding's roleRef differs; roleRef
	// is immutable, so it is deleted and created again.
	RoleBindingRecreate RoleBindingAction = "Recreate"
	// RoleBindingInPlace: nothing to write.
	RoleBindingInPlace RoleBindingAction = "InPlace"
	// RoleBindingForeign: a binding without captf.io/managed=true; never
	// touched.
	RoleBindingForeign RoleBindingAction = "Foreign"
)

// RunnerRoleRef is the roleRef of every managed captf-runner RoleBinding.
func RunnerRoleRef() rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RunnerName}
}

// RunnerSubjects are the RoleBinding subjects for serviceAccounts, sorted.
func RunnerSubjects(namespace string, serviceAccounts []string) []rbacv1.Subject {
	names := slices.Clone(serviceAccounts)
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]rbacv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: n, Namespace: namespace})
	}
	return out
}

// PlanRoleBinding decides what the captf-runner RoleBinding needs, given
// the existing one (nil when none) and the subjects wanted. A binding
// without captf.io/managed=true is never touched; a managed one whose
// roleRef differs is re-created (roleRef is immutable); one whose subjects
// differ as a set is updated. Pure.
func PlanRoleBinding(existing *rbacv1.RoleBinding, subjects []rbacv1.Subject) RoleBindingAction {
	switch {
	case existing == nil:
		return RoleBindingCreate
	case existing.Labels[infrav1.ManagedLabel] != TrueValue:
		return RoleBindingForeign
	case existing.RoleRef != RunnerRoleRef():
		return RoleBindingRecreate
	case !sameSubjects(existing.Subjects, subjects):
		return RoleBindingUpdate
	}
	return RoleBindingInPlace
}

// KeptSubjects are the names among unknown that existing (nil when none)
// binds as ServiceAccounts of namespace: a ServiceAccount whose opt-in
// could not be read keeps the binding it has until it can. Pure.
func KeptSubjects(existing *rbacv1.RoleBinding, namespace string, unknown []string) []string {
	if existing == nil {
		return nil
	}
	var out []string
	for _, s := range existing.Subjects {
		if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && slices.Contains(unknown, s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

func sameSubjects(a, b []rbacv1.Subject) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(s rbacv1.Subject) string {
		return s.Kind + "\x00" + s.APIGroup + "\x00" + s.Namespace + "\x00" + s.Name
	}
	as := make([]string, len(a))
	bs := make([]string, len(b))
	for i := range a {
		as[i], bs[i] = key(a[i]), key(b[i])
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// RBACResult is the outcome of ensuring a namespace's runner RBAC for one
// object.
type RBACResult struct {
	// ServiceAccount is the one the object's Jobs run as.
	ServiceAccount string
	// Bound are the ServiceAccounts the captf-runner RoleBinding binds:
	// those wanted that are captf-runner or opted in.
	Bound []string
	// Verdict is what RunnerRBACReady is to say.
	Verdict Verdict
	// RoleBinding is what was done to the RoleBinding.
	RoleBinding RoleBindingAction
}

// Ready reports whether RunnerRBACReady is True: a Job may run as
// ServiceAccount.
func (r RBACResult) Ready() bool { return r.Verdict.Status == metav1.ConditionTrue }

// EnsureRunnerRBAC keeps the runner RBAC of namespace in place for an
// object whose Jobs run as serviceAccount. wanted is the union of the
// ServiceAccounts the namespace's objects run as (RunnerServiceAccounts);
// serviceAccount is added to it. It creates captf-runner when wanted (or
// labels a pre-created one captf.io/managed=true, keeping its other
// metadata), checks each override's opt-in, and binds captf-runner and the
// opted-in overrides through the captf-runner RoleBinding. c reads through
// the cache and writes; live reads what a label-scoped cache does not show.
// An API error on the object's own ServiceAccount or on the RoleBinding
// returns False/RBACFailed and the error. Another object's override never
// blocks this one: a name that is not a valid ServiceAccount name is not
// looked up and not bound, and one whose read fails keeps the binding it
// already has, neither added nor removed.
func EnsureRunnerRBAC(ctx context.Context, c client.Client, live client.Reader, namespace, serviceAccount string, wanted []string) (RBACResult, error) {
	res := RBACResult{ServiceAccount: serviceAccount}
	f := RBACFacts{ServiceAccount: serviceAccount}
	names := append(slices.Clone(wanted), serviceAccount)
	slices.Sort(names)
	names = slices.Compact(names)

	err := func() error {
		var unknown []string
		for _, name := range names {
			var state ServiceAccountState
			switch {
			case name == RunnerName:
				if err := ensureRunnerServiceAccount(ctx, c, live, namespace); err != nil {
					return err
				}
				state = ServiceAccountReady
			case !ValidServiceAccountName(name):
				state = ServiceAccountInvalid
			default:
				sa, err := getServiceAccount(ctx, c, live, client.ObjectKey{Namespace: namespace, Name: name})
				if err != nil && name != serviceAccount {
					unknown = append(unknown, name)
					continue
				}
				if err != nil {
					return err
				}
				state = OptInState(name, sa)
			}
			if name == serviceAccount {
				f.ServiceAccountState = state
			}
			if state == ServiceAccountReady {
				res.Bound = append(res.Bound, name)
			}
		}
		action, err := ensureRoleBinding(ctx, c, live, namespace, res.Bound, unknown)
		res.RoleBinding = action
		f.ForeignRoleBinding = action == RoleBindingForeign
		return err
	}()
	f.Error = err
	res.Verdict = RBACVerdict(f)
	return res, err
}

// getServiceAccount reads a ServiceAccount through the cache, then live
// when the cache does not hold it (an override need not carry CAPTF's
// labels). nil when it does not exist.
func getServiceAccount(ctx context.Context, c, live client.Reader, key client.ObjectKey) (*corev1.ServiceAccount, error) {
	sa := &corev1.ServiceAccount{}
	err := c.Get(ctx, key, sa)
	if apierrors.IsNotFound(err) && live != nil {
		err = live.Get(ctx, key, sa)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to get ServiceAccount %s: %w", key, err)
	}
	return sa, nil
}

// ensureRunnerServiceAccount creates captf-runner labeled managed, or adds
// the label to a pre-created one with a patch that leaves everything else.
func ensureRunnerServiceAccount(ctx context.Context, c client.Client, live client.Reader, namespace string) error {
	key := client.ObjectKey{Namespace: namespace, Name: RunnerName}
	sa := &corev1.ServiceAccount{}
	err := c.Get(ctx, key, sa)
	if apierrors.IsNotFound(err) {
		sa = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: RunnerName,
			Labels: map[string]string{infrav1.ManagedLabel: TrueValue},
		}}
		err = c.Create(ctx, sa)
		if err == nil {
			ctrl.LoggerFrom(ctx).V(1).Info("Created runner ServiceAccount", "ServiceAccount", key.String())
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create ServiceAccount %s: %w", key, err)
		}
		err = live.Get(ctx, key, sa)
	}
	if err != nil {
		return fmt.Errorf("failed to get ServiceAccount %s: %w", key, err)
	}
	if sa.Labels[infrav1.ManagedLabel] == TrueValue {
		return nil
	}
	orig := sa.DeepCopy()
	if sa.Labels == nil {
		sa.Labels = map[string]string{}
	}
	sa.Labels[infrav1.ManagedLabel] = TrueValue
	if err := c.Patch(ctx, sa, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("failed to label ServiceAccount %s: %w", key, err)
	}
	return nil
}

// ensureRoleBinding creates, updates or re-creates the managed
// captf-runner RoleBinding so that it binds bound, and reports what it did.
// A name in unknown (its ServiceAccount could not be read) stays bound if
// the binding binds it now and is not added otherwise. A foreign binding is
// reported, not touched.
func ensureRoleBinding(ctx context.Context, c client.Client, live client.Reader, namespace string, bound, unknown []string) (RoleBindingAction, error) {
	key := client.ObjectKey{Namespace: namespace, Name: RunnerName}
	var r client.Reader = c
	for attempt := 0; ; attempt++ {
		existing := &rbacv1.RoleBinding{}
		err := r.Get(ctx, key, existing)
		if apierrors.IsNotFound(err) {
			existing = nil
		} else if err != nil {
			return "", fmt.Errorf("failed to get RoleBinding %s: %w", key, err)
		}
		subjects := RunnerSubjects(namespace, append(slices.Clone(bound), KeptSubjects(existing, namespace, unknown)...))
		desired := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: RunnerName, Labels: map[string]string{infrav1.ManagedLabel: TrueValue}},
			RoleRef:    RunnerRoleRef(),
			Subjects:   subjects,
		}
		action := PlanRoleBinding(existing, subjects)
		switch action {
		case RoleBindingCreate:
			err = c.Create(ctx, desired.DeepCopy())
		case RoleBindingRecreate:
			err = c.Delete(ctx, existing, client.Preconditions{UID: &existing.UID})
			if err == nil || apierrors.IsNotFound(err) {
				err = c.Create(ctx, desired.DeepCopy())
			}
		case RoleBindingUpdate:
			rb := existing.DeepCopy()
			rb.Subjects = subjects
			err = c.Update(ctx, rb)
		}
		if err == nil {
			if action != RoleBindingInPlace && action != RoleBindingForeign {
				ctrl.LoggerFrom(ctx).V(1).Info("Wrote runner RoleBinding", "RoleBinding", key.String(), "action", string(action))
			}
			return action, nil
		}
		// A create that lost a race, a conflict, or a precondition that no
		// longer holds: decide again on what the server has now.
		retryable := apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err)
		if !retryable || attempt >= 3 {
			return action, fmt.Errorf("failed to write RoleBinding %s: %w", key, err)
		}
		r = live
	}
}
