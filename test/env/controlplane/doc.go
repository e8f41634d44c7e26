// Package controlplane runs a real Kubernetes control plane on 127.0.0.1 for
// CAPTF's tests and local environment: etcd, kube-apiserver and (optionally)
// kube-controller-manager, from the pinned binaries located by test/tools.
//
// It owns the certificate material (a CA, the API server's serving
// certificate, admin and controller-manager client certificates, the
// service-account signing key), the processes and their log files, and the
// admin kubeconfig. The API server authorizes with RBAC and signs
// service-account tokens, so in-cluster clients are subject to real
// permissions.
package controlplane
