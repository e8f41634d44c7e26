package jobs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Outcome is how a Job ended, or that it has not.
type Outcome string

// The outcomes.
const (
	// OutcomeActive: the Job has not finished.
	OutcomeActive Outcome = "active"
	// OutcomeSucceeded: the Job completed.
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeFailed: a step failed, or the runner or its pod failed without
	// being stopped from outside. Counts toward backoff.
	OutcomeFailed Outcome = "failed"
	// OutcomeDeadline: the Job hit activeDeadlineSeconds (its Failed
	// condition's reason is DeadlineExceeded). Counts toward backoff even
	// when the runner reported itself interrupted.
	OutcomeDeadline Outcome = "deadline"
	// OutcomeImagePullFailed: the Job hit its deadline while a container's
	// image could not be pulled. Counts like a deadline.
	OutcomeImagePullFailed Outcome = "image-pull-failed"
	// OutcomeImageInvalid: the runner reported image-layout (the image does
	// not follow the Image Contract).
	OutcomeImageInvalid Outcome = "image-invalid"
	// OutcomeInterrupted: stopped from outside (eviction, drain, deletion,
	// SIGTERM) without a deadline. Counts toward nothing.
	OutcomeInterrupted Outcome = "interrupted"
	// OutcomeBlocked: an apply stopped before a destructive plan. Counts
	// toward nothing.
	OutcomeBlocked Outcome = "blocked"
	// OutcomePlanChanged: an approved apply whose new plan did not match.
	// Counts toward nothing.
	OutcomePlanChanged Outcome = "plan-changed"
)

// Classification is what a Job and its pod say about a run.
type Classification struct {
	// Outcome is how the Job ended (OutcomeActive while it runs).
	Outcome Outcome
	// FinishedAt is when the Job finished (its completion time or the time
	// of its Complete or Failed condition); zero while active.
	FinishedAt time.Time
	// StartedAt is when the module container started, else when the Job
	// started; zero when neither is known.
	StartedAt time.Time
	// Result is the decoded result document (Readable false when there is
	// none).
	Result Result
	// ImageID is the module container's imageID as the kubelet reported it
	// ("" when unknown); ImageDigest extracts its sha256 digest.
	ImageID string
	// PullFailure is the waiting reason of a container whose image could
	// not be pulled (ErrImagePull, ImagePullBackOff, …), seen on the pod;
	// set while active too, so a wait on a bad image can be reported early.
	PullFailure string
	// PullContainer names that container (runner or source).
	PullContainer string
	// PlanUnreadable: a plan Job that succeeded but whose plan could not be
	// read from its result. It counts as a failure.
	PlanUnreadable bool
	// Detail is a short explanation for a condition message or an event:
	// the runner's curated summary or a fact about the pod. It never holds
	// raw output.
	Detail string
}

// IsFinished reports whether the Job has finished: a Complete or Failed
// condition that is True. A FailureTarget alone is not finished: its pods
// may still be terminating and writing state.
func IsFinished(job *batchv1.Job) bool {
	_, _, ok := finished(job)
	return ok
}

// finished returns the terminal condition of the Job.
func finished(job *batchv1.Job) (batchv1.JobConditionType, *batchv1.JobCondition, bool) {
	if job == nil {
		return "", nil, false
	}
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		if c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed {
			return c.Type, c, true
		}
	}
	return "", nil, false
}

