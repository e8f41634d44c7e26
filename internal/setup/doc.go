// Package setup assembles the CAPTF manager: its options and flags
// (reference-facts §4), the scheme, the caches, the diagnostics, health and
// webhook servers, leader election, the controllers, and the orphan sweep.
// cmd/manager is a thin wrapper around Command; tests and the local
// environment call New with a rest.Config and run the manager in-process.
//
// Caches (reference-facts §9): the manager's cache holds only what CAPTF
// owns or must watch. Secrets, Jobs, Pods, Leases, ServiceAccounts and
// RoleBindings are cached only when labeled captf.io/managed=true, so a Get
// through the manager's client for any other Secret (a bootstrap,
// variablesFrom, identity source or image pull Secret) or ServiceAccount (an
// override) finds nothing: read those through Wiring.Live. ConfigMaps and
// Namespaces are never cached: the manager's client reads them live. A second cache (Wiring.Variables) holds
// Secrets and ConfigMaps labeled captf.io/variables=true with their data
// stripped, for watches only: internal/watches wakes the objects whose
// spec.variablesFrom names one of them, and the ones using a changed
// TerraformClusterIdentity, through the field indexes New registers on the
// manager's cache. With --namespace every namespaced cache is
// restricted to that namespace; TerraformClusterIdentity is cluster-scoped
// and always watched cluster-wide.
//
// The TerraformClusterIdentity and TerraformMachineTemplate controllers are
// set up here directly; the three workload controllers are set up through
// WorkloadControllers, and webhooks through Webhooks.
//
// rbac.go holds the manager's RBAC markers, from which controller-gen
// writes config/rbac/role.yaml.
package setup
