// Package watches owns what wakes a TerraformCluster, TerraformMachine or
// TerraformMachinePool besides the object itself and what it owns: its
// variablesFrom sources and the TerraformClusterIdentity it resolves to
// (book: Module Variables, "What a change does per kind"; Identities and
// Credentials, "Point the identity at a different Secret" and "Revoke
// access").
//
// Every mapping goes through a field index of the manager's cache
// (AddIndexes), so an event costs a lookup of the objects that name what
// changed, never a list of a namespace:
//
//   - a labeled ConfigMap or Secret (captf.io/variables=true) wakes the
//     objects of its namespace whose spec.variablesFrom names it; a
//     TerraformMachine only until it is provisioned, since it never reads
//     its sources again afterwards;
//   - a TerraformClusterIdentity wakes the TerraformClusters whose
//     spec.identityRef names it, the machines and pools whose own
//     identityRef names it, and the machines and pools without their own
//     identityRef whose cluster passes it down (spec.defaults.identityRef,
//     else spec.identityRef), found through the Cluster API Cluster whose
//     spec.infrastructureRef names that TerraformCluster and the
//     cluster.x-k8s.io/cluster-name label of the machine or pool.
//
// The ConfigMaps and Secrets are watched through the manager's second,
// label-selected cache, which keeps only their metadata: an unlabeled
// object never reaches the manager, so memory stays flat however many
// unrelated ConfigMaps and Secrets a cluster holds, and taking the label
// off (or putting it on) is seen as the source leaving (or joining) the
// watch. An identity's source Secret carries no CAPTF label and is not
// watched (Identities and Credentials, "Rotate credentials"); the
// identity's own Ready condition, which the TerraformClusterIdentity
// controller re-reads every sync period, wakes its users when the Secret
// appears or goes.
package watches
