// Package lifecycle is CAPTF's lifecycle test layer: an API-server suite
// (test/envtest: a real kube-apiserver and etcd, no controller-manager, no
// kubelet) that drives the shared reconcile flow of TerraformCluster,
// TerraformMachine and TerraformMachinePool one pass at a time, with no
// manager loop. The tests finish Jobs by hand (the Job's status plus its
// runner pod with the source container's termination message carrying the
// runner's result document), write state Secrets as the kubernetes backend
// would, and check one book rule per case: the conditions it sets, the
// events it emits and the next Job it starts.
//
// The package holds only tests; this file documents it.
package lifecycle
