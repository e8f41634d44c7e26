// Package terraformclusteridentity is the TerraformClusterIdentity
// controller. An identity's Ready condition is set directly from whether
// its credentials Secret exists (True/SecretFound, False/SecretNotFound; not
// a summary) and status.namespaces lists every namespace holding its
// credential mirror captf-creds-<identity>. Both come from package
// identity, which also holds the data the identity's delete guard needs.
//
// The source Secret is any Secret an operator names and is never cached or
// watched, so each identity is re-read once per sync period; the mirrors are
// CAPTF's own (captf.io/managed=true) and watched, so status.namespaces
// follows them at once. Each pass makes at most one status patch, and none
// when nothing changed. IdentitySecretFound and IdentitySecretNotFound are
// emitted on Ready's transitions, through the events.k8s.io recorder; an
// identity is cluster-scoped, so they land in namespace default.
package terraformclusteridentity
