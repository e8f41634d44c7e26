// Package certmanager provides the real cert-manager that clusterctl
// installs on the local environment's management cluster: its three images,
// built from binaries compiled from cert-manager's Go module, and the
// cert-manager.yaml manifest that points at them.
//
// Binaries. hack/tools/install.sh certmanager builds cert-manager's
// controller, webhook and cainjector from github.com/cert-manager/cert-manager
// at Version (hack/tools/certmanager). cert-manager keeps each program's main
// package in a command module of its own, and the Go module proxy serves
// none of them, so the three main packages are CAPTF's: they parse the flags
// the chart's Deployments pass and start cert-manager's own controllers,
// issuers, webhook server and injectors. The controller leaves out the
// Venafi issuer, whose client library the proxy does not serve either.
//
// Images. Image puts a binary at the path cert-manager's published images
// use (/app/cmd/<component>/<component>, also the entrypoint), with an empty
// /tmp, run as user 65532 like cert-manager's distroless base; PushImages
// pushes the three to a registry under cert-manager/cert-manager-<component>:<Version>.
//
// Manifest. hack/tools/install.sh certmanager-manifest renders
// cert-manager.yaml from the Helm chart in the cert-manager module with
// Helm's Go library (hack/tools/certmanager-manifest), with the settings of
// cert-manager's release render: the Namespace, the six CRDs, then the
// ServiceAccounts, RBAC, Services, Deployments and the two webhook
// configurations (cert-manager.io/inject-ca-from-secret pointing at the
// webhook's CA Secret, which the cainjector copies into them). Rendering the
// real chart keeps every object, label and flag the release has, rather
// than a hand-made copy to keep in step; Helm stays in a tool module of its
// own because it requires newer Kubernetes libraries than CAPTF's. Manifest
// takes that release manifest and replaces the release's image references
// with the pushed ones; everything else is left as rendered. clusterctl
// adds its own labels and version annotation when it applies it.
//
// The controller's --acme-http01-solver-image still names the release's
// solver image: ACME HTTP-01 challenges need a public ACME server and are
// not part of the local environment.
package certmanager
