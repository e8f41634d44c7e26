package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func getRB(t testing.TB, ns string) *rbacv1.RoleBinding {
	t.Helper()
	rb := &rbacv1.RoleBinding{}
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: RunnerName}, rb)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return rb
}

func getSA(t testing.TB, ns, name string) *corev1.ServiceAccount {
	t.Helper()
	sa := &corev1.ServiceAccount{}
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sa)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return sa
}

func subjectNames(rb *rbacv1.RoleBinding) []string {
	var out []string
	for _, s := range rb.Subjects {
		out = append(out, s.Name)
	}
	return out
}

// ensure runs the runner RBAC half of the credentials step for obj the way
// the reconcile flow does: the namespace's union of ServiceAccounts, then
// EnsureRunnerRBAC.
func ensure(t *testing.T, c client.Client, obj client.Object) (RBACResult, error) {
	t.Helper()
	w, err := ListWorkloads(ctx, k8s, obj.GetNamespace())
	must(t, err)
	return EnsureRunnerRBAC(ctx, c, k8s, obj.GetNamespace(), ServiceAccountFor(obj, w.ClusterFor(obj)), RunnerServiceAccounts(w))
}

func TestRunnerRBAC(t *testing.T) {
	ns := namespace(t, nil)
	tc1 := newCluster(t, ns, uniqueName("c"), "id", nil)

	t.Run("captf-runner ServiceAccount and RoleBinding created, labeled managed: True/RBACReady", func(t *testing.T) {
		r, err := ensure(t, k8s, tc1)
		must(t, err)
		wantVerdict(t, r.Verdict, metav1.ConditionTrue, infrav1.RBACReadyReason)
		sa := getSA(t, ns, RunnerName)
		if sa == nil || sa.Labels[infrav1.ManagedLabel] != "true" {
			t.Fatalf("ServiceAccount %+v", sa)
		}
		rb := getRB(t, ns)
		if rb == nil || rb.Labels[infrav1.ManagedLabel] != "true" || rb.RoleRef != RunnerRoleRef() || fmt.Sprint(subjectNames(rb)) != "[captf-runner]" || rb.Subjects[0].Namespace != ns || rb.Subjects[0].Kind != "ServiceAccount" {
			t.Fatalf("RoleBinding %+v", rb)
		}
		if r.RoleBinding != RoleBindingCreate {
			t.Fatalf("action %s", r.RoleBinding)
		}
	})

	t.Run("a reconcile that changes nothing writes nothing", func(t *testing.T) {
		sa, rb := getSA(t, ns, RunnerName), getRB(t, ns)
		r, err := ensure(t, k8s, tc1)
		must(t, err)
		if !r.Ready() || r.RoleBinding != RoleBindingInPlace {
			t.Fatalf("result %+v", r)
		}
		if getSA(t, ns, RunnerName).ResourceVersion != sa.ResourceVersion || getRB(t, ns).ResourceVersion != rb.ResourceVersion {
			t.Fatal("written")
		}
	})

	var m *infrav1.TerraformMachine
	t.Run("override SA missing: False/ServiceAccountNotOptedIn, not bound", func(t *testing.T) {
		m = newMachine(t, ns, uniqueName("m"), "", func(m *infrav1.TerraformMachine) {
			m.Spec.Jobs = &infrav1.JobPolicy{ServiceAccountName: "custom"}
		})
		r, err := ensure(t, k8s, m)
		must(t, err)
		wantVerdict(t, r.Verdict, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason)
		if getSA(t, ns, "custom") != nil {
			t.Fatal("an override ServiceAccount is never created")
		}
		if fmt.Sprint(subjectNames(getRB(t, ns))) != "[captf-runner]" {
			t.Fatalf("subjects %v", subjectNames(getRB(t, ns)))
		}
	})

	t.Run("override SA without captf.io/runner=true: False/ServiceAccountNotOptedIn, not bound", func(t *testing.T) {
		must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom"}}))
		r, err := ensure(t, k8s, m)
		must(t, err)
		wantVerdict(t, r.Verdict, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason)
		if fmt.Sprint(subjectNames(getRB(t, ns))) != "[captf-runner]" {
			t.Fatalf("subjects %v", subjectNames(getRB(t, ns)))
		}
		// The other object of the namespace is not held up by it.
		r, err = ensure(t, k8s, tc1)
		must(t, err)
		if !r.Ready() {
			t.Fatalf("cluster: %+v", r.Verdict)
		}
	})

	t.Run("override SA opted in: bound next to captf-runner, True/RBACReady", func(t *testing.T) {
		sa := getSA(t, ns, "custom")
		sa.Labels = map[string]string{infrav1.RunnerLabel: "true"}
		must(t, k8s.Update(ctx, sa))
		r, err := ensure(t, k8s, m)
		must(t, err)
		wantVerdict(t, r.Verdict, metav1.ConditionTrue, infrav1.RBACReadyReason)
		if r.ServiceAccount != "custom" || r.RoleBinding != RoleBindingUpdate {
			t.Fatalf("result %+v", r)
		}
		if fmt.Sprint(subjectNames(getRB(t, ns))) != "[captf-runner custom]" {
			t.Fatalf("subjects %v", subjectNames(getRB(t, ns)))
		}
		if getSA(t, ns, "custom").Labels[infrav1.ManagedLabel] != "" {
			t.Fatal("an override is never labeled managed")
		}
	})

	t.Run("subjects are recomputed: an SA no object uses any more is unbound", func(t *testing.T) {
		must(t, k8s.Delete(ctx, m))
		r, err := ensure(t, k8s, tc1)
		must(t, err)
		if !r.Ready() || fmt.Sprint(subjectNames(getRB(t, ns))) != "[captf-runner]" {
			t.Fatalf("subjects %v", subjectNames(getRB(t, ns)))
		}
	})

	t.Run("a managed binding whose roleRef changed is re-created, not patched", func(t *testing.T) {
		must(t, k8s.Delete(ctx, getRB(t, ns)))
		odd := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RunnerName, Labels: map[string]string{infrav1.ManagedLabel: "true"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: RunnerName, Namespace: ns}},
		}
		must(t, k8s.Create(ctx, odd))
		r, err := ensure(t, k8s, tc1)
		must(t, err)
		if !r.Ready() || r.RoleBinding != RoleBindingRecreate {
			t.Fatalf("result %+v", r)
		}
		rb := getRB(t, ns)
		if rb.UID == odd.UID || rb.RoleRef != RunnerRoleRef() {
			t.Fatalf("not re-created: %+v", rb)
		}
	})
}

