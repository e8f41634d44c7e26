package kubelet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/podnet"
)

const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
)

// containerState is what the kubelet knows of one container.
type containerState struct {
	name, image, imageID string
	restarts             int32
	waitingReason        string
	waitingMessage       string
	started              *metav1.Time
	finished             *metav1.Time
	exitCode             int32
	signal               int32
	termReason, termMsg  string
	running              bool
	terminated           bool
	pid                  int
	// ready is the readiness of the running container: true once its
	// startup probe (if any) and its readiness probe (if any) pass.
	ready bool
	// startupDone is true once the startup probe (if any) passed.
	startupDone bool
}

// podWorker runs one pod from binding to termination.
type podWorker struct {
	k   *Kubelet
	ns  string
	nm  string
	uid string
	dir string

	deletedOnce sync.Once
	deleted     chan struct{}
	done        chan struct{}

	mu          sync.Mutex
	grace       int64 // deletion grace period, -1 when unknown
	phase       corev1.PodPhase
	reason, msg string
	startTime   metav1.Time
	volumesOK   bool
	initDone    bool
	inits       []*containerState
	mains       []*containerState
	// podIP and hostIP are the pod's addresses (127.0.0.1 without a pod
	// network, or for hostNetwork pods the host's); netw is its network
	// namespace, when it has one.
	podIP, hostIP string
	netw          *podnet.Pod
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	w := &podWorker{
		k: k, ns: pod.Namespace, nm: pod.Name, uid: string(pod.UID),
		dir:     PodDir(k.opts.Dir, pod.Namespace, pod.Name, string(pod.UID)),
		deleted: make(chan struct{}),
		done:    make(chan struct{}),
		grace:   -1,
		phase:   corev1.PodPending,
		podIP:   k.HostIP(),
		hostIP:  k.HostIP(),
	}
	for _, c := range pod.Spec.InitContainers {
		w.inits = append(w.inits, &containerState{name: c.Name, image: c.Image, waitingReason: "PodInitializing"})
	}
	for _, c := range pod.Spec.Containers {
		reason := "ContainerCreating"
		if len(pod.Spec.InitContainers) > 0 {
			reason = "PodInitializing"
		}
		w.mains = append(w.mains, &containerState{name: c.Name, image: c.Image, waitingReason: reason})
	}
	return w
}

func (w *podWorker) logPath(container string) string {
	return ContainerLogPath(w.dir, container)
}

// PodDir is the folder of a pod under the kubelet's data folder dir:
// pods/<namespace>_<name>_<uid> (Kubernetes names hold no underscore).
func PodDir(dir, namespace, name, uid string) string {
	return filepath.Join(dir, "pods", namespace+"_"+name+"_"+uid)
}

// ContainerLogPath is the log file of a container in a pod's folder:
// logs/<container>.log.
func ContainerLogPath(podDir, container string) string {
	return filepath.Join(podDir, "logs", container+".log")
}

// markDeleted asks the worker to stop the pod; grace is the deletion grace
// period in seconds (-1: the pod's terminationGracePeriodSeconds).
func (w *podWorker) markDeleted(grace int64) {
	w.mu.Lock()
	if grace >= 0 && (w.grace < 0 || grace < w.grace) {
		w.grace = grace
	}
	w.mu.Unlock()
	w.deletedOnce.Do(func() { close(w.deleted) })
}

func (w *podWorker) pids() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var pids []int
	for _, cs := range append(append([]*containerState{}, w.inits...), w.mains...) {
		if cs.running && cs.pid > 0 {
			pids = append(pids, cs.pid)
		}
	}
	return pids
}

// stopCause says why a pod's containers are being stopped.
type stopCause int

const (
	notStopped stopCause = iota
	stopDeleted
	stopDeadline
	stopShutdown
)

