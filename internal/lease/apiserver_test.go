package lease

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
)

var (
	restConfig *rest.Config
	// k8s is a plain client for the tests' own setup and checks.
	k8s client.Client
)

func TestMain(m *testing.M) {
	env, cfg, err := envtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	restConfig = cfg
	k8s, err = client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// manager returns Leases on a client of its own, as a separate manager
// process would have, reading straight from the API server.
func manager(t testing.TB) *Leases {
	t.Helper()
	c, err := client.New(restConfig, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return New(c, c)
}

var nsSeq atomic.Int32

// namespace creates a fresh namespace with the default ServiceAccount that
// pods need (there is no controller-manager to create it).
func namespace(t testing.TB) string {
	t.Helper()
	ns := fmt.Sprintf("lease-%d", nsSeq.Add(1))
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func claim(ns string, kind infrav1.WorkloadKind, name, job string, op infrav1.Operation) Claim {
	return Claim{
		Owner:  owner.Owner{Kind: kind, Namespace: ns, Name: name, UID: types.UID(name + "-uid"), ClusterName: "prod"},
		Suffix: name + "-suffix",
		Job:    job,
		Op:     op,
	}
}

// rival is c claimed for another Job of the same object.
func rival(c Claim, job string) Claim {
	c.Job = job
	return c
}

func getLease(t testing.TB, ns, name string) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, l); err != nil {
		t.Fatalf("reading Lease %s/%s: %v", ns, name, err)
	}
	return l
}

// createJob creates a Job named name; with no Job controller here it stays
// unfinished until finishJob.
func createJob(t testing.TB, ns, name string, deadline int64) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			ActiveDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "example.invalid/x:1"}},
			}},
		},
	}
	if err := k8s.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	return job
}