func TestRunnerRBACForeignAndPreCreated(t *testing.T) {
	for _, withCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("manager cache %v", withCache), func(t *testing.T) {
			c := client.Client(k8s)
			if withCache {
				c = managerClient(t)
			}
			ns := namespace(t, nil)
			tc1 := newCluster(t, ns, uniqueName("c"), "id", nil)
			// A pre-created captf-runner keeps its other metadata.
			pre := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: RunnerName,
				Labels:      map[string]string{"team": "blue"},
				Annotations: map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"},
			}}
			must(t, k8s.Create(ctx, pre))
			foreign := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RunnerName},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice", APIGroup: rbacv1.GroupName}},
			}
			must(t, k8s.Create(ctx, foreign))

			var r RBACResult
			var err error
			eventually(t, func() error {
				r, err = ensure(t, c, tc1)
				return err
			})
			wantVerdict(t, r.Verdict, metav1.ConditionFalse, infrav1.RBACFailedReason)
			if r.RoleBinding != RoleBindingForeign {
				t.Fatalf("action %s", r.RoleBinding)
			}
			got := getRB(t, ns)
			if got.ResourceVersion != foreign.ResourceVersion {
				t.Fatal("a foreign RoleBinding without the managed label was touched")
			}
			sa := getSA(t, ns, RunnerName)
			if sa.Labels[infrav1.ManagedLabel] != "true" || sa.Labels["team"] != "blue" || sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
				t.Fatalf("pre-created ServiceAccount: %+v", sa.ObjectMeta)
			}

			// Once the user removes the foreign binding, CAPTF creates its own.
			must(t, k8s.Delete(ctx, got))
			eventually(t, func() error {
				r, err = ensure(t, c, tc1)
				if err != nil {
					return err
				}
				if !r.Ready() {
					return fmt.Errorf("%+v", r.Verdict)
				}
				return nil
			})
			if rb := getRB(t, ns); rb.Labels[infrav1.ManagedLabel] != "true" {
				t.Fatal("managed binding not created")
			}
		})
	}
}

