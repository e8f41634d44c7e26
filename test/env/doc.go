// Package env is CAPTF's local environment: a real control plane (etcd,
// kube-apiserver, kube-controller-manager) on 127.0.0.1, Cluster API's
// controllers, a loopback OCI registry and a process kubelet, on one machine
// with no cloud, kind or Docker. End-to-end tests start it with Start (or
// ForTest); `make dev` runs it through test/env/cmd/captf-env.
//
// Lighter modes serve tests that only need an API server: the zero Options
// start etcd and kube-apiserver alone (about 5 s); ControllerManager adds the
// Job, garbage-collector, namespace and ServiceAccount controllers.
//
// Cluster API runs without its webhooks: see package test/env/capi for the
// fields callers must set themselves.
package env
