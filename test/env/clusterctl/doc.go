// Package clusterctl prepares clusterctl (Cluster API's CLI, used here as
// the library sigs.k8s.io/cluster-api/cmd/clusterctl/client) to install a
// CAPTF release on the local environment with `init --infrastructure
// terraform`, with no network: a local repository, a configuration file and
// the inventory that makes the in-process Cluster API count as installed.
//
// Write lays out a clusterctl local repository and a configuration file
// naming it. The configuration has:
//
//   - providers: terraform (InfrastructureProvider) with the file URL of the
//     release's infrastructure-components.yaml, and cluster-api
//     (CoreProvider), kubeadm (BootstrapProvider) and kubeadm
//     (ControlPlaneProvider), whose built-in GitHub URLs it replaces with
//     local ones;
//   - cert-manager: url (file URL of cert-manager.yaml), version, timeout;
//   - overridesFolder, an empty folder, so no override on the machine
//     applies;
//   - any variables, as top-level keys.
//
// clusterctl reads a file URL (or a plain absolute path) as
// {basepath}/{provider-label}/{version}/{file}: the label must be the
// provider's (infrastructure-terraform, cluster-api, bootstrap-kubeadm,
// control-plane-kubeadm; cert-manager for cert-manager's manifest), the
// version a semantic version (the default version of that repository), and
// the file the components' name. Metadata, versions and templates are read
// from the same folder.
//
// Cluster API's providers get only a metadata.yaml: init reads the core
// provider's metadata to find the management cluster's contract (v1beta2)
// and checks CAPTF's metadata against it. Their components are never read
// as long as the inventory holds a core provider: init adds the core,
// kubeadm bootstrap and kubeadm control-plane providers to its plan only
// when it finds no core provider in the inventory. InstallInventory with
// CAPIInventory records them as init would have: the inventory CRD
// (providers.clusterctl.cluster.x-k8s.io), and one Provider per provider in
// its release namespace (capi-system/cluster-api,
// capi-kubeadm-bootstrap-system/bootstrap-kubeadm,
// capi-kubeadm-control-plane-system/control-plane-kubeadm) with
// providerName, type, version and the labels clusterctl.cluster.x-k8s.io
// and cluster.x-k8s.io/provider. Init then plans cert-manager and terraform
// only. (clusterctl move also needs clusterctl's label on the providers'
// CRDs; test/e2e's framework adds it.)
//
// cert-manager: init first tries to create clusterctl's test resources
// (Namespace cert-manager-test, a self-signed Issuer and a Certificate) once;
// if that fails it creates every object of the manifest, adding the labels
// clusterctl.cluster.x-k8s.io and clusterctl.cluster.x-k8s.io/core=cert-manager
// and the annotation cert-manager.clusterctl.cluster.x-k8s.io/version, then
// retries the test resources every second until the timeout and deletes
// them. Creating an Issuer succeeds only once the API server can call
// cert-manager's validating and mutating webhooks: the webhook must serve
// behind its Service (cert-manager/cert-manager-webhook, port 443 to the
// pod's 10250) and the cainjector must have copied the webhook's CA into both
// webhook configurations. The controller is not needed for that check, but
// is for the Certificates CAPTF's own components request.
package clusterctl