// finishJob marks the Job failed, as the Job controller would.
func finishJob(t testing.TB, job *batchv1.Job) {
	t.Helper()
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Failed = 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
	}
	if err := k8s.Status().Update(context.Background(), job); err != nil {
		t.Fatalf("finishing Job %s: %v", job.Name, err)
	}
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestRunLease(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	l := manager(t)
	a := claim(ns, infrav1.KindTerraformMachine, "prod-cp-1", "captf-m-prod-cp-1-apply-a1-aaaaaa", infrav1.OperationApply)
	b := rival(a, "captf-m-prod-cp-1-apply-a2-bbbbbb")
	name := RunName(a.Suffix)

	t.Run("the first acquire creates captf-run-<suffix> held by the Job, with its labels and annotations", func(t *testing.T) {
		out, err := l.AcquireRun(ctx, a)
		if err != nil || !out.Acquired {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		lease := getLease(t, ns, name)
		want := map[string]string{
			infrav1.LeaseLabel:         "run",
			infrav1.OwnerKindLabel:     string(infrav1.KindTerraformMachine),
			infrav1.OwnerNameLabel:     "prod-cp-1",
			infrav1.ManagedLabel:       "true",
			clusterv1.ClusterNameLabel: "prod",
		}
		for k, v := range want {
			if lease.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, lease.Labels[k], v)
			}
		}
		if holderOf(lease) != a.Job || lease.Annotations[infrav1.LeaseOpAnnotation] != "apply" || lease.Annotations[infrav1.LeaseAcquiredAtAnnotation] == "" {
			t.Errorf("lease = %+v", lease)
		}
		if _, err := time.Parse(time.RFC3339, lease.Annotations[infrav1.LeaseAcquiredAtAnnotation]); err != nil {
			t.Errorf("lease-acquired-at: %v", err)
		}
	})
	t.Run("re-acquiring for the same Job succeeds without a write", func(t *testing.T) {
		before := getLease(t, ns, name).ResourceVersion
		out, err := l.AcquireRun(ctx, a)
		if err != nil || !out.Acquired {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		if after := getLease(t, ns, name).ResourceVersion; after != before {
			t.Errorf("re-acquire wrote the lease (%s → %s)", before, after)
		}
	})
	t.Run("another Job waits while the holder's Job is about to be created", func(t *testing.T) {
		out, err := l.AcquireRun(ctx, b)
		if err != nil || out.Acquired || out.Holder.Name != a.Job || out.State != Pending {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
	})
	job := createJob(t, ns, a.Job, 3600)
	t.Run("another Job waits while the holder's Job runs", func(t *testing.T) {
		out, err := l.AcquireRun(ctx, b)
		if err != nil || out.Acquired || out.State != Live {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		if h, state, err := l.RunHolder(ctx, ns, a.Suffix); err != nil || h.Name != a.Job || state != Live {
			t.Errorf("RunHolder = %+v, %s, %v", h, state, err)
		}
	})
	t.Run("a finished holder is taken over", func(t *testing.T) {
		finishJob(t, job)
		out, err := l.AcquireRun(ctx, b)
		if err != nil || !out.Acquired || out.TookOver != a.Job || out.TookOverState != Finished {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		lease := getLease(t, ns, name)
		if holderOf(lease) != b.Job || *lease.Spec.LeaseTransitions != 1 {
			t.Errorf("holder %s, transitions %d", holderOf(lease), *lease.Spec.LeaseTransitions)
		}
	})
	t.Run("a release by a Job that does not hold the lease changes nothing", func(t *testing.T) {
		if err := l.ReleaseRun(ctx, ns, a.Suffix, a.Job); err != nil {
			t.Fatal(err)
		}
		if holderOf(getLease(t, ns, name)) != b.Job {
			t.Error("the holder changed")
		}
	})
	t.Run("the holder's release frees the lease for the next Job", func(t *testing.T) {
		if err := l.ReleaseRun(ctx, ns, b.Suffix, b.Job); err != nil {
			t.Fatal(err)
		}
		lease := getLease(t, ns, name)
		if holderOf(lease) != "" || lease.Annotations[infrav1.LeaseOpAnnotation] != "" {
			t.Errorf("lease after release = %+v", lease.Spec)
		}
		c := a
		c.Job, c.Op = "captf-m-prod-cp-1-refresh-a1-cccccc", infrav1.OperationRefresh
		out, err := l.AcquireRun(ctx, c)
		if err != nil || !out.Acquired || out.TookOver != "" {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		if getLease(t, ns, name).Annotations[infrav1.LeaseOpAnnotation] != "refresh" {
			t.Error("lease-op not updated")
		}
	})
	t.Run("cleanup deletes the lease; deleting it again is fine", func(t *testing.T) {
		for range 2 {
			if err := l.DeleteRun(ctx, ns, a.Suffix); err != nil {
				t.Fatal(err)
			}
		}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &coordinationv1.Lease{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("lease still there: %v", err)
		}
		if h, state, err := l.RunHolder(ctx, ns, a.Suffix); err != nil || state != Free || h.Name != "" {
			t.Errorf("RunHolder = %+v, %s, %v", h, state, err)
		}
	})
	t.Run("releasing a lease that does not exist is fine", func(t *testing.T) {
		if err := l.ReleaseRun(ctx, ns, "nothing", "job"); err != nil {
			t.Error(err)
		}
	})
}

func TestRunLeaseTakeoverRules(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	clock := start
	l := manager(t)
	l.Now = func() time.Time { return clock }
	// held starts a case at start in a fresh namespace: a's Job holds its
	// object's run lease, and b claims it for the object's next Job, jobB.
	held := func(t *testing.T, kind infrav1.WorkloadKind, name string, op infrav1.Operation, jobA, jobB string) (a, b Claim) {
		t.Helper()
		clock = start
		a = claim(namespace(t), kind, name, jobA, op)
		if out, err := l.AcquireRun(ctx, a); err != nil || !out.Acquired {
			t.Fatalf("AcquireRun(a) = %+v, %v", out, err)
		}
		return a, rival(a, jobB)
	}

	t.Run("a holder whose Job never appeared is taken over only after the 2-minute grace", func(t *testing.T) {
		_, b := held(t, infrav1.KindTerraformMachinePool, "pool", infrav1.OperationApply, "captf-mp-pool-apply-a1-aaaaaa", "captf-mp-pool-apply-a1-bbbbbb")
		clock = start.Add(MissingHolderGrace - time.Second)
		if out, err := l.AcquireRun(ctx, b); err != nil || out.Acquired || out.State != Pending {
			t.Fatalf("within the grace: %+v, %v", out, err)
		}
		clock = start.Add(MissingHolderGrace + time.Second)
		out, err := l.AcquireRun(ctx, b)
		if err != nil || !out.Acquired || out.TookOverState != Missing {
			t.Fatalf("after the grace: %+v, %v", out, err)
		}
	})
	t.Run("a gone Job whose pod still terminates keeps its lease", func(t *testing.T) {
		a, b := held(t, infrav1.KindTerraformMachine, "m", infrav1.OperationDestroy, "captf-m-m-destroy-a1-aaaaaa", "captf-m-m-destroy-a2-bbbbbb")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: a.Job + "-x7k2p", Namespace: a.Owner.Namespace, Labels: map[string]string{batchv1.JobNameLabel: a.Job}},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x:1"}}},
		}
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		clock = start.Add(time.Hour)
		if out, err := l.AcquireRun(ctx, b); err != nil || out.Acquired || out.State != Pending {
			t.Fatalf("with a pod still running: %+v, %v", out, err)
		}
		pod.Status.Phase = corev1.PodFailed
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if out, err := l.AcquireRun(ctx, b); err != nil || !out.Acquired || out.TookOverState != Missing {
			t.Fatalf("once the pod ended: %+v, %v", out, err)
		}
	})
	t.Run("a Job past its deadline plus the backstop is taken over", func(t *testing.T) {
		a, b := held(t, infrav1.KindTerraformCluster, "prod", infrav1.OperationApply, "captf-c-prod-apply-a1-aaaaaa", "captf-c-prod-apply-a2-bbbbbb")
		createJob(t, a.Owner.Namespace, a.Job, 600)
		clock = time.Now().Add(10*time.Minute + DeadlineBackstop - time.Minute)
		if out, err := l.AcquireRun(ctx, b); err != nil || out.Acquired || out.State != Live {
			t.Fatalf("before deadline + backstop: %+v, %v", out, err)
		}
		clock = time.Now().Add(10*time.Minute + DeadlineBackstop + time.Minute)
		if out, err := l.AcquireRun(ctx, b); err != nil || !out.Acquired || out.TookOverState != Expired {
			t.Fatalf("after deadline + backstop: %+v, %v", out, err)
		}
	})
	t.Run("a holder re-acquiring renews the lease once RenewInterval has passed", func(t *testing.T) {
		ns := namespace(t)
		clock = start
		a := claim(ns, infrav1.KindTerraformCluster, "prod", "captf-c-prod-apply-a1-aaaaaa", infrav1.OperationApply)
		if _, err := l.AcquireRun(ctx, a); err != nil {
			t.Fatal(err)
		}
		clock = start.Add(RenewInterval + time.Second)
		if out, err := l.AcquireRun(ctx, a); err != nil || !out.Acquired {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		lease := getLease(t, ns, RunName(a.Suffix))
		if !lease.Spec.RenewTime.Time.Truncate(time.Second).Equal(clock.Truncate(time.Second)) {
			t.Errorf("renewTime %v, want %v", lease.Spec.RenewTime.Time, clock)
		}
		if !lease.Spec.AcquireTime.Time.Truncate(time.Second).Equal(start.Truncate(time.Second)) {
			t.Errorf("acquireTime moved to %v", lease.Spec.AcquireTime.Time)
		}
	})
}

// TestRunLeaseRace races acquirers from two managers (separate clients)
// against the API server: in every round exactly one wins, and the lease
// names the winner. Rounds cover the three writes an acquire can make:
// creating the lease, taking a free one, and taking over a lapsed holder.
func TestRunLeaseRace(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	managers := []*Leases{manager(t), manager(t)}
	const contenders, rounds = 8, 15
	base := claim(ns, infrav1.KindTerraformMachine, "raced", "", infrav1.OperationApply)

	race := func(t *testing.T, round int) string {
		t.Helper()
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			errs    []error
		)
		startLine := make(chan struct{})
		for i := range contenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := base
				c.Job = fmt.Sprintf("captf-m-raced-apply-a%d-%06d", round+1, i)
				<-startLine
				out, err := managers[i%len(managers)].AcquireRun(ctx, c)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else if out.Acquired {
					winners = append(winners, c.Job)
				}
			}()
		}
		close(startLine)
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("round %d: errors %v", round, errs)
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d acquirers won: %v", round, len(winners), winners)
		}
		if h := holderOf(getLease(t, ns, RunName(base.Suffix))); h != winners[0] {
			t.Fatalf("round %d: lease held by %s, winner %s", round, h, winners[0])
		}
		return winners[0]
	}

	for round := range rounds {
		switch round % 3 {
		case 0: // no lease: every acquirer creates
			if err := managers[0].DeleteRun(ctx, ns, base.Suffix); err != nil {
				t.Fatal(err)
			}
		case 1: // a free lease: every acquirer updates
		case 2: // a finished holder: every acquirer takes over
		}
		winner := race(t, round)
		switch (round + 1) % 3 {
		case 1:
			if err := managers[0].ReleaseRun(ctx, ns, base.Suffix, winner); err != nil {
				t.Fatal(err)
			}
		case 2:
			finishJob(t, createJob(t, ns, winner, 600))
		}
	}
}