func (w *podWorker) run(pod *corev1.Pod) {
	defer close(w.done)
	ctx := w.k.ctx
	log := w.k.log.WithValues("pod", w.ns+"/"+w.nm)
	w.mu.Lock()
	w.startTime = metav1.Now()
	w.mu.Unlock()
	w.report(ctx)

	// stop closes when the pod is deleted, its deadline passes or the
	// kubelet shuts down; cause says which.
	stop := make(chan struct{})
	var (
		causeMu   sync.Mutex
		cause     stopCause
		causeOnce sync.Once
	)
	setCause := func(c stopCause) {
		causeOnce.Do(func() {
			causeMu.Lock()
			cause = c
			causeMu.Unlock()
			close(stop)
		})
	}
	// currentCause reads cause: the kubelet's shutdown can set it while the
	// pod finishes.
	currentCause := func() stopCause {
		causeMu.Lock()
		defer causeMu.Unlock()
		return cause
	}
	var deadline <-chan time.Time
	if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil {
		t := time.NewTimer(time.Duration(*ads) * time.Second)
		defer t.Stop()
		deadline = t.C
	}
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-w.deleted:
			setCause(stopDeleted)
		case <-deadline:
			setCause(stopDeadline)
		case <-ctx.Done():
			setCause(stopShutdown)
		case <-finished:
		}
	}()

	for _, d := range []string{"logs", "volumes", "containers"} {
		if err := os.MkdirAll(filepath.Join(w.dir, d), 0o755); err != nil {
			log.Error(err, "Failed to create pod folder")
		}
	}

	// The pod's network namespace, then volumes, then images; each retried
	// until it works or the pod stops.
	if w.k.opts.PodNetwork != nil && !pod.Spec.HostNetwork {
		defer w.removeNetwork()
		for {
			p, err := w.k.opts.PodNetwork.AddPod()
			if err == nil {
				w.mu.Lock()
				w.netw, w.podIP = p, p.IP.String()
				w.mu.Unlock()
				log.V(1).Info("Pod network ready", "ip", w.podIP, "netns", p.Name)
				break
			}
			w.setWaiting("ContainerCreating", err.Error())
			w.report(ctx)
			if !retryDelay(ctx, stop, time.Second) {
				w.finish(ctx, pod, currentCause())
				return
			}
		}
	}
	// The downward API reads the addresses from the pod.
	pod.Status.PodIP, pod.Status.HostIP = w.podIP, w.hostIP
	pod.Status.PodIPs, pod.Status.HostIPs = []corev1.PodIP{{IP: w.podIP}}, []corev1.HostIP{{IP: w.hostIP}}

	var vols map[string]string
	for vols == nil {
		v, err := materializeVolumes(ctx, w.k.cs, pod, filepath.Join(w.dir, "volumes"))
		if err == nil {
			vols = v
			break
		}
		w.setWaiting("ContainerCreating", err.Error())
		w.report(ctx)
		if !retryDelay(ctx, stop, time.Second) {
			w.finish(ctx, pod, currentCause())
			return
		}
	}
	w.mu.Lock()
	w.volumesOK = true
	w.mu.Unlock()

	imgs := map[string]*image{}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	backoff := time.Second
	for attempt := 0; len(imgs) < len(all); attempt++ {
		var pullErr error
		var failed *corev1.Container
		for i := range all {
			c := &all[i]
			if _, ok := imgs[c.Name]; ok {
				continue
			}
			img, err := w.k.images.get(ctx, c.Image, c.ImagePullPolicy)
			if err != nil {
				pullErr, failed = err, c
				break
			}
			imgs[c.Name] = img
			w.setImageID(c.Name, img.ID)
		}
		if pullErr == nil {
			break
		}
		reason := "ErrImagePull"
		if attempt > 0 {
			reason = "ImagePullBackOff"
		}
		w.setContainerWaiting(failed.Name, reason, pullErr.Error())
		w.report(ctx)
		if !retryDelay(ctx, stop, backoff) {
			w.finish(ctx, pod, currentCause())
			return
		}
		backoff = min(2*backoff, 10*time.Second)
	}

	// Init containers, in order.
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		for {
			code := w.runOne(ctx, pod, c, imgs[c.Name], vols, w.inits[i], stop, currentCause)
			if code == 0 {
				break
			}
			if stopped(stop) || pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				w.finish(ctx, pod, currentCause())
				return
			}
			if !retryDelay(ctx, stop, time.Second) {
				w.finish(ctx, pod, currentCause())
				return
			}
		}
	}
	w.mu.Lock()
	w.initDone = true
	w.mu.Unlock()

	// Main containers, together.
	var wg sync.WaitGroup
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				code := w.runOne(ctx, pod, c, imgs[c.Name], vols, w.mains[i], stop, currentCause)
				if stopped(stop) || pod.Spec.RestartPolicy == corev1.RestartPolicyNever ||
					(code == 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure) {
					return
				}
				if !retryDelay(ctx, stop, time.Second) {
					return
				}
			}
		}()
	}
	wg.Wait()
	w.finish(ctx, pod, currentCause())
}

