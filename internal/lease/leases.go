package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// jobNameLabel is the label Kubernetes puts on a Job's pods.
const jobNameLabel = batchv1.JobNameLabel

// maxAttempts bounds the read-decide-write loop of an acquire: each lost
// write re-reads the lease, and the winner's hold then ends the loop, so
// more than a few rounds means the lease is being fought over.
const maxAttempts = 5

// Leases takes, gives back and deletes CAPTF's Leases.
type Leases struct {
	// Client writes (create, update, delete).
	Client client.Client
	// Reader reads the Leases, Jobs and Pods the decisions rest on. It must
	// read from the API server (the manager's APIReader), not a cache.
	Reader client.Reader
	// Hint, when set, is a possibly stale copy of the Leases (the
	// manager's cache). An acquire or release whose first round would end
	// in a write takes that round's lease from Hint instead of reading it
	// live: a create, or an update carrying the copy's resourceVersion, so
	// a stale copy costs a refused write and a live round, never a second
	// holder. A round that decides without writing (the lease is another
	// Job's, or already ours and not due for renewal) reads live.
	Hint client.Reader
	// Synced, when set with Hint, waits until Hint holds the lease at key
	// at version rv (the write just made) and reports whether it does in
	// time. A TerraformMachine or TerraformMachinePool that took its run
	// lease with a write then reads the cluster lease from Hint instead of
	// the API server: Hint delivers a namespace's Leases in the order they
	// were written, so once it holds that write it holds every Lease write
	// before it, and a cluster lease taken before the run lease is there
	// (one taken after it finds the run lease with its live list). Without
	// it, or when Hint does not catch up, the read is live.
	Synced func(ctx context.Context, key types.NamespacedName, rv string) bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// New returns Leases writing through c and reading through r.
func New(c client.Client, r client.Reader) *Leases { return &Leases{Client: c, Reader: r} }

func (l *Leases) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Claim is a Job about to be created, claiming its leases.
type Claim struct {
	// Owner is the object the Job runs for; its ClusterName labels the run
	// lease (the gate finds a cluster's machine leases by it) and names the
	// cluster lease.
	Owner owner.Owner
	// Suffix is the object's state suffix; the run lease is RunName(Suffix).
	Suffix string
	// Job is the Job's name: the holder identity.
	Job string
	// Op is the Job's operation (captf.io/lease-op).
	Op infrav1.Operation
}

func (c *Claim) validate() error {
	switch {
	case c.Owner.Namespace == "" || c.Owner.Name == "":
		return fmt.Errorf("lease claim needs the owner's namespace and name (got %q/%q)", c.Owner.Namespace, c.Owner.Name)
	case c.Suffix == "":
		return fmt.Errorf("lease claim of %s %s/%s has no state suffix", c.Owner.Kind, c.Owner.Namespace, c.Owner.Name)
	case c.Job == "":
		return fmt.Errorf("lease claim of %s %s/%s names no Job", c.Owner.Kind, c.Owner.Namespace, c.Owner.Name)
	}
	return nil
}

// Outcome is the result of an acquire.
type Outcome struct {
	// Acquired: the claimant holds the lease now.
	Acquired bool
	// Version is the lease's resourceVersion as the acquiring write left
	// it, "" when the lease was already held and nothing was written.
	Version string
	// Holder is the Job that holds the lease when it was not acquired.
	Holder Holder
	// State is the verdict on that holder.
	State HolderState
	// TookOver names the previous holder when the lease was taken over
	// from a finished, missing or expired Job.
	TookOver string
	// TookOverState is that holder's state.
	TookOverState HolderState
}

// AcquireRun takes the object's run lease for the claim's Job: it creates
// the lease, takes it when free, renews it when the Job already holds it,
// or takes it over from a holder that is gone for good (Assess). When
// another Job holds it, Acquired is false and Holder names that Job.
func (l *Leases) AcquireRun(ctx context.Context, c Claim) (Outcome, error) {
	if err := c.validate(); err != nil {
		return Outcome{}, err
	}
	key := types.NamespacedName{Namespace: c.Owner.Namespace, Name: RunName(c.Suffix)}
	return l.acquire(ctx, key, leaseLabels(c.Owner, infrav1.LeaseRun), c.Job, c.Op)
}

// AcquireCluster takes the Cluster's write lease for a TerraformCluster's
// Job, under the same rules as AcquireRun.
func (l *Leases) AcquireCluster(ctx context.Context, c Claim) (Outcome, error) {
	if err := c.validate(); err != nil {
		return Outcome{}, err
	}
	if c.Owner.ClusterName == "" {
		return Outcome{}, fmt.Errorf("%s %s/%s has no cluster name for a cluster lease", c.Owner.Kind, c.Owner.Namespace, c.Owner.Name)
	}
	key := types.NamespacedName{Namespace: c.Owner.Namespace, Name: ClusterName(c.Owner.Namespace, c.Owner.ClusterName)}
	return l.acquire(ctx, key, leaseLabels(c.Owner, infrav1.LeaseCluster), c.Job, c.Op)
}

// ReleaseRun gives the object's run lease back if job holds it; a lease
// held by another Job, or no lease, is left alone.
func (l *Leases) ReleaseRun(ctx context.Context, namespace, suffix, job string) error {
	return l.release(ctx, types.NamespacedName{Namespace: namespace, Name: RunName(suffix)}, job)
}

// ReleaseCluster gives the Cluster's write lease back if job holds it.
func (l *Leases) ReleaseCluster(ctx context.Context, namespace, cluster, job string) error {
	return l.release(ctx, types.NamespacedName{Namespace: namespace, Name: ClusterName(namespace, cluster)}, job)
}

// DeleteRun deletes the object's run lease (cleanup after a destroy);
// a missing lease is not an error.
func (l *Leases) DeleteRun(ctx context.Context, namespace, suffix string) error {
	return l.delete(ctx, namespace, RunName(suffix))
}

// DeleteCluster deletes the Cluster's write lease (the TerraformCluster's
// cleanup); a missing lease is not an error.
func (l *Leases) DeleteCluster(ctx context.Context, namespace, cluster string) error {
	return l.delete(ctx, namespace, ClusterName(namespace, cluster))
}

// Entry is the outcome of Enter.
type Entry struct {
	// Allowed: every lease the Job needs is held; create the Job.
	Allowed bool
	// Wait says why not, when not Allowed.
	Wait *Wait
	// TookOver lists holders whose lapsed holds were taken over.
	TookOver []string
}

// Enter takes every lease the claim's Job needs before it is created, in
// the book's order: the run lease; then, with the cluster operation gate on
// (gate) and for an apply, destroy or restore of an object with a cluster
// name, the gate. A TerraformCluster takes the write lease and waits,
// keeping both leases, while machine operations are in flight; a
// TerraformMachine or TerraformMachinePool gives its run lease back and
// waits while the write lease is held. Entering again with the same Job
// after a wait renews what it kept. On an error, leases already taken stay
// with the Job: entering again for it picks them up, Leave gives them back.
func (l *Leases) Enter(ctx context.Context, c Claim, gate bool) (Entry, error) {
	var e Entry
	run, err := l.AcquireRun(ctx, c)
	if err != nil {
		return e, err
	}
	if !run.Acquired {
		e.Wait = RunLeaseWait(RunName(c.Suffix), run.Holder.Name)
		return e, nil
	}
	if run.TookOver != "" {
		e.TookOver = append(e.TookOver, run.TookOver)
	}
	if !gate || !Gated(c.Op) || c.Owner.ClusterName == "" {
		e.Allowed = true
		return e, nil
	}

	if !c.Owner.Kind.Capabilities().TakesClusterLease {
		h, state, err := l.clusterHolderAfter(ctx, c, run.Version)
		if err != nil {
			return e, err
		}
		if w := MemberMayStart(c.Op, gate, h, state); w != nil {
			if err := l.ReleaseRun(ctx, c.Owner.Namespace, c.Suffix, c.Job); err != nil {
				return e, err
			}
			e.Wait = w
			return e, nil
		}
		e.Allowed = true
		return e, nil
	}

	cl, err := l.AcquireCluster(ctx, c)
	if err != nil {
		return e, err
	}
	if !cl.Acquired {
		// Another Job of the same Cluster (a second TerraformCluster naming
		// it) holds the write lease: give the run lease back and wait.
		if err := l.ReleaseRun(ctx, c.Owner.Namespace, c.Suffix, c.Job); err != nil {
			return e, err
		}
		e.Wait = &Wait{
			Reason:  infrav1.WaitingForClusterOperationReason,
			Message: fmt.Sprintf("Waiting for Job %s, which holds the cluster lease %s", cl.Holder.Name, ClusterName(c.Owner.Namespace, c.Owner.ClusterName)),
			Holders: []string{cl.Holder.Name},
		}
		return e, nil
	}
	if cl.TookOver != "" {
		e.TookOver = append(e.TookOver, cl.TookOver)
	}
	inFlight, err := l.MachineOperations(ctx, c.Owner.Namespace, c.Owner.ClusterName)
	if err != nil {
		return e, err
	}
	if w := ClusterMayStart(c.Op, gate, inFlight); w != nil {
		e.Wait = w
		return e, nil
	}
	e.Allowed = true
	return e, nil
}

// Leave gives back the leases the claim's Job holds: its run lease and,
// for a TerraformCluster, the Cluster's write lease. The reconcile calls it
// when it deletes the finished Job's per-run Secret, and when a Job it
// entered for will not be created after all.
func (l *Leases) Leave(ctx context.Context, c Claim) error {
	if err := c.validate(); err != nil {
		return err
	}
	errs := []error{l.ReleaseRun(ctx, c.Owner.Namespace, c.Suffix, c.Job)}
	if c.Owner.Kind.Capabilities().TakesClusterLease && c.Owner.ClusterName != "" {
		errs = append(errs, l.ReleaseCluster(ctx, c.Owner.Namespace, c.Owner.ClusterName, c.Job))
	}
	return errors.Join(errs...)
}

// RunHolder reads an object's run lease and judges its holder; a missing
// lease is Free.
func (l *Leases) RunHolder(ctx context.Context, namespace, suffix string) (Holder, HolderState, error) {
	return l.judge(ctx, types.NamespacedName{Namespace: namespace, Name: RunName(suffix)})
}

// ClusterHolder reads the Cluster's write lease and judges its holder; a
// missing lease is Free.
func (l *Leases) ClusterHolder(ctx context.Context, namespace, cluster string) (Holder, HolderState, error) {
	return l.judge(ctx, types.NamespacedName{Namespace: namespace, Name: ClusterName(namespace, cluster)})
}

// clusterHolderAfter judges the Cluster's write lease for a member that
// just took its run lease, leaving it at version runVersion: from Hint once
// Hint holds that write (see Synced), else live.
func (l *Leases) clusterHolderAfter(ctx context.Context, c Claim, runVersion string) (Holder, HolderState, error) {
	key := types.NamespacedName{Namespace: c.Owner.Namespace, Name: ClusterName(c.Owner.Namespace, c.Owner.ClusterName)}
	run := types.NamespacedName{Namespace: c.Owner.Namespace, Name: RunName(c.Suffix)}
	if runVersion != "" && l.Hint != nil && l.Synced != nil && l.Synced(ctx, run, runVersion) {
		return l.judgeFrom(ctx, l.Hint, key)
	}
	return l.judge(ctx, key)
}

// judge reads the lease at key, live, and judges its holder; a missing
// lease is Free.
func (l *Leases) judge(ctx context.Context, key types.NamespacedName) (Holder, HolderState, error) {
	return l.judgeFrom(ctx, l.Reader, key)
}

// judgeFrom is judge reading the lease through r (the holder's Job is
// read live).
func (l *Leases) judgeFrom(ctx context.Context, r client.Reader, key types.NamespacedName) (Holder, HolderState, error) {
	lease := &coordinationv1.Lease{}
	if err := r.Get(ctx, key, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return Holder{}, Free, nil
		}
		return Holder{}, "", fmt.Errorf("failed to read Lease %s: %w", key, err)
	}
	h, err := l.holder(ctx, lease)
	if err != nil {
		return Holder{}, "", err
	}
	return h, Assess(h, l.now()), nil
}