// Classify says how a Job ended from its status and its pod (nil when the
// pod is gone), decoding the runner's result from the pod's termination
// message. It is pure and never fails.
//
// The rules, in order, for a finished Job:
//   - Complete: succeeded (a plan Job whose plan is unreadable is also
//     flagged PlanUnreadable).
//   - Failed with reason DeadlineExceeded: image-pull-failed when a
//     container was waiting on its image, else deadline. A deadline wins
//     over whatever the runner reported.
//   - Failed with a readable result whose error kind the Job, as it was
//     built, could not report (Unreportable: blocked from a Job without
//     the destructive-plan guard, plan-changed from one without an
//     approved plan): failed.
//   - Failed with a readable result: by its error kind (image-layout →
//     image-invalid, interrupted, blocked, plan-changed, step → failed).
//   - Failed without a readable result: interrupted when the pod is gone,
//     was evicted or disrupted, or the module container was killed by
//     SIGTERM or SIGKILL (not the OOM killer); otherwise failed.
func Classify(job *batchv1.Job, pod *corev1.Pod) Classification {
	var c Classification
	if job == nil {
		c.Outcome = OutcomeActive
		return c
	}
	op := infrav1.Operation(job.Labels[infrav1.OpLabel])
	c.ImageID = containerImageID(pod, SourceContainer)
	c.PullFailure, c.PullContainer = pullFailure(pod)
	c.StartedAt = startedAt(job, pod)

	typ, cond, done := finished(job)
	if !done {
		c.Outcome = OutcomeActive
		if c.PullFailure != "" {
			c.Detail = fmt.Sprintf("container %s is waiting: %s", c.PullContainer, c.PullFailure)
		}
		return c
	}
	c.FinishedAt = cond.LastTransitionTime.Time
	if typ == batchv1.JobComplete && job.Status.CompletionTime != nil {
		c.FinishedAt = job.Status.CompletionTime.Time
	}
	msg, _ := TerminationMessage(pod)
	c.Result = DecodeResult(job.Name, op, msg)

	switch {
	case typ == batchv1.JobComplete:
		c.Outcome = OutcomeSucceeded
		if op == infrav1.OperationPlan && (!c.Result.Readable || c.Result.Plan == nil) {
			c.PlanUnreadable = true
			c.Detail = "the plan Job's plan could not be read"
			if !c.Result.Readable {
				c.Detail += ": " + c.Result.Problem
			}
		}
	case cond.Reason == batchv1.JobReasonDeadlineExceeded:
		if c.PullFailure != "" {
			c.Outcome = OutcomeImagePullFailed
			c.Detail = fmt.Sprintf("container %s stayed in %s until activeDeadlineSeconds", c.PullContainer, c.PullFailure)
		} else {
			c.Outcome = OutcomeDeadline
			c.Detail = "the Job hit activeDeadlineSeconds"
			if job.Spec.ActiveDeadlineSeconds != nil {
				c.Detail = fmt.Sprintf("the Job hit activeDeadlineSeconds (%ds)", *job.Spec.ActiveDeadlineSeconds)
			}
		}
	case c.Result.Readable && c.Result.LastRun.Error != nil && Unreportable(ArmingOf(job), c.Result.LastRun.Error.Kind) != "":
		// A result the Job as built could not have produced (a module
		// that writes its own, claiming to be blocked or to have found
		// its approved plan changed, to dodge backoff): a failure. Its
		// plan and summary are dropped; lastRun says what happened.
		why := Unreportable(ArmingOf(job), c.Result.LastRun.Error.Kind)
		c.Outcome, c.Detail = OutcomeFailed, why
		c.Result.Plan = nil
		c.Result.LastRun.Error = &infrav1.RunError{Kind: infrav1.RunErrorStep, Step: c.Result.LastRun.Error.Step, Summary: truncate(why, maxSummaryBytes)}
	case c.Result.Readable && c.Result.LastRun.Error != nil:
		e := c.Result.LastRun.Error
		switch e.Kind {
		case infrav1.RunErrorImageLayout:
			c.Outcome = OutcomeImageInvalid
		case infrav1.RunErrorInterrupted:
			c.Outcome = OutcomeInterrupted
			if why, own := EvictedForOwnLimits(pod); own {
				c.Outcome, c.Detail = OutcomeFailed, why
			}
		case infrav1.RunErrorBlocked:
			c.Outcome = OutcomeBlocked
		case infrav1.RunErrorPlanChanged:
			c.Outcome = OutcomePlanChanged
		default:
			c.Outcome = OutcomeFailed
		}
		if c.Detail == "" {
			c.Detail = e.Summary
		}
		if c.Detail == "" && e.Step != "" {
			c.Detail = "step " + e.Step + " failed"
		}
	case c.Result.Readable:
		// Failed, yet the runner reported no error: the pod failed after
		// the run (or the document is from an earlier container).
		c.Outcome = OutcomeFailed
		c.Detail = "the Job failed though its runner reported no error"
	default:
		c.Outcome, c.Detail = failedWithoutResult(pod)
	}
	return c
}