// removeNetwork deletes the pod's network namespace and veth, once its
// containers have ended.
func (w *podWorker) removeNetwork() {
	w.mu.Lock()
	p := w.netw
	w.netw = nil
	w.mu.Unlock()
	if p == nil {
		return
	}
	if err := p.Remove(); err != nil {
		w.k.log.Error(err, "Failed to remove the pod's network", "pod", w.ns+"/"+w.nm)
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// runOne runs container c once and returns its exit code (-1 when it could
// not start). On stop it delivers SIGTERM to the process group, then
// SIGKILL after the grace period.
func (w *podWorker) runOne(ctx context.Context, pod *corev1.Pod, c *corev1.Container, img *image, vols map[string]string,
	st *containerState, stop <-chan struct{}, cause func() stopCause) int32 {
	if stopped(stop) {
		return -1
	}
	cmd, termLog, err := w.start(ctx, pod, c, img, vols, st)
	if err != nil {
		w.mu.Lock()
		st.waitingReason, st.waitingMessage = "CreateContainerError", err.Error()
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			now := metav1.Now()
			st.waitingReason = ""
			st.terminated, st.exitCode, st.termReason, st.termMsg = true, 128, "StartError", err.Error()
			st.started, st.finished = &now, &now
		}
		w.mu.Unlock()
		w.report(ctx)
		return -1
	}
	w.report(ctx)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	pctx, cancelProbes := context.WithCancel(ctx)
	unhealthy := make(chan time.Duration, 1)
	probesDone := make(chan struct{})
	go func() {
		defer close(probesDone)
		w.probe(pctx, pod, c, st, unhealthy)
	}()
	var waitErr error
	var grace time.Duration
	killed := false
	select {
	case waitErr = <-waited:
	case <-stop:
		grace, killed = w.killGrace(pod, cause()), true
	case grace = <-unhealthy:
		killed = true
		w.k.log.Info("Container failed its liveness or startup probe: restarting it", "pod", w.ns+"/"+w.nm, "container", c.Name)
	}
	if killed {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case waitErr = <-waited:
		case <-t.C:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			waitErr = <-waited
		}
		t.Stop()
	}
	// No probe result lands after the exit.
	cancelProbes()
	<-probesDone
	// Whatever the main process left in its group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	code, sig := int32(0), int32(0)
	if cmd.ProcessState != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = int32(ws.Signal())
			code = 128 + sig
		} else {
			code = int32(cmd.ProcessState.ExitCode())
		}
	} else if waitErr != nil {
		code = 128
	}
	msg := terminationMessage(termLog, w.logPath(c.Name), c.TerminationMessagePolicy, code)
	now := metav1.Now()
	w.mu.Lock()
	st.running, st.terminated, st.pid, st.ready, st.startupDone = false, true, 0, false, false
	st.exitCode, st.signal, st.finished, st.termMsg = code, sig, &now, msg
	st.termReason = "Completed"
	if code != 0 {
		st.termReason = "Error"
	}
	w.mu.Unlock()
	w.report(ctx)
	return code
}

func (w *podWorker) killGrace(pod *corev1.Pod, cause stopCause) time.Duration {
	grace := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	switch cause {
	case stopDeleted:
		w.mu.Lock()
		if w.grace >= 0 {
			grace = w.grace
		}
		w.mu.Unlock()
	case stopShutdown:
		grace = min(grace, 2)
	}
	return time.Duration(grace) * time.Second
}