// MachineOperations lists the cluster's machine and pool operations in
// flight: run leases labeled with the cluster's name and a machine or pool
// owner kind, whose holder is live or pending and runs an apply, destroy or
// restore. They are sorted by Job name.
func (l *Leases) MachineOperations(ctx context.Context, namespace, cluster string) ([]InFlight, error) {
	list := &coordinationv1.LeaseList{}
	if err := l.Reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{
		infrav1.LeaseLabel:         infrav1.LeaseRun,
		clusterv1.ClusterNameLabel: owner.LabelValue(cluster),
	}); err != nil {
		return nil, fmt.Errorf("failed to list the run Leases of cluster %s/%s: %w", namespace, cluster, err)
	}
	now := l.now()
	var out []InFlight
	for i := range list.Items {
		lease := &list.Items[i]
		kind := infrav1.WorkloadKind(lease.Labels[infrav1.OwnerKindLabel])
		if !kind.Capabilities().ClusterMember {
			continue
		}
		name := holderName(lease)
		op := infrav1.Operation(lease.Annotations[infrav1.LeaseOpAnnotation])
		if name == "" || !Gated(op) {
			continue
		}
		h, err := l.holder(ctx, lease)
		if err != nil {
			return nil, err
		}
		if Assess(h, now).Held() {
			out = append(out, InFlight{Kind: kind, Name: lease.Labels[infrav1.OwnerNameLabel], Job: name, Op: op})
		}
	}
	slices.SortFunc(out, func(a, b InFlight) int {
		switch {
		case a.Job < b.Job:
			return -1
		case a.Job > b.Job:
			return 1
		}
		return 0
	})
	return out, nil
}

