package lease

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Name prefixes and the durations the takeover rules use.
const (
	// RunPrefix prefixes an object's run lease: captf-run-<suffix>.
	RunPrefix = "captf-run-"
	// ClusterPrefix prefixes a Cluster's write lease: captf-cluster-<hash>.
	ClusterPrefix = "captf-cluster-"

	// MissingHolderGrace is how long after its last renewal a lease whose
	// holder Job does not exist still counts as held: the Job is created
	// right after the lease is taken, so a missing Job within the grace is
	// one that is about to be created (possibly by another manager).
	MissingHolderGrace = 2 * time.Minute
	// DeadlineBackstop is how long past its activeDeadlineSeconds an
	// unfinished holder Job still counts as running: the pod's 600 s
	// termination grace plus five minutes for the Job controller.
	DeadlineBackstop = 15 * time.Minute
	// RenewInterval is how often a holder that re-acquires its own lease
	// rewrites renewTime.
	RenewInterval = 30 * time.Second
	// WaitRequeue is how soon a lease wait looks again.
	WaitRequeue = 30 * time.Second
)

// RunName is an object's run lease, captf-run-<suffix>, where suffix is its
// state suffix (internal/state.Suffix).
func RunName(suffix string) string { return RunPrefix + suffix }

// ClusterHash is the <hash> of a Cluster's write lease: the first 16 hex
// characters of sha256("<namespace>/<cluster name>"). It depends only on
// names, which survive clusterctl move.
func ClusterHash(namespace, cluster string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + cluster))
	return hex.EncodeToString(sum[:8])
}

// ClusterName is a Cluster's write lease, captf-cluster-<hash>.
func ClusterName(namespace, cluster string) string {
	return ClusterPrefix + ClusterHash(namespace, cluster)
}

// JobFacts are what the API server says about a holder's Job.
type JobFacts struct {
	// Exists is false when the Job is not found.
	Exists bool
	// Finished: the Job has a Complete or Failed condition.
	Finished bool
	// Started is the Job's status.startTime (its creation time before the
	// Job controller has seen it).
	Started time.Time
	// Deadline is the Job's activeDeadlineSeconds (0 when unset: it never
	// expires).
	Deadline time.Duration
}

// Holder is what is known about the current holder of a lease.
type Holder struct {
	// Name is holderIdentity: a Job name, "" when the lease is free.
	Name string
	// Op is the holder's operation (captf.io/lease-op).
	Op infrav1.Operation
	// Renewed is when the lease was last taken or renewed.
	Renewed time.Time
	// Job describes the holder's Job.
	Job JobFacts
	// PodsActive: a pod of the holder's Job has not terminated yet. Only
	// read when the Job itself is gone (a Job deleted in the background
	// leaves its pod terminating for up to 600 s).
	PodsActive bool
}

// HolderState is the verdict on a lease's holder.
type HolderState string

// The holder states.
const (
	// Free: nobody holds the lease.
	Free HolderState = "Free"
	// Live: the holder Job exists and has not finished.
	Live HolderState = "Live"
	// Pending: the holder Job does not exist yet, within the grace, or is
	// gone while one of its pods still runs.
	Pending HolderState = "Pending"
	// Finished: the holder Job has finished; its lease only waits for
	// bookkeeping to give it back.
	Finished HolderState = "Finished"
	// Missing: the holder Job does not exist and the grace has passed.
	Missing HolderState = "Missing"
	// Expired: the holder Job is past its deadline and the backstop and
	// still has not finished.
	Expired HolderState = "Expired"
)

// Held reports whether the state keeps others out of the lease.
func (s HolderState) Held() bool { return s == Live || s == Pending }

