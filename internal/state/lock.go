package state

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LockInfo is the backend's lock info, the JSON both runtimes keep in the
// app.terraform.io/lock-info annotation of the lock Lease while they hold it.
type LockInfo struct {
	ID        string    `json:"ID"`
	Operation string    `json:"Operation"`
	Info      string    `json:"Info"`
	Who       string    `json:"Who"`
	Version   string    `json:"Version"`
	Created   time.Time `json:"Created"`
	Path      string    `json:"Path"`
}

// Lock is what the lock Lease says.
type Lock struct {
	// Exists is false when there is no lock Lease (no init ran yet, or it
	// was cleaned up).
	Exists bool
	// ID is the Lease's holderIdentity, the lock ID; "" when not held.
	ID string
	// Info is the parsed lock info; nil when absent or unreadable.
	Info *LockInfo
	// InfoProblem says why Info is nil while the lock is held.
	InfoProblem string
}

// Held reports whether something holds the lock.
func (l Lock) Held() bool { return l.ID != "" }

// ReadLock reads the backend's lock Lease for a suffix. A missing Lease is a
// free lock, not an error.
func ReadLock(ctx context.Context, c client.Reader, namespace, suffix string) (Lock, error) {
	var lease coordinationv1.Lease
	name := LockLeaseName(suffix)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return Lock{}, nil
		}
		return Lock{}, fmt.Errorf("failed to get lock Lease %s/%s: %w", namespace, name, err)
	}
	return LockFromLease(&lease), nil
}

// LockFromLease interprets a lock Lease.
func LockFromLease(lease *coordinationv1.Lease) Lock {
	l := Lock{Exists: true}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return l
	}
	l.ID = *lease.Spec.HolderIdentity
	raw, ok := lease.Annotations[LockInfoAnnotation]
	switch {
	case !ok || raw == "":
		l.InfoProblem = "the Lease has no " + LockInfoAnnotation + " annotation"
	default:
		var info LockInfo
		if err := json.Unmarshal([]byte(raw), &info); err != nil {
			l.InfoProblem = "the " + LockInfoAnnotation + " annotation is not lock info JSON"
		} else {
			l.Info = &info
		}
	}
	return l
}

// RunnerPod is a fact about one of the object's own runner pods that exists
// now.
type RunnerPod struct {
	// Name is the pod's name, which is its hostname.
	Name string
	// Exited is true once the pod can no longer hold a lock: its phase is
	// Succeeded or Failed, or every container has terminated.
	Exited bool
}

// RunnerPodOf reduces a pod to the facts ClassifyLock needs.
func RunnerPodOf(pod *corev1.Pod) RunnerPod {
	exited := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if !exited && len(pod.Status.ContainerStatuses) > 0 {
		exited = true
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Terminated == nil {
				exited = false
				break
			}
		}
	}
	return RunnerPod{Name: pod.Name, Exited: exited}
}

// LockOwners are the facts about the object's own runners, gathered by the
// caller: the runner pods that exist now and the names of the runner Jobs
// it still keeps (a Job's pods are named <job>-<5 characters>, and runner
// Job names are at most 57 characters so the pod name, the hostname in the
// lock info, is never truncated).
type LockOwners struct {
	Pods []RunnerPod
	Jobs []string
}

// LockHolder classifies who holds the state lock.
type LockHolder string

const (
	// LockFree: nobody holds the lock.
	LockFree LockHolder = "Free"
	// LockStale: one of the object's own runner pods holds it and that pod
	// is gone or exited; the next Job force-unlocks it with the lock ID.
	LockStale LockHolder = "Stale"
	// LockOwnRunner: one of the object's own runner pods holds it and is
	// still running.
	LockOwnRunner LockHolder = "OwnRunner"
	// LockForeign: anything else holds it (a workstation, another tool, a
	// holder that cannot be identified): left alone and reported as
	// StateReadable=False/StateLocked.
	LockForeign LockHolder = "Foreign"
)

