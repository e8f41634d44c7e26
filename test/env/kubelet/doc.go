// Package kubelet is the local environment's process kubelet: it registers a
// Node, binds unscheduled pods to it and runs the pods bound to it as
// processes on this machine.
//
// For each pod it pulls the images (recording the repository digest as
// imageID) and unpacks each once; materialises Secret, ConfigMap, emptyDir,
// downwardAPI and projected volumes (ServiceAccount tokens come from the
// TokenRequest API, so the pod's own identity and RBAC apply); resolves env
// and envFrom; runs the init containers in order, then the main containers,
// each chrooted into an overlay of its image with the volumes bind-mounted
// in a private mount namespace, as the container's or image's user and in
// its own process group; and reports phase, container states, exit codes
// and termination messages. A deleted pod, or one past activeDeadlineSeconds,
// gets SIGTERM, then SIGKILL after its grace period, and is removed once its
// processes have exited. Container output is kept in per-container log
// files (Kubelet.Logs).
//
// Running as root on Linux is required (mount namespaces, chroot, overlay).
//
// Not done, on purpose: no network isolation (pods share the host's network
// and reach the API server at 127.0.0.1), no resource limits, capabilities
// or seccomp, no probes, no image pull secrets (anonymous pulls; the loopback
// registry needs none), no PersistentVolumeClaim or CSI volumes, no token
// refresh (tokens are requested once per pod; the API server's default
// extension keeps them valid for a year), no heartbeats (the Node stays
// Ready), and pods are not adopted by a restarted kubelet.
package kubelet
