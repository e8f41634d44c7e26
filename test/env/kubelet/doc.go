// Package kubelet is the local environment's process kubelet: it registers a
// Node, binds unscheduled pods to it and runs the pods bound to it as
// processes on this machine.
//
// Binding: there is no kube-scheduler; each kubelet binds an unbound pod its
// Node admits by the scheduler's own predicates (k8s.io/component-helpers):
// the pod's nodeSelector and required node affinity match the Node's labels,
// and it tolerates each of the Node's NoSchedule and NoExecute taints
// (Options.Labels, Options.Taints). Several kubelets may run side by side,
// one Node each, sharing one image store (Options.ImagesFrom); a pod no
// Node admits stays Pending. Preferred affinity, pod (anti-)affinity,
// topology spread and resource requests are not considered.
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
// processes have exited. Containers of restartPolicy Always (and OnFailure,
// after a failure) are started again a second after they end. Container
// output is kept in per-container log files (Kubelet.Logs).
//
// Probes: httpGet (HTTP or HTTPS, the certificate unchecked, as the real
// kubelet does) and tcpSocket startup, readiness and liveness probes run
// with their initialDelaySeconds, periodSeconds, timeoutSeconds,
// successThreshold and failureThreshold, dialled from the host at the pod's
// address. A container is ready (containerStatuses[].ready, and the pod's
// ContainersReady and Ready conditions once all are) when its startup probe
// and then its readiness probe pass, at once when it has neither; it stops
// being ready when its readiness probe fails. A container failing its
// startup or liveness probe failureThreshold times in a row gets SIGTERM
// (SIGKILL after the probe's or pod's grace period) and is restarted as
// restartPolicy says.
//
// Networking: without Options.PodNetwork, pods share the host's network,
// their podIP and hostIP are 127.0.0.1, and they reach the API server at
// Options.APIServerHost (127.0.0.1). With it, each pod that is not
// hostNetwork gets a network namespace of its own on the environment's
// bridge (package test/env/podnet) before its volumes: its containers join
// it before they start, so they share lo and eth0 and can all listen on the
// same ports as another pod's; status.podIP/podIPs report its address (so
// does the downward API's status.podIP), status.hostIP and the Node's
// InternalIP the network's host address, where the API server serves
// (KUBERNETES_SERVICE_HOST and _PORT, with the ServiceAccount token and
// ca.crt, make client-go's in-cluster configuration work); /etc/hosts names
// the pod at its address. The namespace and veth are removed once the
// pod's containers have ended (Kubelet.Stop waits for it).
//
// Running as root on Linux is required (mount namespaces, chroot, overlay;
// network namespaces and veths with a pod network).
//
// Not done, on purpose: no Service proxy (a ClusterIP goes nowhere; the API
// server reaches Services through their EndpointSlices, see package
// test/env), no DNS (pods keep their image's /etc/resolv.conf), no resource
// limits, capabilities or seccomp, exec and grpc probes (they are not run
// and count as passing), no restart back-off (CrashLoopBackOff), no image
// pull secrets (anonymous pulls; the loopback registry needs none), no
// PersistentVolumeClaim or CSI volumes, no token refresh (tokens are
// requested once per pod; the API server's default extension keeps them
// valid for a year), no heartbeats (the Node stays Ready), and pods are not
// adopted by a restarted kubelet.
package kubelet
