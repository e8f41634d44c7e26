// Package terraformmachinetemplate is the TerraformMachineTemplate
// controller: it resolves a template's status.capacity and status.nodeInfo,
// for Cluster Autoscaler scale-from-zero, from the io.captf.capacity and
// io.captf.node-info labels of the image its spec.template.spec.source.image
// names (book: Image Contract, "OCI labels"; Contract - Machine Role).
//
// The labels are read from the registry's image config with
// go-containerregistry, authenticating with the template's
// spec.template.spec.jobs.imagePullSecrets when it has any (read live: they
// are not CAPTF's Secrets, so no cache holds them). A template is resolved
// once per image: status.capacitySource.image records the image the
// capacity came from, and a new spec image is resolved again. The outcome
// is the CapacityResolved condition (True: CapacityResolved or
// CapacityNotDeclared; False: CapacityLabelInvalid or ImageInspectFailed,
// which is retried), with a CapacityResolved event when capacity or
// nodeInfo changes and an ImageInspectFailed event when inspection starts
// failing. Registry errors never carry a credential into a condition,
// event or log: only the image reference and the registry's own message.
//
// What a template's image makes the manager do is bounded: a manifest,
// config or any other registry response is read up to 4 MiB
// (MaxManifestBytes, MaxConfigBytes), at most MaxConcurrentInspections
// inspections read at once, and without --allow-private-registries no
// registry on an address that is not public (specialRanges) is reached.
package terraformmachinetemplate
