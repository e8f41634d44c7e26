// Package env is CAPTF's local environment: a real control plane (etcd,
// kube-apiserver, kube-controller-manager) on 127.0.0.1, Cluster API's
// controllers and admission webhooks, a loopback OCI registry and a process
// kubelet, on one machine with no cloud, kind or Docker.
//
// Tests start it with Start, or ForTest which stops it at the end of the
// test (and keeps its folder, with every log, when the test failed):
//
//	e := env.ForTest(t, env.Options{CAPI: true, Kubelet: true, Registry: true,
//		CRDPaths: []string{"config/crd/bases"}})
//	ref, _ := e.PushImage(ctx, "captf/noop-cluster:dev", img) // <registry>/captf/noop-cluster@sha256:…
//	// e.Config / e.KubeconfigPath: admin (system:masters) access
//	// e.Client (Kubernetes + Cluster API types), e.Clientset
//	// e.Logs(ns, pod, container): what a container wrote
//
// Lighter modes serve tests that only need an API server: the zero Options
// start etcd and kube-apiserver alone (about 3 s warm); ControllerManager
// adds the Job, garbage-collector, namespace, ServiceAccount, token and root
// CA controllers (about 4 s). The full environment starts in 6-10 s.
//
// Options.Separate runs the registry, Cluster API's controllers and the
// kubelet in a child process instead of the calling one: captf-env (see
// test/env/cmd/captf-env), built without -race into <Dir>/bin and attached
// to the control plane the caller starts (its -control-plane-kubeconfig flag). Start
// returns once the child has written its env-file, its last step after
// Cluster API's webhooks answer, its caches synced, the kubelet's Node is
// registered and the registry serves; a child that exits first fails Start
// with the tail of its log (<Dir>/logs/captf-env.log). Stop sends it
// SIGTERM and waits while its kubelet stops the pods and its managers end.
// The folder keeps the same layout (controlplane/logs, kubelet/pods, capi),
// and Logs, PushImage, ImageRef and StartProcess work as in-process;
// Env.Kubelet and Env.CAPI are nil. test/e2e runs this way, so that its
// race-instrumented binary spends the race detector on CAPTF's manager and
// the scenarios, not on image pulls and Cluster API; Env.EnvBinary's
// push-images command builds and pushes CAPTF's images (package
// test/env/images) outside it too. The package tests of test/env, its
// kubelet and its capi run the components in-process, as they test them.
//
// Options.PodNetwork gives pods addresses of their own, for what runs as
// in a cluster (a Deployment of several replicas on one port, admission
// webhooks behind a Service): a network per environment (a bridge and a /24
// of 198.18.0.0/15, package test/env/podnet), a network namespace per pod
// that is not hostNetwork. The API server then serves on the network's host
// address only (Env.APIServerHost; Env.Config and the kubeconfig name it),
// which the host and the pods reach; it routes calls to a Service (admission
// webhooks, aggregated APIs) to a ready endpoint of its EndpointSlices
// (--enable-aggregator-routing), which the controller manager's
// EndpointSlice controller maintains from the pods' readiness probes; and
// the controller manager also runs the Deployment and ReplicaSet
// controllers (PodNetworkControllers). Stop removes the network with the
// pods; an environment that ended without Stop leaves its bridge, veths
// and namespaces, which the next environment to claim that /24 removes.
// With Separate, the child's kubelet joins the network the calling process
// made. Pods reach only the network: not 127.0.0.1 of the host (so not the
// loopback registry or the Cluster API webhooks: the kubelet pulls images,
// the API server calls webhooks), nor anything off the machine.
//
// Not done: no Service proxy (ClusterIPs reach nothing; pods that call a
// Service themselves must use its endpoints) and no cluster DNS.
//
// The CAPTF manager plugs in through Options.Manager (a function run
// in-process once everything is up) or Options.ManagerCommand (a binary run
// with KUBECONFIG and CAPTF_ENV_REGISTRY set).
//
// `make dev` runs the same environment through test/env/cmd/captf-env.
//
// What the process kubelet does and does not do is described in package
// test/env/kubelet; what differs in Cluster API from a management cluster,
// in package test/env/capi.
package env