func TestRunnerServiceAccountsFromClusterDefaults(t *testing.T) {
	ns := namespace(t, nil)
	tcName := uniqueName("c")
	tc1 := newCluster(t, ns, tcName, "id", func(c *infrav1.TerraformCluster) {
		c.Spec.Defaults = &infrav1.ClusterDefaults{Jobs: &infrav1.JobPolicy{ServiceAccountName: "fleet"}}
	})
	capi := uniqueName("capi")
	newCAPICluster(t, ns, capi, tcName)
	m := newMachine(t, ns, uniqueName("m"), capi, nil)
	for _, name := range []string{"fleet"} {
		must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{infrav1.RunnerLabel: "true"}}}))
	}
	r, err := ensure(t, k8s, m)
	must(t, err)
	if !r.Ready() || r.ServiceAccount != "fleet" {
		t.Fatalf("machine inherits the cluster's spec.defaults.jobs.serviceAccountName: %+v", r)
	}
	if fmt.Sprint(subjectNames(getRB(t, ns))) != "[captf-runner fleet]" {
		t.Fatalf("subjects %v", subjectNames(getRB(t, ns)))
	}
	_ = tc1
	// A pool whose Cluster is not there yet keeps every cluster default.
	newPool(t, ns, uniqueName("p"), "not-yet", nil)
	w, err := ListWorkloads(ctx, k8s, ns)
	must(t, err)
	if got := RunnerServiceAccounts(w); fmt.Sprint(got) != "[captf-runner fleet]" {
		t.Fatalf("union %v", got)
	}
}

func TestSweep(t *testing.T) {
	busy, idle, outside := namespace(t, nil), namespace(t, nil), namespace(t, nil)
	newCluster(t, busy, uniqueName("c"), "id", nil)
	managed := map[string]string{infrav1.ManagedLabel: "true"}
	seed := func(ns string) {
		must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RunnerName, Labels: managed}}))
		must(t, k8s.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RunnerName, Labels: managed},
			RoleRef:    RunnerRoleRef(),
			Subjects:   RunnerSubjects(ns, []string{RunnerName}),
		}))
		must(t, k8s.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "captf-run-x", Labels: managed}}))
		// Not CAPTF's: never swept.
		must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom", Labels: map[string]string{infrav1.RunnerLabel: "true"}}}))
		must(t, k8s.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lock-tfstate-default-x"}}))
	}
	for _, ns := range []string{busy, idle, outside} {
		seed(ns)
	}
	count := func(ns string) (managedLeft, others int) {
		for _, l := range []client.ObjectList{&corev1.ServiceAccountList{}, &rbacv1.RoleBindingList{}, &coordinationv1.LeaseList{}} {
			must(t, k8s.List(ctx, l, client.InNamespace(ns)))
			var items []metav1.Object
			switch v := l.(type) {
			case *corev1.ServiceAccountList:
				for i := range v.Items {
					items = append(items, &v.Items[i])
				}
			case *rbacv1.RoleBindingList:
				for i := range v.Items {
					items = append(items, &v.Items[i])
				}
			case *coordinationv1.LeaseList:
				for i := range v.Items {
					items = append(items, &v.Items[i])
				}
			}
			for _, it := range items {
				if it.GetLabels()[infrav1.ManagedLabel] == "true" {
					managedLeft++
				} else {
					others++
				}
			}
		}
		return managedLeft, others
	}

	t.Run("within the namespace restriction: a namespace that holds no TC, TM or TMP loses its managed SAs, RoleBindings and Leases", func(t *testing.T) {
		res, err := Sweep(ctx, k8s, k8s, []string{busy, idle})
		must(t, err)
		if fmt.Sprint(res.Namespaces) != fmt.Sprint([]string{idle}) || res.ServiceAccounts != 1 || res.RoleBindings != 1 || res.Leases != 1 {
			t.Fatalf("result %+v", res)
		}
		if m, o := count(idle); m != 0 || o != 2 {
			t.Fatalf("idle: %d managed, %d others left", m, o)
		}
		if m, _ := count(busy); m != 3 {
			t.Fatalf("busy lost managed objects: %d left", m)
		}
		if m, _ := count(outside); m != 3 {
			t.Fatal("a namespace outside the restriction was swept")
		}
	})

	t.Run("unrestricted: every empty namespace is swept, an occupied one never", func(t *testing.T) {
		// A machine alone also keeps a namespace, and so does a pool.
		m := newMachine(t, outside, uniqueName("m"), "", nil)
		res, err := Sweep(ctx, k8s, k8s, nil)
		must(t, err)
		if mm, _ := count(outside); mm != 3 {
			t.Fatalf("namespace with a machine swept: %+v", res)
		}
		must(t, k8s.Delete(ctx, m))
		p := newPool(t, outside, uniqueName("p"), "", nil)
		_, err = Sweep(ctx, k8s, k8s, nil)
		must(t, err)
		if mm, _ := count(outside); mm != 3 {
			t.Fatal("namespace with a pool swept")
		}
		must(t, k8s.Delete(ctx, p))
		res, err = Sweep(ctx, k8s, k8s, nil)
		must(t, err)
		if mm, o := count(outside); mm != 0 || o != 2 {
			t.Fatalf("outside: %d managed, %d others left; %+v", mm, o, res)
		}
		if m, _ := count(busy); m != 3 {
			t.Fatal("busy swept")
		}
		// Nothing left to do: a second sweep deletes nothing here.
		res, err = Sweep(ctx, k8s, k8s, []string{busy, idle, outside})
		must(t, err)
		if len(res.Namespaces) != 0 {
			t.Fatalf("second sweep %+v", res)
		}
	})

	t.Run("a read that fails deletes nothing", func(t *testing.T) {
		ns := namespace(t, nil)
		seed(ns)
		res, err := Sweep(ctx, failingLister{k8s}, k8s, nil)
		if err == nil || len(res.Namespaces) != 0 {
			t.Fatalf("result %+v, error %v", res, err)
		}
		if m, _ := count(ns); m != 3 {
			t.Fatal("deleted on a failed read")
		}
	})
}