// LockVerdict is the classification of a lock and what it was based on.
type LockVerdict struct {
	Holder LockHolder
	// ID is the lock ID to force-unlock (set unless the lock is free).
	ID string
	// Pod is the runner pod that holds a stale or own lock.
	Pod string
	// Who, Operation and Created come from the lock info, when readable.
	Who       string
	Operation string
	Created   time.Time
	// Problem says why a held lock's holder could not be identified.
	Problem string
}

// ClassifyLock decides whose the lock is. It is a pure function of the lock
// and the facts about the object's own runners.
func ClassifyLock(l Lock, owners LockOwners) LockVerdict {
	if !l.Held() {
		return LockVerdict{Holder: LockFree}
	}
	v := LockVerdict{Holder: LockForeign, ID: l.ID, Problem: l.InfoProblem}
	if l.Info == nil {
		return v
	}
	v.Who, v.Operation, v.Created = l.Info.Who, l.Info.Operation, l.Info.Created
	at := strings.LastIndexByte(l.Info.Who, '@')
	if at < 0 || at == len(l.Info.Who)-1 {
		v.Problem = "the lock info names no host"
		return v
	}
	host := l.Info.Who[at+1:]
	for _, p := range owners.Pods {
		if p.Name == host {
			v.Pod = host
			if p.Exited {
				v.Holder = LockStale
			} else {
				v.Holder = LockOwnRunner
			}
			return v
		}
	}
	for _, job := range owners.Jobs {
		if isPodOfJob(host, job) {
			v.Pod = host
			v.Holder = LockStale
			return v
		}
	}
	return v
}

// isPodOfJob reports whether a pod name is one the Job controller gives a
// pod of job: <job>-<5 lowercase alphanumerics>.
func isPodOfJob(pod, job string) bool {
	rest, ok := strings.CutPrefix(pod, job+"-")
	if !ok || len(rest) != 5 {
		return false
	}
	for _, c := range rest {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Message describes a held lock for a condition message: holder, operation
// and time, never more.
func (v LockVerdict) Message() string {
	switch v.Holder {
	case LockFree:
		return "state lock is free"
	case LockStale:
		return fmt.Sprintf("state lock %s is held by runner pod %s, which is gone or has exited; the next Job force-unlocks it", v.ID, v.Pod)
	case LockOwnRunner:
		return fmt.Sprintf("state lock %s is held by running runner pod %s", v.ID, v.Pod)
	}
	who := v.Who
	if who == "" {
		who = "an unknown holder"
	}
	msg := fmt.Sprintf("state lock %s is held by %s", v.ID, who)
	if v.Operation != "" {
		msg += " for " + v.Operation
	}
	if !v.Created.IsZero() {
		msg += " since " + v.Created.UTC().Format(time.RFC3339)
	}
	if v.Problem != "" {
		msg += " (" + v.Problem + ")"
	}
	return msg + "; it is not one of this object's runner pods and is left alone"
}

// ClearStaleLock clears the lock Lease's holder and lock info, as the
// backend's own unlock does, if and only if it is still held under id; the
// update carries the Lease's resourceVersion, so a Lease changed since it
// was read is left alone (a conflict error). It reports whether it cleared
// the lock. The manager uses it for a stale lock on a state never written:
// the runtime's init takes the lock to write the first state, so a Job
// could not get far enough to force-unlock it.
func ClearStaleLock(ctx context.Context, c client.Client, namespace, suffix, id string) (bool, error) {
	var lease coordinationv1.Lease
	name := LockLeaseName(suffix)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to get lock Lease %s/%s: %w", namespace, name, err)
	}
	if id == "" || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != id {
		return false, nil
	}
	lease.Spec.HolderIdentity = nil
	delete(lease.Annotations, LockInfoAnnotation)
	if err := c.Update(ctx, &lease); err != nil {
		return false, fmt.Errorf("failed to clear stale lock %s on Lease %s/%s: %w", id, namespace, name, err)
	}
	return true, nil
}