// acquire is the read-decide-write loop shared by both leases. Every write
// carries the resourceVersion it decided on (or is a create), so a
// concurrent acquirer's win shows up as a conflict, and the next round
// reads the winner.
func (l *Leases) acquire(ctx context.Context, key types.NamespacedName, labels map[string]string, job string, op infrav1.Operation) (Outcome, error) {
	hinted := l.Hint != nil
	for range maxAttempts {
		now := l.now()
		cur, err := l.read(ctx, key, hinted, func(lease *coordinationv1.Lease, found bool) bool {
			// The hint decides only what is written: a lease to create,
			// or a free one to take.
			return !found || holderName(lease) == ""
		})
		hinted = false
		if apierrors.IsNotFound(err) {
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: labels}}
			hold(lease, job, op, now, true)
			err := l.Client.Create(ctx, lease)
			switch {
			case err == nil:
				return Outcome{Acquired: true, Version: lease.ResourceVersion}, nil
			case apierrors.IsAlreadyExists(err):
				continue
			}
			return Outcome{}, fmt.Errorf("failed to create Lease %s: %w", key, err)
		}
		if err != nil {
			return Outcome{}, fmt.Errorf("failed to read Lease %s: %w", key, err)
		}

		var out Outcome
		switch current := holderName(cur); {
		case current == job:
			// Ours already: renew now and then, and repair the labels.
			if !renewDue(cur, now) && hasLabels(cur, labels) {
				return Outcome{Acquired: true}, nil
			}
			hold(cur, job, op, now, false)
		case current == "":
			hold(cur, job, op, now, true)
		default:
			h, err := l.holder(ctx, cur)
			if err != nil {
				return Outcome{}, err
			}
			state := Assess(h, now)
			if state.Held() {
				return Outcome{Holder: h, State: state}, nil
			}
			out.TookOver, out.TookOverState = current, state
			hold(cur, job, op, now, true)
		}
		for k, v := range labels {
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			cur.Labels[k] = v
		}
		err = l.Client.Update(ctx, cur)
		switch {
		case err == nil:
			out.Acquired, out.Version = true, cur.ResourceVersion
			return out, nil
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			continue
		}
		return Outcome{}, fmt.Errorf("failed to update Lease %s: %w", key, err)
	}
	return Outcome{}, fmt.Errorf("lease %s is contended: no decision after %d attempts", key, maxAttempts)
}

