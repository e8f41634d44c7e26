// Package install proves that a CAPTF release installs the way every
// Cluster API provider installs: with clusterctl, from the release folder
// `make release` writes, on a management cluster that runs pods.
//
// TestClusterctlInit builds a release (hack/release all, this machine's
// platform only), starts a local environment with a pod network
// (test/env Options.PodNetwork: a Deployment's replicas on their own
// addresses, Services routed to ready endpoints, probes), pushes the
// release's manager and no-op images and cert-manager's images to the
// loopback registry, and then does what a user does, with Cluster API's
// own clusterctl binary and the pinned kubectl:
//
//   - clusterctl init --infrastructure terraform:<version>, with a
//     configuration naming the release folder as a local repository and
//     the registry as the image override (the air-gapped install of the
//     Installation page); clusterctl installs cert-manager from its
//     manifest, then CAPTF's components;
//   - the manager scaled to two replicas: both Ready by their probes, one
//     leader, both serving the webhooks with the certificate cert-manager
//     issued, whose CA the cainjector put into the webhook configuration;
//   - the Quick Start: clusterctl generate yaml (the identity) and
//     clusterctl generate cluster, piped to kubectl apply;
//   - the leading manager pod deleted while the first Job runs: the other
//     replica takes the lease, admission keeps answering through the
//     Service, and the bring-up converges with one Job per object;
//   - clusterctl describe cluster;
//   - clusterctl delete --infrastructure terraform: CAPTF's Deployment,
//     webhook configuration and inventory entry go, its CRDs and every
//     cluster's objects and state stay.
//
// Cluster API's own controllers run in the test process, as in the rest of
// the local environment; the clusterctl inventory records them so that
// init installs cert-manager and CAPTF only (test/env/clusterctl).
package install