// start prepares and starts one run of container c.
func (w *podWorker) start(ctx context.Context, pod *corev1.Pod, c *corev1.Container, img *image, vols map[string]string,
	st *containerState) (*exec.Cmd, string, error) {
	env, err := containerEnv(ctx, w.k.cs, pod, c, img, w.k.opts.APIServerHost, w.k.opts.APIServerPort)
	if err != nil {
		return nil, "", err
	}
	argv, err := commandLine(c, img, env)
	if err != nil {
		return nil, "", err
	}
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	exe, err := lookPath(img.Root, argv[0], pathEnv)
	if err != nil {
		return nil, "", err
	}
	uid, gid, groups, err := identity(pod, c, img)
	if err != nil {
		return nil, "", err
	}
	var mounts []mountSpec
	for _, m := range c.VolumeMounts {
		src, ok := vols[m.Name]
		if !ok {
			return nil, "", fmt.Errorf("volume mount %s names no volume of the pod", m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+m.SubPath))
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, "", fmt.Errorf("failed to create subPath %s: %w", m.SubPath, err)
				}
			}
		}
		mounts = append(mounts, mountSpec{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly})
	}
	sortMounts(mounts)

	w.mu.Lock()
	run := st.restarts
	if st.terminated {
		run++
	}
	w.mu.Unlock()
	cdir := filepath.Join(w.dir, "containers", c.Name, strconv.Itoa(int(run)))
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return nil, "", fmt.Errorf("failed to create container folder: %w", err)
	}
	termLog := filepath.Join(cdir, "termination-log")
	if err := os.WriteFile(termLog, nil, 0o666); err != nil {
		return nil, "", fmt.Errorf("failed to create termination log: %w", err)
	}
	if err := os.Chmod(termLog, 0o666); err != nil {
		return nil, "", fmt.Errorf("failed to chmod termination log: %w", err)
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	logFile, err := os.OpenFile(w.logPath(c.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("failed to open container log: %w", err)
	}
	defer logFile.Close()
	workDir := c.WorkingDir
	if workDir == "" {
		workDir = img.Config.WorkingDir
	}
	readOnly := c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem
	w.mu.Lock()
	netns, podIP := "", w.podIP
	if w.netw != nil {
		netns = w.netw.NetnsPath()
	}
	w.mu.Unlock()
	cmd, err := startContainer(containerSpec{
		Hostname:           pod.Name,
		NetNS:              netns,
		PodIP:              podIP,
		ImageRoot:          img.Root,
		Dir:                cdir,
		Mounts:             mounts,
		TerminationLog:     termLog,
		TerminationLogPath: termPath,
		ReadOnlyRoot:       readOnly,
		Path:               exe,
		Args:               argv,
		Env:                env,
		WorkDir:            workDir,
		UID:                uid,
		GID:                gid,
		Groups:             groups,
		Log:                logFile,
	})
	if err != nil {
		return nil, "", err
	}
	now := metav1.Now()
	w.mu.Lock()
	if st.terminated {
		st.restarts++
	}
	st.waitingReason, st.waitingMessage = "", ""
	st.running, st.terminated, st.started, st.finished, st.pid = true, false, &now, nil, cmd.Process.Pid
	w.mu.Unlock()
	w.k.log.V(1).Info("Started container", "pod", w.ns+"/"+w.nm, "container", c.Name, "pid", cmd.Process.Pid)
	return cmd, termLog, nil
}

// terminationMessage reads the file the container wrote its message to,
// falling back to the tail of its log when the policy asks and it failed.
func terminationMessage(termLog, logPath string, policy corev1.TerminationMessagePolicy, code int32) string {
	b, _ := os.ReadFile(termLog)
	if len(b) > maxTerminationMessage {
		b = b[:maxTerminationMessage]
	}
	if len(b) == 0 && policy == corev1.TerminationMessageFallbackToLogsOnError && code != 0 {
		logs, _ := os.ReadFile(logPath)
		lines := strings.Split(strings.TrimRight(string(logs), "\n"), "\n")
		if len(lines) > fallbackLogLines {
			lines = lines[len(lines)-fallbackLogLines:]
		}
		s := strings.Join(lines, "\n")
		if len(s) > fallbackLogBytes {
			s = s[len(s)-fallbackLogBytes:]
		}
		return s
	}
	return string(b)
}

func (w *podWorker) setWaiting(reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, cs := range append(append([]*containerState{}, w.inits...), w.mains...) {
		if !cs.running && !cs.terminated {
			cs.waitingReason, cs.waitingMessage = reason, msg
		}
	}
}

func (w *podWorker) setContainerWaiting(name, reason, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, cs := range append(append([]*containerState{}, w.inits...), w.mains...) {
		if cs.name == name {
			cs.waitingReason, cs.waitingMessage = reason, msg
		}
	}
}

func (w *podWorker) setImageID(name, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, cs := range append(append([]*containerState{}, w.inits...), w.mains...) {
		if cs.name == name {
			cs.imageID = id
		}
	}
}

// finish sets the pod's final phase, reports it and, when the pod was
// deleted, removes it from the API.
func (w *podWorker) finish(ctx context.Context, pod *corev1.Pod, cause stopCause) {
	if cause == stopShutdown {
		return
	}
	w.mu.Lock()
	failed := false
	for _, cs := range w.inits {
		if !cs.terminated || cs.exitCode != 0 {
			failed = true
		}
	}
	for _, cs := range w.mains {
		if !cs.terminated || cs.exitCode != 0 {
			failed = true
		}
	}
	// Containers that never started keep their waiting state (e.g.
	// ErrImagePull, PodInitializing after a failed init container): it
	// says why the pod ended.
	w.phase = corev1.PodSucceeded
	if failed {
		w.phase = corev1.PodFailed
	}
	if cause == stopDeadline {
		w.phase = corev1.PodFailed
		w.reason = "DeadlineExceeded"
		w.msg = "Pod was active on the node longer than the specified deadline"
	}
	w.mu.Unlock()
	w.report(ctx)
	if cause == stopDeleted {
		if err := w.k.forceDelete(w.ns, w.nm, pod.UID); err != nil {
			w.k.log.Error(err, "Failed to remove terminated pod", "pod", w.ns+"/"+w.nm)
		}
	}
}

// reportBackoff spaces the retries of a status report the API server did
// not take (a conflict, or the API server or its etcd down for a while):
// about a minute and a half in all, the delays growing from 200 ms to 9 s,
// as a real kubelet keeps syncing a pod's status until it lands. (No Cap:
// reaching it would end the retries.)
var reportBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 1.1, Jitter: 0.1, Steps: 40}