// read returns the lease: from Hint when hinted and what Hint holds (the
// lease, or found false when it has none) leads to a write (a create, or
// an update with the copy's resourceVersion), else live.
func (l *Leases) read(ctx context.Context, key types.NamespacedName, hinted bool, writes func(lease *coordinationv1.Lease, found bool) bool) (*coordinationv1.Lease, error) {
	cur := &coordinationv1.Lease{}
	if hinted {
		err := l.Hint.Get(ctx, key, cur)
		if (apierrors.IsNotFound(err) && writes(cur, false)) || (err == nil && writes(cur, true)) {
			return cur, err
		}
		cur = &coordinationv1.Lease{}
	}
	return cur, l.Reader.Get(ctx, key, cur)
}

// hold makes job the lease's holder at now; transition marks a change of
// holder (a new acquire time and one more transition).
func hold(lease *coordinationv1.Lease, job string, op infrav1.Operation, now time.Time, transition bool) {
	t := metav1.NewMicroTime(now)
	grace := int32(MissingHolderGrace / time.Second)
	lease.Spec.HolderIdentity = &job
	lease.Spec.RenewTime = &t
	lease.Spec.LeaseDurationSeconds = &grace
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[infrav1.LeaseOpAnnotation] = string(op)
	if transition || lease.Spec.AcquireTime == nil {
		lease.Spec.AcquireTime = &t
		lease.Annotations[infrav1.LeaseAcquiredAtAnnotation] = now.UTC().Format(time.RFC3339)
	}
	if transition {
		n := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			n = *lease.Spec.LeaseTransitions
		}
		if lease.CreationTimestamp.IsZero() {
			n = -1 // a new lease starts at 0
		}
		n++
		lease.Spec.LeaseTransitions = &n
	}
}

