// Package contract holds CAPTF's module contract, version v1alpha1, as data
// and pure functions (book: Module Contract, Contract - Common, Cluster Role,
// Machine Role, MachinePool Role):
//
//   - the three roles and the Terraform* kind each one serves;
//   - each role's inputs (name, Terraform type, whether the controller may
//     render null, whether it is sensitive) in the order the generated root
//     declares them;
//   - each role's outputs and what a null value means for them;
//   - the reserved names a user variable may not take (every captf_ name,
//     the role's contract inputs, the module meta-arguments);
//   - the limits the Cluster API markers put on mapped outputs;
//   - output decoding: from the JSON value of each root output (as the state
//     reader hands it over) to plain Go values with the controller-side
//     defaults applied (provider_id "" is null, addresses in canonical order,
//     failure domains controlPlane defaulting to true, interruptible null is
//     false, provider_id_list sorted and de-duplicated, instances capped),
//     and the OutputsValid verdict the book names for what it finds.
//
// The package imports no Kubernetes client library; reason strings equal the
// api/v1alpha1 constants of the same names (checked by a test).
package contract
