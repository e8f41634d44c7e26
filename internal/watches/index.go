package watches

import (
	"context"
	"fmt"
	"slices"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// The field indexes AddIndexes registers.
const (
	// ConfigMapSourceIndex indexes TerraformClusters, TerraformMachines and
	// TerraformMachinePools by the ConfigMaps their spec.variablesFrom names.
	ConfigMapSourceIndex = "captf.spec.variablesFrom.configMapRef.name"
	// SecretSourceIndex indexes the same kinds by the Secrets their
	// spec.variablesFrom names.
	SecretSourceIndex = "captf.spec.variablesFrom.secretRef.name"
	// IdentityIndex indexes the same kinds by their own spec.identityRef.
	IdentityIndex = "captf.spec.identityRef.name"
	// PassedIdentityIndex indexes TerraformClusters by the identity their
	// machines and pools without an identityRef of their own use:
	// spec.defaults.identityRef, else spec.identityRef.
	PassedIdentityIndex = "captf.passedIdentity"
	// InheritsIdentityIndex indexes TerraformMachines and
	// TerraformMachinePools without an identityRef of their own by their
	// cluster.x-k8s.io/cluster-name label: the Cluster whose TerraformCluster
	// passes them its identity.
	InheritsIdentityIndex = "captf.inheritsIdentityFrom"
	// TerraformClusterIndex indexes Cluster API Clusters by the
	// TerraformCluster their spec.infrastructureRef names.
	TerraformClusterIndex = "captf.spec.infrastructureRef.terraformCluster"
)

// AddIndexes registers every index of this package on the manager's cache.
// Call it once per manager, before the manager starts.
func AddIndexes(ctx context.Context, fi client.FieldIndexer) error {
	type index struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}
	var all []index
	for _, k := range infrav1.WorkloadKinds() {
		obj := k.NewObject()
		all = append(all,
			index{obj, ConfigMapSourceIndex, configMapSources},
			index{obj, SecretSourceIndex, secretSources},
			index{obj, IdentityIndex, ownIdentity},
		)
		// A cluster passes its identity on to its members, which inherit
		// it (The Kinds, "What a cluster passes to its machines and
		// pools").
		if caps := k.Capabilities(); caps.HasMembers {
			all = append(all, index{obj, PassedIdentityIndex, passedIdentity})
		} else if caps.ClusterMember {
			all = append(all, index{obj, InheritsIdentityIndex, inheritsIdentityFrom})
		}
	}
	all = append(all, index{&clusterv1.Cluster{}, TerraformClusterIndex, terraformClusterOf})
	for _, i := range all {
		if err := fi.IndexField(ctx, i.obj, i.field, i.fn); err != nil {
			return fmt.Errorf("failed to index %T by %s: %w", i.obj, i.field, err)
		}
	}
	return nil
}

// readsSources says whether obj still reads its variablesFrom sources: an
// immutable kind (a TerraformMachine) stops once provisioned (Module
// Variables, "What a change does per kind"); a mutable one (a
// TerraformCluster or TerraformMachinePool) never stops.
func readsSources(w infrav1.Workload) bool {
	if w.Capabilities().MutableInputs {
		return true
	}
	s := w.GetWorkspaceStatus()
	return s.Initialization == nil || s.Initialization.Provisioned == nil || !*s.Initialization.Provisioned
}

// sources returns the names of the ConfigMaps (secret false) or Secrets
// (secret true) obj's spec.variablesFrom names, each once.
func sources(obj client.Object, secret bool) []string {
	w, ok := obj.(infrav1.Workload)
	if !ok || !readsSources(w) {
		return nil
	}
	var out []string
	for _, vs := range w.GetWorkspace().VariablesFrom {
		ref := vs.ConfigMapRef
		if secret {
			ref = vs.SecretRef
		}
		if ref != nil && ref.Name != "" && !slices.Contains(out, ref.Name) {
			out = append(out, ref.Name)
		}
	}
	return out
}

func configMapSources(obj client.Object) []string { return sources(obj, false) }

func secretSources(obj client.Object) []string { return sources(obj, true) }

// ownIdentity is the object's own spec.identityRef.
func ownIdentity(obj client.Object) []string {
	w, ok := obj.(infrav1.Workload)
	if !ok {
		return nil
	}
	if ref := w.GetIdentityRef(); ref != nil && ref.Name != "" {
		return []string{ref.Name}
	}
	return nil
}

// passedIdentity is the identity a TerraformCluster's machines and pools
// without their own identityRef resolve to (The Kinds, "What a cluster
// passes to its machines and pools").
func passedIdentity(obj client.Object) []string {
	tc, ok := obj.(*infrav1.TerraformCluster)
	if !ok {
		return nil
	}
	if d := tc.Spec.Defaults; d != nil && d.IdentityRef != nil && d.IdentityRef.Name != "" {
		return []string{d.IdentityRef.Name}
	}
	return ownIdentity(tc)
}

// inheritsIdentityFrom is the Cluster a machine or pool without its own
// identityRef takes its identity from, by its cluster-name label.
func inheritsIdentityFrom(obj client.Object) []string {
	if len(ownIdentity(obj)) > 0 {
		return nil
	}
	if name := obj.GetLabels()[clusterv1.ClusterNameLabel]; name != "" {
		return []string{name}
	}
	return nil
}

// terraformClusterOf is the TerraformCluster a Cluster's
// spec.infrastructureRef names.
func terraformClusterOf(obj client.Object) []string {
	cl, ok := obj.(*clusterv1.Cluster)
	if !ok {
		return nil
	}
	ref := cl.Spec.InfrastructureRef
	if ref.APIGroup != infrav1.GroupVersion.Group || !infrav1.WorkloadKind(ref.Kind).Capabilities().HasMembers || ref.Name == "" {
		return nil
	}
	return []string{ref.Name}
}