// failingLister lists CAPTF's Leases and ServiceAccounts normally but fails
// on TerraformMachinePools, as an API server briefly unavailable would.
type failingLister struct{ client.Reader }

func (f failingLister) List(c context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if list.GetObjectKind().GroupVersionKind().Kind == string(infrav1.KindTerraformMachinePool)+"List" {
		return errors.New("the server is currently unable to handle the request")
	}
	return f.Reader.List(c, list, opts...)
}

var (
	_ manager.Runnable               = &Sweeper{}
	_ manager.LeaderElectionRunnable = &Sweeper{}
)

// blockingLister holds every List until its context ends, as a request in
// flight when the manager stops; entered is closed at the first.
type blockingLister struct {
	client.Reader
	entered chan struct{}
	once    *sync.Once
}

func (b blockingLister) List(c context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	b.once.Do(func() { close(b.entered) })
	<-c.Done()
	return c.Err()
}

// A sweep the manager's stop cuts short is no failure: it is neither logged
// as one nor reported, and the sweeper returns nil.
func TestSweeperStoppedMidSweepReportsNothing(t *testing.T) {
	entered := make(chan struct{})
	reported := make(chan error, 1)
	s := &Sweeper{Live: blockingLister{Reader: k8s, entered: entered, once: &sync.Once{}}, Writer: k8s, Period: time.Hour,
		OnSweep: func(_ SweepResult, err error) { reported <- err }}
	sctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- s.Start(sctx) }()
	<-entered
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reported:
		t.Fatalf("a sweep cut short by the stop was reported (error %v)", err)
	default:
	}
}

