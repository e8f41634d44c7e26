package terraformmachinepool

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
)

// Adapter is the TerraformMachinePool's part of the shared flow; it finds its
// MachinePool through machinePoolOwner.
type Adapter struct {
	lifecycle.OwnedBy[*clusterv1.MachinePool]
}

// machinePoolOwner is how a TerraformMachinePool finds its MachinePool.
var machinePoolOwner = lifecycle.OwnerKind[*clusterv1.MachinePool]{
	Kind:          "MachinePool",
	Get:           util.GetOwnerMachinePool,
	WaitingReason: infrav1.WaitingForOwnerMachinePoolReason,
	Pending:       func(refs []metav1.OwnerReference) bool { return len(refs) > 0 },
	Refs: func(mp *clusterv1.MachinePool) (clusterv1.ContractVersionedObjectReference, string) {
		return mp.Spec.Template.Spec.InfrastructureRef, mp.Spec.ClusterName
	},
}

var _ lifecycle.Adapter = &Adapter{}

// NewAdapter returns the TerraformMachinePool adapter reading through c.
func NewAdapter(c client.Client) *Adapter {
	return &Adapter{lifecycle.OwnedBy[*clusterv1.MachinePool]{Client: c, Owner: machinePoolOwner}}
}

// Kind implements lifecycle.Adapter.
func (a *Adapter) Kind() infrav1.WorkloadKind { return infrav1.KindTerraformMachinePool }

// Role implements lifecycle.Adapter.
func (a *Adapter) Role() contract.Role { return contract.RoleMachinePool }

// BuildInputs renders the machinepool role's inputs, on every reconcile for
// the pool's whole life.
func (a *Adapter) BuildInputs(ctx context.Context, p *lifecycle.Pass) error {
	tmp := p.Obj.(*infrav1.TerraformMachinePool)
	mp := a.OwnerOf(p)
	if mp == nil {
		p.Inputs = lifecycle.Waiting(infrav1.WaitingForOwnerReason, "the owning MachinePool is not known")
		return nil
	}
	auto := inputs.ParseAutoscaling(mp.Annotations)
	p.ObserveAutoscaling(autoscalingFinding(auto, mp.Annotations))
	r, ok, err := p.ReadMember(ctx, mp.Spec.Template.Spec.Bootstrap.DataSecretName)
	if !ok {
		return err
	}
	clusterFDs, wait := clusterFailureDomains(ctx, a.Client, p.TerraformCluster)
	if wait != nil {
		p.Inputs = *wait
		return nil
	}
	in := &inputs.MachinePoolInputs{
		Common:                p.Common(),
		ClusterOutputs:        r.Exports,
		MachinePoolName:       mp.Name,
		Replicas:              inputs.PoolReplicas(auto.Autoscaling, mp.Spec.Replicas, tmp.Status.Replicas),
		BootstrapData:         r.BootstrapData,
		BootstrapFormat:       r.BootstrapFormat,
		NodeLabels:            mp.Spec.Template.ObjectMeta.Labels,
		FailureDomains:        mp.Spec.FailureDomains,
		ClusterFailureDomains: clusterFDs,
		KubernetesVersion:     mp.Spec.Template.Spec.Version,
		Autoscaling:           auto.Autoscaling,
	}
	return p.RenderInputs(ctx, contract.RoleMachinePool, tmp.Spec.Source.Image, in)
}

