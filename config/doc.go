// Package config holds CAPTF's Kubernetes manifests, rendered with
// kustomize: crd (the CRDs with their Cluster API contract labels), rbac
// (the manager's ClusterRole generated from internal/setup's markers, its
// bindings, leader election, and the static captf-runner ClusterRole),
// manager (namespace captf-system and the captf-controller-manager
// Deployment) and default (all of them: infrastructure-components.yaml).
// metadata.yaml is clusterctl's release-series metadata. The Go tests here
// render default and apply it to a real API server, and run the manager
// with exactly the shipped RBAC.
package config
