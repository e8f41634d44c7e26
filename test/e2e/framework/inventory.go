package framework

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/clusterctl"
)

// InventoryProvider is one provider of a clusterctl provider inventory.
type InventoryProvider struct {
	// Name is the inventory name ("cluster-api", "infrastructure-terraform"),
	// ProviderName the provider's own ("cluster-api", "terraform").
	Name, ProviderName string
	Type               clusterctlv1.ProviderType
	Namespace          string
	Version            string
	// Group is the API group of its CRDs.
	Group string
}

// InventoryProviders are the providers a local environment runs, as
// clusterctl init would record them: Cluster API's core, kubeadm bootstrap
// and kubeadm control plane at capiVersion, and CAPTF at captfVersion.
func InventoryProviders(capiVersion, captfVersion string) []InventoryProvider {
	return []InventoryProvider{
		{"cluster-api", "cluster-api", clusterctlv1.CoreProviderType, "capi-system", capiVersion, "cluster.x-k8s.io"},
		{"bootstrap-kubeadm", "kubeadm", clusterctlv1.BootstrapProviderType, "capi-kubeadm-bootstrap-system", capiVersion, "bootstrap.cluster.x-k8s.io"},
		{"control-plane-kubeadm", "kubeadm", clusterctlv1.ControlPlaneProviderType, "capi-kubeadm-control-plane-system", capiVersion, "controlplane.cluster.x-k8s.io"},
		{"infrastructure-terraform", "terraform", clusterctlv1.InfrastructureProviderType, "captf-system", captfVersion, infrav1.GroupVersion.Group},
	}
}

// InstallProviderInventory leaves on an environment what clusterctl init
// leaves for clusterctl move to read: the inventory's CRD, one Provider
// object per provider in its namespace, and clusterctl's label on every
// CRD of the providers' groups (move discovers the kinds of the CRDs that
// carry it). kubeconfig is an admin kubeconfig of the environment.
func InstallProviderInventory(ctx context.Context, cfg *rest.Config, kubeconfig string, providers []InventoryProvider) error {
	var records []clusterctlv1.Provider
	byGroup := map[string]string{}
	for _, p := range providers {
		byGroup[p.Group] = p.Name
		records = append(records, clusterctlv1.Provider{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: map[string]string{
				clusterctlv1.ClusterctlLabel: "", clusterv1ProviderLabel: p.Name,
			}},
			ProviderName: p.ProviderName, Type: string(p.Type), Version: p.Version,
		})
	}
	if err := clusterctl.InstallInventory(ctx, kubeconfig, records); err != nil {
		return err
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		return err
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		name, ok := byGroup[crd.Spec.Group]
		if !ok {
			// The other Cluster API groups (addons, ipam, runtime) come
			// with its core.
			if !strings.HasSuffix(crd.Spec.Group, ".cluster.x-k8s.io") || crd.Spec.Group == clusterctlv1.GroupVersion.Group {
				continue
			}
			name = "cluster-api"
		}
		base := crd.DeepCopy()
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[clusterctlv1.ClusterctlLabel] = ""
		if _, set := crd.Labels[clusterv1ProviderLabel]; !set {
			crd.Labels[clusterv1ProviderLabel] = name
		}
		if err := c.Patch(ctx, crd, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("label CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

// clusterv1ProviderLabel is Cluster API's provider label, which clusterctl
// puts on every component of a provider.
const clusterv1ProviderLabel = infrav1.ProviderLabel