// Assess judges the holder of a lease at now (pure). A lease held by a Job
// that finished, is missing past MissingHolderGrace with no pod left, or
// runs past its deadline plus DeadlineBackstop may be taken over; one held
// by a live or pending Job may not.
func Assess(h Holder, now time.Time) HolderState {
	switch {
	case h.Name == "":
		return Free
	case h.Job.Exists && h.Job.Finished:
		return Finished
	case h.Job.Exists:
		if h.Job.Deadline > 0 && !h.Job.Started.IsZero() && now.After(h.Job.Started.Add(h.Job.Deadline+DeadlineBackstop)) {
			return Expired
		}
		return Live
	case h.PodsActive:
		return Pending
	case h.Renewed.IsZero() || now.Before(h.Renewed.Add(MissingHolderGrace)):
		return Pending
	}
	return Missing
}

// Gated reports whether an operation crosses the cluster operation gate:
// apply, destroy and restore do; refresh, drift and plan do not.
func Gated(op infrav1.Operation) bool {
	switch op {
	case infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationRestore:
		return true
	}
	return false
}

// Wait says why a Job may not be created yet. Reason is the condition
// reason and the event reason (WaitingForRunLease,
// WaitingForClusterOperation or WaitingForMachineOperations); Message names
// the Job or Jobs waited for.
type Wait struct {
	Reason  string
	Message string
	// Holders are the Jobs waited for.
	Holders []string
}

// MetricReason is the reason label of captf_lease_waits_total: run_lease,
// cluster_operation or machine_operations.
func (w *Wait) MetricReason() string {
	switch w.Reason {
	case infrav1.WaitingForClusterOperationReason:
		return "cluster_operation"
	case infrav1.WaitingForMachineOperationsReason:
		return "machine_operations"
	}
	return "run_lease"
}

// RunLeaseWait is the wait for an object's run lease held by another Job.
func RunLeaseWait(lease, holder string) *Wait {
	return &Wait{
		Reason:  infrav1.WaitingForRunLeaseReason,
		Message: fmt.Sprintf("Waiting for Job %s, which holds the run lease %s", holder, lease),
		Holders: []string{holder},
	}
}

// MemberMayStart decides whether a TerraformMachine's or
// TerraformMachinePool's Job of op may start, once it holds its run lease,
// given the state of its cluster's write lease (pure). It returns nil when
// it may, else a WaitingForClusterOperation wait: the member must give its
// run lease back.
func MemberMayStart(op infrav1.Operation, gate bool, cluster Holder, clusterState HolderState) *Wait {
	if !gate || !Gated(op) || !clusterState.Held() {
		return nil
	}
	return &Wait{
		Reason:  infrav1.WaitingForClusterOperationReason,
		Message: fmt.Sprintf("Waiting for the cluster's %s Job %s to finish", orUnknown(string(cluster.Op)), cluster.Name),
		Holders: []string{cluster.Name},
	}
}

// InFlight is a machine or pool operation that holds its run lease.
type InFlight struct {
	// Kind and Name are the object's (Name is its owner-name label, hashed
	// when over 63 characters).
	Kind infrav1.WorkloadKind
	Name string
	// Job holds the run lease; Op is its operation.
	Job string
	Op  infrav1.Operation
}

// ClusterMayStart decides whether a TerraformCluster's Job of op may start,
// once it holds its run lease and the cluster's write lease, given the
// machine and pool operations in flight (pure). It returns nil when it may,
// else a WaitingForMachineOperations wait: the cluster keeps both leases.
func ClusterMayStart(op infrav1.Operation, gate bool, inFlight []InFlight) *Wait {
	if !gate || !Gated(op) || len(inFlight) == 0 {
		return nil
	}
	names := make([]string, 0, len(inFlight))
	for _, f := range inFlight {
		names = append(names, f.Job)
	}
	shown := names
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return &Wait{
		Reason:  infrav1.WaitingForMachineOperationsReason,
		Message: fmt.Sprintf("Waiting for %d machine operation(s) of the cluster to finish: %s%s", len(names), strings.Join(shown, ", "), more),
		Holders: names,
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "current"
	}
	return s
}
