//go:build tools

// Package tools pins the Kubernetes control-plane binaries that CAPTF's
// tests and local environment run.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