func TestClusterOperationGate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	l := manager(t)
	tc := claim(ns, infrav1.KindTerraformCluster, "prod", "captf-c-prod-apply-a1-cccccc", infrav1.OperationApply)
	tm := claim(ns, infrav1.KindTerraformMachine, "prod-cp-1", "captf-m-prod-cp-1-apply-a1-111111", infrav1.OperationApply)
	pool := claim(ns, infrav1.KindTerraformMachinePool, "prod-pool", "captf-mp-prod-pool-apply-a1-222222", infrav1.OperationApply)
	clusterLease := ClusterName(ns, "prod")

	enter := func(t *testing.T, c Claim, gate bool) Entry {
		t.Helper()
		e, err := l.Enter(ctx, c, gate)
		if err != nil {
			t.Fatalf("Enter(%s) = %v", c.Job, err)
		}
		return e
	}

	t.Run("a cluster apply takes its run lease and the cluster write lease", func(t *testing.T) {
		if e := enter(t, tc, true); !e.Allowed {
			t.Fatalf("entry = %+v", e)
		}
		lease := getLease(t, ns, clusterLease)
		if holderOf(lease) != tc.Job || lease.Labels[infrav1.LeaseLabel] != "cluster" || lease.Labels[infrav1.ManagedLabel] != "true" {
			t.Errorf("cluster lease = %+v %+v", lease.Labels, lease.Spec)
		}
		if h, state, err := l.ClusterHolder(ctx, ns, "prod"); err != nil || h.Name != tc.Job || state != Pending {
			t.Errorf("ClusterHolder = %+v, %s, %v", h, state, err)
		}
	})
	t.Run("a machine apply backs off while it is held, giving its run lease back: WaitingForClusterOperation", func(t *testing.T) {
		e := enter(t, tm, true)
		if e.Allowed || e.Wait == nil || e.Wait.Reason != infrav1.WaitingForClusterOperationReason || e.Wait.Holders[0] != tc.Job {
			t.Fatalf("entry = %+v", e)
		}
		if h := holderOf(getLease(t, ns, RunName(tm.Suffix))); h != "" {
			t.Errorf("the machine kept its run lease (%s)", h)
		}
	})
	t.Run("a machine refresh is not gated", func(t *testing.T) {
		r := tm
		r.Job, r.Op = "captf-m-prod-cp-1-refresh-a1-333333", infrav1.OperationRefresh
		if e := enter(t, r, true); !e.Allowed {
			t.Fatalf("entry = %+v", e)
		}
		if err := l.Leave(ctx, r); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("without --cluster-operation-gate a machine does not wait", func(t *testing.T) {
		if e := enter(t, tm, false); !e.Allowed {
			t.Fatalf("entry = %+v", e)
		}
		if err := l.Leave(ctx, tm); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("leaving gives back both of the cluster's leases", func(t *testing.T) {
		if err := l.Leave(ctx, tc); err != nil {
			t.Fatal(err)
		}
		if holderOf(getLease(t, ns, clusterLease)) != "" || holderOf(getLease(t, ns, RunName(tc.Suffix))) != "" {
			t.Error("a lease is still held")
		}
	})

	tc2 := tc
	tc2.Job, tc2.Op = "captf-c-prod-destroy-a1-dddddd", infrav1.OperationDestroy
	t.Run("a cluster destroy waits for in-flight machine operations, keeping both leases: WaitingForMachineOperations", func(t *testing.T) {
		if e := enter(t, tm, true); !e.Allowed {
			t.Fatalf("machine entry = %+v", e)
		}
		if e := enter(t, pool, true); !e.Allowed {
			t.Fatalf("pool entry = %+v", e)
		}
		e := enter(t, tc2, true)
		if e.Allowed || e.Wait == nil || e.Wait.Reason != infrav1.WaitingForMachineOperationsReason {
			t.Fatalf("entry = %+v", e)
		}
		if len(e.Wait.Holders) != 2 || e.Wait.Holders[0] != tm.Job || e.Wait.Holders[1] != pool.Job {
			t.Errorf("holders = %v", e.Wait.Holders)
		}
		if holderOf(getLease(t, ns, clusterLease)) != tc2.Job || holderOf(getLease(t, ns, RunName(tc2.Suffix))) != tc2.Job {
			t.Error("the cluster did not keep both leases")
		}
	})
	t.Run("new machine operations queue behind the waiting cluster", func(t *testing.T) {
		m2 := claim(ns, infrav1.KindTerraformMachine, "prod-md-1", "captf-m-prod-md-1-apply-a1-444444", infrav1.OperationApply)
		e := enter(t, m2, true)
		if e.Allowed || e.Wait.Reason != infrav1.WaitingForClusterOperationReason {
			t.Fatalf("entry = %+v", e)
		}
	})
	t.Run("a machine whose Job finished no longer holds the cluster up", func(t *testing.T) {
		finishJob(t, createJob(t, ns, tm.Job, 600))
		e := enter(t, tc2, true)
		if e.Allowed || len(e.Wait.Holders) != 1 || e.Wait.Holders[0] != pool.Job {
			t.Fatalf("entry = %+v", e)
		}
	})
	t.Run("a machine refresh in flight does not hold the cluster up", func(t *testing.T) {
		if err := l.Leave(ctx, pool); err != nil {
			t.Fatal(err)
		}
		r := pool
		r.Job, r.Op = "captf-mp-prod-pool-refresh-a1-555555", infrav1.OperationRefresh
		if e := enter(t, r, true); !e.Allowed {
			t.Fatalf("refresh entry = %+v", e)
		}
		if e := enter(t, tc2, true); !e.Allowed {
			t.Fatalf("cluster entry = %+v", e)
		}
	})
	t.Run("another cluster Job meets the held write lease: WaitingForClusterOperation, and keeps no run lease", func(t *testing.T) {
		other := claim(ns, infrav1.KindTerraformCluster, "prod-twin", "captf-c-prod-twin-apply-a1-eeeeee", infrav1.OperationApply)
		e := enter(t, other, true)
		if e.Allowed || e.Wait.Reason != infrav1.WaitingForClusterOperationReason || e.Wait.Holders[0] != tc2.Job {
			t.Fatalf("entry = %+v", e)
		}
		if holderOf(getLease(t, ns, RunName(other.Suffix))) != "" {
			t.Error("kept its run lease")
		}
	})
	t.Run("cleanup deletes the cluster lease", func(t *testing.T) {
		if err := l.DeleteCluster(ctx, ns, "prod"); err != nil {
			t.Fatal(err)
		}
		h, state, err := l.ClusterHolder(ctx, ns, "prod")
		if err != nil || state != Free || h.Name != "" {
			t.Errorf("ClusterHolder = %+v, %s, %v", h, state, err)
		}
	})
}

// TestClusterOperationGateRace enters a cluster apply and a machine apply
// at the same moment from two managers, round after round: they never
// both start, and when both back off the cluster gets through on its next
// pass.
func TestClusterOperationGateRace(t *testing.T) {
	ns := namespace(t)
	gateRace(t, ns, manager(t), manager(t))
}

// gateRace enters a cluster apply through lc and a machine apply through
// lm at the same moment, round after round: they never both start, and
// when both back off the cluster gets through on its next pass.
func gateRace(t *testing.T, ns string, lc, lm *Leases) {
	t.Helper()
	ctx := context.Background()
	const rounds = 30
	bothWaited := 0
	for round := range rounds {
		tc := claim(ns, infrav1.KindTerraformCluster, "prod", fmt.Sprintf("captf-c-prod-apply-a%d-cccccc", round+1), infrav1.OperationApply)
		tm := claim(ns, infrav1.KindTerraformMachine, "prod-cp-1", fmt.Sprintf("captf-m-prod-cp-1-apply-a%d-111111", round+1), infrav1.OperationApply)
		var (
			wg     sync.WaitGroup
			ec, em Entry
			errC   error
			errM   error
		)
		startLine := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-startLine; ec, errC = lc.Enter(ctx, tc, true) }()
		go func() { defer wg.Done(); <-startLine; em, errM = lm.Enter(ctx, tm, true) }()
		close(startLine)
		wg.Wait()
		if errC != nil || errM != nil {
			t.Fatalf("round %d: %v / %v", round, errC, errM)
		}
		if ec.Allowed && em.Allowed {
			t.Fatalf("round %d: the cluster and the machine both started", round)
		}
		if !ec.Allowed && !em.Allowed {
			bothWaited++
			again, err := lc.Enter(ctx, tc, true)
			if err != nil || !again.Allowed {
				t.Fatalf("round %d: the cluster's next pass = %+v, %v", round, again, err)
			}
		}
		if err := lc.Leave(ctx, tc); err != nil {
			t.Fatal(err)
		}
		if err := lm.Leave(ctx, tm); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds; both backed off in %d of them", rounds, bothWaited)
}
