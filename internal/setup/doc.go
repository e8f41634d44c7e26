// Package setup assembles the CAPTF manager: scheme, flags, caches, indexes,
// controllers and webhooks. rbac.go holds the manager's RBAC markers, from
// which controller-gen writes config/rbac/role.yaml.
package setup