func TestSweeperRunsAtStartAndEveryPeriod(t *testing.T) {
	ns := namespace(t, nil)
	managed := map[string]string{infrav1.ManagedLabel: "true"}
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RunnerName, Labels: managed}}))
	done := make(chan SweepResult, 16)
	s := &Sweeper{Live: k8s, Writer: k8s, Namespaces: []string{ns}, Period: 100 * time.Millisecond, OnSweep: func(r SweepResult, err error) {
		if err != nil {
			t.Error(err)
		}
		done <- r
	}}
	if !s.NeedLeaderElection() {
		t.Fatal("the sweep runs only while leader")
	}
	sctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- s.Start(sctx) }()
	if r := <-done; r.ServiceAccounts != 1 {
		t.Fatalf("first sweep at start: %+v", r)
	}
	// Later ticks sweep again: a managed object left in the still-empty
	// namespace goes on the next period.
	must(t, k8s.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "captf-run-y", Labels: managed}}))
	timeout := time.After(10 * time.Second)
	for swept := false; !swept; {
		select {
		case r := <-done:
			swept = r.Leases == 1
		case <-timeout:
			t.Fatal("the lease was not swept at a later period")
		}
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// Security Model, per-object errors: one object's serviceAccountName never
// stops another object's Jobs. A name that cannot name a ServiceAccount is
// refused for its own object only; a ServiceAccount that cannot be read
// keeps the binding it has and blocks nobody else.
func TestRunnerRBACNeighbourOverrides(t *testing.T) {
	ns := namespace(t, nil)
	good := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "good", Labels: map[string]string{infrav1.RunnerLabel: "true"}}}
	flaky := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flaky", Labels: map[string]string{infrav1.RunnerLabel: "true"}}}
	must(t, k8s.Create(ctx, good))
	must(t, k8s.Create(ctx, flaky))
	const bad = "Not_A/Name"

	t.Run("an invalid neighbour name: the good object is bound and ready, the bad name is never bound", func(t *testing.T) {
		r, err := EnsureRunnerRBAC(ctx, k8s, k8s, ns, "good", []string{RunnerName, bad, "good"})
		must(t, err)
		wantVerdict(t, r.Verdict, metav1.ConditionTrue, infrav1.RBACReadyReason)
		if got := fmt.Sprint(subjectNames(getRB(t, ns))); got != "[captf-runner good]" {
			t.Fatalf("subjects %s", got)
		}
	})

	t.Run("the object that names it: False/ServiceAccountNotOptedIn naming the field, no API error", func(t *testing.T) {
		r, err := EnsureRunnerRBAC(ctx, k8s, k8s, ns, bad, []string{RunnerName, bad, "good"})
		must(t, err)
		wantVerdict(t, r.Verdict, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason)
		if !strings.Contains(r.Verdict.Message, "not a valid ServiceAccount name") {
			t.Fatalf("message %q", r.Verdict.Message)
		}
	})

	kw, err := client.NewWithWatch(testCfg, client.Options{Scheme: testScheme})
	must(t, err)
	failFlaky := interceptor.NewClient(kw, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.ServiceAccount); ok && key.Name == "flaky" {
				return apierrors.NewServiceUnavailable("injected")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})

	t.Run("a neighbour whose read fails is not added, and the good object is ready", func(t *testing.T) {
		r, err := EnsureRunnerRBAC(ctx, failFlaky, failFlaky, ns, "good", []string{RunnerName, "flaky", "good"})
		must(t, err)
		if !r.Ready() || fmt.Sprint(subjectNames(getRB(t, ns))) != "[captf-runner good]" {
			t.Fatalf("result %+v, subjects %v", r, subjectNames(getRB(t, ns)))
		}
	})

	t.Run("a neighbour already bound whose read fails stays bound", func(t *testing.T) {
		_, err := EnsureRunnerRBAC(ctx, k8s, k8s, ns, "flaky", []string{RunnerName, "flaky", "good"})
		must(t, err)
		r, err := EnsureRunnerRBAC(ctx, failFlaky, failFlaky, ns, "good", []string{RunnerName, "flaky", "good"})
		must(t, err)
		if !r.Ready() || fmt.Sprint(subjectNames(getRB(t, ns))) != "[captf-runner flaky good]" {
			t.Fatalf("result %+v, subjects %v", r, subjectNames(getRB(t, ns)))
		}
	})

	t.Run("the object whose own ServiceAccount cannot be read: False/RBACFailed and the error", func(t *testing.T) {
		r, err := EnsureRunnerRBAC(ctx, failFlaky, failFlaky, ns, "flaky", []string{RunnerName, "flaky", "good"})
		if err == nil {
			t.Fatal("no error")
		}
		wantVerdict(t, r.Verdict, metav1.ConditionFalse, infrav1.RBACFailedReason)
	})
}