func renewDue(lease *coordinationv1.Lease, now time.Time) bool {
	r := renewed(lease)
	return r.IsZero() || !now.Before(r.Add(RenewInterval))
}

func hasLabels(lease *coordinationv1.Lease, labels map[string]string) bool {
	for k, v := range labels {
		if lease.Labels[k] != v {
			return false
		}
	}
	return true
}

// release clears the holder when job holds the lease.
func (l *Leases) release(ctx context.Context, key types.NamespacedName, job string) error {
	hinted := l.Hint != nil
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := l.read(ctx, key, hinted, func(lease *coordinationv1.Lease, found bool) bool {
			// The hint decides only what is written: job's hold given
			// back (a lease missing from the hint may be one the cache
			// has not seen yet: read live).
			return found && holderName(lease) == job
		})
		hinted = false
		if err != nil {
			return err
		}
		if holderName(cur) != job {
			return nil
		}
		cur.Spec.HolderIdentity = nil
		delete(cur.Annotations, infrav1.LeaseOpAnnotation)
		delete(cur.Annotations, infrav1.LeaseAcquiredAtAnnotation)
		return l.Client.Update(ctx, cur)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to release Lease %s held by Job %s: %w", key, job, err)
	}
	return nil
}

func (l *Leases) delete(ctx context.Context, namespace, name string) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := l.Client.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete Lease %s/%s: %w", namespace, name, err)
	}
	return nil
}

// holder gathers the facts about a lease's holder: its Job and, when the
// Job is gone, whether a pod of it still runs.
func (l *Leases) holder(ctx context.Context, lease *coordinationv1.Lease) (Holder, error) {
	h := Holder{
		Name:    holderName(lease),
		Op:      infrav1.Operation(lease.Annotations[infrav1.LeaseOpAnnotation]),
		Renewed: renewed(lease),
	}
	if h.Name == "" {
		return h, nil
	}
	job := &batchv1.Job{}
	err := l.Reader.Get(ctx, types.NamespacedName{Namespace: lease.Namespace, Name: h.Name}, job)
	switch {
	case err == nil:
		h.Job = JobFacts{Exists: true, Finished: jobs.IsFinished(job), Started: job.CreationTimestamp.Time}
		if job.Status.StartTime != nil {
			h.Job.Started = job.Status.StartTime.Time
		}
		if d := job.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
			h.Job.Deadline = time.Duration(*d) * time.Second
		}
		return h, nil
	case !apierrors.IsNotFound(err):
		return h, fmt.Errorf("failed to read Job %s/%s holding Lease %s: %w", lease.Namespace, h.Name, lease.Name, err)
	}
	pods := &corev1.PodList{}
	if err := l.Reader.List(ctx, pods, client.InNamespace(lease.Namespace), client.MatchingLabels{jobNameLabel: h.Name}); err != nil {
		return h, fmt.Errorf("failed to list the pods of Job %s/%s holding Lease %s: %w", lease.Namespace, h.Name, lease.Name, err)
	}
	for i := range pods.Items {
		if p := pods.Items[i].Status.Phase; p != corev1.PodSucceeded && p != corev1.PodFailed {
			h.PodsActive = true
			break
		}
	}
	return h, nil
}

func holderName(lease *coordinationv1.Lease) string {
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func renewed(lease *coordinationv1.Lease) time.Time {
	switch {
	case lease.Spec.RenewTime != nil:
		return lease.Spec.RenewTime.Time
	case lease.Spec.AcquireTime != nil:
		return lease.Spec.AcquireTime.Time
	}
	return lease.CreationTimestamp.Time
}

// leaseLabels are a lease's labels: captf.io/lease (run or cluster), the
// owner's kind and name (for a cluster lease, the TerraformCluster's), the
// cluster name when known, and managed.
func leaseLabels(o owner.Owner, which string) map[string]string {
	l := o.Labels()
	l[infrav1.LeaseLabel] = which
	return l
}
