// Package terraformclusteridentity is the TerraformClusterIdentity
// controller. An identity's Ready condition is set directly from whether
// its credentials Secret exists (True/SecretFound, False/SecretNotFound; not
// a summary) and status.namespaces lists every namespace the identity
// allows that holds its credential mirror captf-creds-<identity> as CAPTF
// made it (labels, and an owner reference to an existing TerraformCluster,
// TerraformMachine or TerraformMachinePool of that namespace). Both come
// from package identity, which also holds the data the identity's delete
// guard needs, counted by the same rule. A change of a Namespace's labels
// that allowedNamespaces.selector matches is seen at the next sync period.
//
// The source Secret is any Secret an operator names and is never cached or
// watched, so each identity is re-read once per sync period; the mirrors are
// CAPTF's own (captf.io/managed=true) and watched, so status.namespaces
// follows them at once. Each pass makes at most one status patch, and none
// when nothing changed. IdentitySecretFound and IdentitySecretNotFound are
// emitted on Ready's transitions, through the events.k8s.io recorder; an
// identity is cluster-scoped, so they land in namespace default.
package terraformclusteridentity