// report writes the pod's status as the kubelet knows it, retrying every
// error but NotFound.
func (w *podWorker) report(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	err := retry.OnError(reportBackoff, func(err error) bool { return !apierrors.IsNotFound(err) && ctx.Err() == nil }, func() error {
		pod, err := w.k.cs.CoreV1().Pods(w.ns).Get(ctx, w.nm, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if string(pod.UID) != w.uid {
			return nil
		}
		w.fillStatus(pod)
		_, err = w.k.cs.CoreV1().Pods(w.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		w.k.log.Error(err, "Failed to report pod status", "pod", w.ns+"/"+w.nm)
	}
}

func (w *podWorker) fillStatus(pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := &pod.Status
	phase := w.phase
	running := 0
	for _, cs := range w.mains {
		if cs.running {
			running++
		}
	}
	if phase == corev1.PodPending && w.initDone && running > 0 {
		phase = corev1.PodRunning
	}
	st.Phase = phase
	st.Reason, st.Message = w.reason, w.msg
	st.HostIP, st.PodIP = w.hostIP, w.podIP
	st.HostIPs = []corev1.HostIP{{IP: w.hostIP}}
	st.PodIPs = []corev1.PodIP{{IP: w.podIP}}
	start := w.startTime
	st.StartTime = &start

	ready := 0
	for _, cs := range w.mains {
		if cs.running && cs.ready {
			ready++
		}
	}
	allReady := ready == len(w.mains) && phase == corev1.PodRunning
	cond := func(t corev1.PodConditionType, ok bool, reason string) {
		status := corev1.ConditionFalse
		if ok {
			status, reason = corev1.ConditionTrue, ""
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				if st.Conditions[i].Status != status {
					st.Conditions[i].LastTransitionTime = metav1.Now()
				}
				st.Conditions[i].Status, st.Conditions[i].Reason = status, reason
				return
			}
		}
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.Now()})
	}
	notReady := "ContainersNotReady"
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		notReady = "PodCompleted"
	}
	cond(corev1.PodReadyToStartContainers, w.volumesOK, "")
	cond(corev1.PodInitialized, w.initDone, "ContainersNotInitialized")
	cond(corev1.ContainersReady, allReady, notReady)
	cond(corev1.PodReady, allReady, notReady)
	cond(corev1.PodScheduled, true, "")

	st.InitContainerStatuses = w.statuses(w.inits, true)
	st.ContainerStatuses = w.statuses(w.mains, false)
}

func (w *podWorker) statuses(list []*containerState, init bool) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(list))
	for _, cs := range list {
		s := corev1.ContainerStatus{
			Name: cs.name, Image: cs.image, ImageID: cs.imageID, RestartCount: cs.restarts,
		}
		if cs.started != nil || cs.terminated {
			s.ContainerID = "captf-env://" + w.uid + "/" + cs.name + "/" + strconv.Itoa(int(cs.restarts))
		}
		switch {
		case cs.running:
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: *cs.started}
			s.Ready = !init && cs.ready
			t := init || cs.startupDone
			s.Started = &t
		case cs.terminated:
			t := &corev1.ContainerStateTerminated{
				ExitCode: cs.exitCode, Signal: cs.signal, Reason: cs.termReason, Message: cs.termMsg,
				ContainerID: s.ContainerID,
			}
			if cs.started != nil {
				t.StartedAt = *cs.started
			}
			if cs.finished != nil {
				t.FinishedAt = *cs.finished
			}
			s.State.Terminated = t
			s.Ready = init && cs.exitCode == 0
			f := false
			s.Started = &f
		default:
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: cs.waitingReason, Message: cs.waitingMessage}
			f := false
			s.Started = &f
		}
		out = append(out, s)
	}
	return out
}
