// Package identity owns the credentials step of CAPTF's reconcile flow and
// the TerraformClusterIdentity's own status:
//
//   - resolving which TerraformClusterIdentity an object uses (its own
//     identityRef; for a machine or pool, else its cluster's
//     spec.defaults.identityRef, else the cluster's spec.identityRef) and
//     whether the identity allows the object's namespace (allowedNamespaces:
//     list or selector, unset allows none), mapped onto the IdentityAllowed
//     condition;
//   - the credential mirror captf-creds-<identity>: a byte copy of the
//     identity's source Secret in each namespace that uses it, carrying the
//     captf.io/source-hash of the source data (never the values), a
//     non-blocking owner reference per object whose spec names the identity
//     (MirrorOwner: a TerraformCluster stands for its machines and pools,
//     so a fleet adds one reference whatever its size), rewritten when
//     the source changes, never written over a Secret that is not this
//     identity's mirror, deleted when the namespace is no longer allowed or
//     its last owner is gone; mapped onto the CredentialsMirrored condition;
//   - the runner RBAC of a namespace: the captf-runner ServiceAccount and the
//     captf-runner RoleBinding to the static captf-runner ClusterRole, whose
//     subjects are the ServiceAccounts the namespace's objects run as (an
//     override must carry captf.io/runner=true); mapped onto the
//     RunnerRBACReady condition;
//   - the namespace sweep that removes CAPTF's ServiceAccounts,
//     RoleBindings and Leases from namespaces that no longer hold any
//     TerraformCluster, TerraformMachine or TerraformMachinePool;
//   - a TerraformClusterIdentity's Ready condition and status.namespaces,
//     and the data its delete guard needs (who resolves to it, which
//     namespaces hold a mirror of it), both counted only in namespaces the
//     identity allows and, for mirrors, only those CAPTF made;
//   - which allowedNamespaces changes widen who receives the credentials
//     (AllowedNamespacesWidening), for the admission check that such a
//     change needs get on the source Secret.
//
// Reconcile runs the whole credentials step for one object and returns its
// three conditions, the reason that holds its Jobs and the events due;
// Sweeper runs the sweep at manager start and every sync period.
//
// Decisions are pure functions over plain facts (tested with tables); API
// reads and writes are small functions taking a controller-runtime client.
// Credential values never reach a condition message, an event, an error or
// a log line: only key names, object names and hashes do.
package identity