// failedWithoutResult classifies a failed Job whose runner left no
// readable result.
func failedWithoutResult(pod *corev1.Pod) (Outcome, string) {
	if pod == nil {
		return OutcomeInterrupted, "the Job's pod is gone and left no result"
	}
	if why, own := EvictedForOwnLimits(pod); own {
		return OutcomeFailed, why
	}
	if pod.Status.Reason == "Evicted" || pod.Status.Reason == "Preempting" {
		return OutcomeInterrupted, "the pod was " + lowerFirst(pod.Status.Reason)
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue {
			return OutcomeInterrupted, "the pod was disrupted (" + cond.Reason + ")"
		}
	}
	for _, statuses := range [2][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			t := statuses[i].State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if t.Reason == "OOMKilled" {
				return OutcomeFailed, fmt.Sprintf("container %s was killed for exceeding its memory limit", statuses[i].Name)
			}
			if t.ExitCode == 128+15 || t.ExitCode == 128+9 || t.Signal == 15 || t.Signal == 9 {
				return OutcomeInterrupted, fmt.Sprintf("container %s was stopped by a signal (exit %d) before writing a result", statuses[i].Name, t.ExitCode)
			}
			return OutcomeFailed, fmt.Sprintf("container %s exited %d without a result", statuses[i].Name, t.ExitCode)
		}
	}
	if pod.DeletionTimestamp != nil {
		return OutcomeInterrupted, "the pod was deleted before it wrote a result"
	}
	return OutcomeInterrupted, "the Job failed and its pod left no result"
}

// ownLimitEvictions are the starts of the kubelet's eviction messages for a
// pod that outgrew its own limits (a container's or the pod's ephemeral
// storage, an emptyDir's sizeLimit), as opposed to node pressure. The
// kubelet sets no DisruptionTarget condition for these.
var ownLimitEvictions = []string{
	"Container ",                  // "Container %s exceeded its local ephemeral storage limit %q."
	"Pod ephemeral local storage", // "Pod ephemeral local storage usage exceeds the total limit of containers %s."
	"Usage of EmptyDir volume",    // "Usage of EmptyDir volume %q exceeds the limit %q."
}

// EvictedForOwnLimits reports whether the kubelet evicted pod for
// exceeding its own limits, and says so. Such a run would fail the same way
// every time, so it counts as a failure, not as an interruption from
// outside (book: Retries and Backoff, "Counting failures").
func EvictedForOwnLimits(pod *corev1.Pod) (string, bool) {
	if pod == nil || pod.Status.Reason != "Evicted" {
		return "", false
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue {
			return "", false
		}
	}
	msg := pod.Status.Message
	for _, prefix := range ownLimitEvictions {
		if strings.HasPrefix(msg, prefix) && (strings.Contains(msg, "limit")) {
			return "the pod was evicted for exceeding its own limits: " + strings.TrimSpace(msg), true
		}
	}
	return "", false
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	if b[0] >= 'A' && b[0] <= 'Z' {
		b[0] += 'a' - 'A'
	}
	return string(b)
}

// pullWaitReasons are the waiting reasons of a container whose image
// cannot be pulled.
var pullWaitReasons = map[string]bool{
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"ErrImageNeverPull": true,
	"InvalidImageName":  true,
}

// pullFailure returns the first image-pull waiting reason on the pod's
// containers (init first) and the container's name.
func pullFailure(pod *corev1.Pod) (string, string) {
	if pod == nil {
		return "", ""
	}
	for _, statuses := range [2][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			if w := statuses[i].State.Waiting; w != nil && pullWaitReasons[w.Reason] {
				return w.Reason, statuses[i].Name
			}
		}
	}
	return "", ""
}

// PullFailure returns the image-pull waiting reason of the pod's
// containers, if any, and the container it concerns.
func PullFailure(pod *corev1.Pod) (reason, container string) { return pullFailure(pod) }

func containerImageID(pod *corev1.Pod, name string) string {
	if pod == nil {
		return ""
	}
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return pod.Status.ContainerStatuses[i].ImageID
		}
	}
	return ""
}

