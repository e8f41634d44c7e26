// Package owner describes the Terraform* object that owns what CAPTF creates
// for it (Jobs, per-run and durable Secrets, state Secrets, backups and
// leases): its kind, namespace, name, UID and cluster, the owner reference
// those objects carry, and the owner labels that select them.
//
// It is a leaf: it imports only the API package and apimachinery, so both
// internal/state and internal/jobs describe an owner the same way.
package owner
