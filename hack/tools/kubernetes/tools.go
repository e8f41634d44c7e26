//go:build tools

// Package tools pins the Kubernetes binaries that CAPTF's tests and local
// environment run: the control plane, and kubectl for the operator.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