// ObserveOutputs decodes the pool's outputs: provider IDs, replicas,
// instances, health; ready latches with provisioned.
func (a *Adapter) ObserveOutputs(_ context.Context, p *lifecycle.Pass) error {
	tmp := p.Obj.(*infrav1.TerraformMachinePool)
	out, v := contract.DecodeMachinePoolOutputs(p.RawOutputs(), contract.MachinePoolFacts{Undeclared: p.UndeclaredOutputs()})
	p.SetOutputsValid(v)

	if out.ProviderID != nil && tmp.Spec.ProviderID != *out.ProviderID {
		tmp.Spec.ProviderID = *out.ProviderID
		p.Event(corev1.EventTypeNormal, infrav1.ProviderIDSetEvent, "spec.providerID set to "+*out.ProviderID)
	}
	if out.ProviderIDList != nil && !slices.Equal(tmp.Spec.ProviderIDList, out.ProviderIDList) {
		tmp.Spec.ProviderIDList = out.ProviderIDList
		if len(tmp.Spec.ProviderIDList) == 0 {
			tmp.Spec.ProviderIDList = nil
		}
	}
	if out.Replicas != nil {
		r := *out.Replicas
		tmp.Status.Replicas = &r
	}
	if out.Instances != nil {
		inst := make([]infrav1.Instance, 0, len(out.Instances))
		for _, i := range out.Instances {
			inst = append(inst, infrav1.Instance{ProviderID: i.ProviderID, InstanceID: i.InstanceID, Addresses: instanceAddresses(i.Addresses),
				FailureDomain: i.FailureDomain, State: infrav1.InstanceState(i.State)})
		}
		if len(inst) == 0 {
			inst = nil
		}
		tmp.Status.Instances = inst
	}

	p.ObserveHealth(lifecycle.Reading{
		Health:       out.Health,
		OutputsValid: v.Valid(),
		Provision:    decide.ProvisionFacts{AppliedHash: p.State.InputsHash != "", OutputsValid: v.Valid()},
	})
	if p.Provisioned() {
		tmp.Status.Ready = true
	}
	return nil
}

// After writes the observed replicas back to the MachinePool while the
// module owns them (autoscaling), claiming replicas-managed-by, and gives
// the claim back when autoscaling is off again.
func (a *Adapter) After(ctx context.Context, p *lifecycle.Pass) error {
	tmp := p.Obj.(*infrav1.TerraformMachinePool)
	mp := a.OwnerOf(p)
	if mp == nil || !tmp.DeletionTimestamp.IsZero() {
		return nil
	}
	auto := inputs.ParseAutoscaling(mp.Annotations)
	base := mp.DeepCopy()
	wb := planWriteBack(mp.Annotations, auto.Enabled, tmp.Status.Replicas, mp.Spec.Replicas)
	if !wb.changed() {
		return nil
	}
	switch {
	case wb.claim:
		if mp.Annotations == nil {
			mp.Annotations = map[string]string{}
		}
		mp.Annotations[infrav1.ReplicasManagedByAnnotation] = infrav1.ReplicasManagedByCAPTF
	case wb.release:
		delete(mp.Annotations, infrav1.ReplicasManagedByAnnotation)
	}
	if wb.replicas != nil {
		old := "unset"
		if mp.Spec.Replicas != nil {
			old = strconv.Itoa(int(*mp.Spec.Replicas))
		}
		r := *wb.replicas
		mp.Spec.Replicas = &r
		p.Event(corev1.EventTypeNormal, infrav1.ReplicasWrittenBackEvent,
			fmt.Sprintf("MachinePool %s spec.replicas %s → %d", mp.Name, old, r))
	}
	if err := a.Client.Patch(ctx, mp, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("failed to write back the replicas of MachinePool %s: %w", mp.Name, err)
	}
	return nil
}

// Fields implements lifecycle.Adapter: a pool has none of the kind fields.
func (a *Adapter) Fields(lifecycle.Object) lifecycle.KindFields { return lifecycle.KindFields{} }

// Observe implements lifecycle.Adapter: the membership refresh interval and
// whether membership is still converging.
func (a *Adapter) Observe(p *lifecycle.Pass, obs *decide.Observation) {
	tmp := p.Obj.(*infrav1.TerraformMachinePool)
	if tmp.Spec.MembershipRefreshIntervalSeconds != nil {
		obs.MembershipRefreshIntervalSeconds = *tmp.Spec.MembershipRefreshIntervalSeconds
	}
	obs.MembershipConverging = tmp.Status.Replicas != nil && int32(len(tmp.Spec.ProviderIDList)) != *tmp.Status.Replicas
}