func startedAt(job *batchv1.Job, pod *corev1.Pod) time.Time {
	if pod != nil {
		for i := range pod.Status.ContainerStatuses {
			cs := &pod.Status.ContainerStatuses[i]
			if cs.Name != SourceContainer {
				continue
			}
			switch {
			case cs.State.Running != nil:
				return cs.State.Running.StartedAt.Time
			case cs.State.Terminated != nil:
				return cs.State.Terminated.StartedAt.Time
			}
		}
	}
	if job.Status.StartTime != nil {
		return job.Status.StartTime.Time
	}
	return time.Time{}
}

var digestPattern = regexp.MustCompile(`sha256:[0-9a-f]{64}$`)

// ImageDigest extracts the sha256 digest from a container's imageID
// ("repo@sha256:…", "docker-pullable://repo@sha256:…" or "sha256:…");
// "" when it holds none.
func ImageDigest(imageID string) string {
	return digestPattern.FindString(imageID)
}

// Counts reports whether the outcome counts toward the operation's retry
// backoff (book: Retries and Backoff): failures and deadlines do;
// interrupted, blocked and plan-changed runs do not.
func (o Outcome) Counts() bool {
	switch o {
	case OutcomeFailed, OutcomeDeadline, OutcomeImagePullFailed, OutcomeImageInvalid:
		return true
	}
	return false
}

// MetricResult is the result label of captf_jobs_total: succeeded,
// failed, deadline, interrupted, blocked or plan_changed.
func (o Outcome) MetricResult() string {
	switch o {
	case OutcomeSucceeded:
		return "succeeded"
	case OutcomeDeadline, OutcomeImagePullFailed:
		return "deadline"
	case OutcomeInterrupted:
		return "interrupted"
	case OutcomeBlocked:
		return "blocked"
	case OutcomePlanChanged:
		return "plan_changed"
	}
	return "failed"
}

// ErrorKind is the error_kind label of captf_job_errors_total.
func (c *Classification) ErrorKind() string {
	switch c.Outcome {
	case OutcomeDeadline, OutcomeImagePullFailed:
		return "deadline"
	case OutcomeImageInvalid:
		return string(infrav1.RunErrorImageLayout)
	case OutcomeInterrupted:
		return string(infrav1.RunErrorInterrupted)
	case OutcomeBlocked:
		return string(infrav1.RunErrorBlocked)
	case OutcomePlanChanged:
		return string(infrav1.RunErrorPlanChanged)
	case OutcomeFailed:
		if e := c.Result.LastRun.Error; e != nil {
			return string(e.Kind)
		}
	}
	return "unknown"
}

// Reason is the reason of the condition the operation's outcome sets
// (reference-facts §1.7, §1.9, §1.12; book: Tuning Jobs, "Deadlines"), as
// the operation table (OperationOf) gives it: "" for an active Job and for
// outcomes that set no reason of their own (an interrupted run, and a
// plan-changed run, whose wait the decision reports).
func (c *Classification) Reason(op infrav1.Operation) string {
	return OperationOf(op).Reason(c.Outcome)
}

// Marks are the bookkeeping annotations that keep the classification on
// the Job once it is accounted for (reference-facts §7.2): interrupted,
// destructive-plan-blocked, plan-changed and plan-unreadable, each "true"
// when it applies. Bookkept itself is set by the caller after its status
// patch.
func (c *Classification) Marks() map[string]string {
	m := map[string]string{}
	switch c.Outcome {
	case OutcomeInterrupted:
		m[infrav1.InterruptedAnnotation] = "true"
	case OutcomeBlocked:
		m[infrav1.DestructivePlanBlockedAnnotation] = "true"
	case OutcomePlanChanged:
		m[infrav1.PlanChangedAnnotation] = "true"
	}
	if c.PlanUnreadable {
		m[infrav1.PlanUnreadableAnnotation] = "true"
	}
	return m
}

// Attempt reads the Job's attempt label; 0 when missing or not a number.
func Attempt(job *batchv1.Job) int {
	if job == nil {
		return 0
	}
	n, err := strconv.Atoi(job.Labels[infrav1.AttemptLabel])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
