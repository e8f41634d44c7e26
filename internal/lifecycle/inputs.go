package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// Helpers the adapters share to build inputs.

// Waiting returns an inputs outcome that waits on a dependency.
func Waiting(reason, message string) InputsOutcome {
	return InputsOutcome{Status: decide.InputsWaiting, Reason: reason, Message: message}
}

// Common returns the inputs every role shares.
func (p *Pass) Common() inputs.Common {
	return inputs.Common{
		Cluster:  inputs.ObjectRef{Name: p.ClusterName, Namespace: p.Obj.GetNamespace()},
		Object:   inputs.ObjectRef{Name: p.Obj.GetName(), Namespace: p.Obj.GetNamespace()},
		Template: p.Obj.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation],
	}
}

// variables reads the object's variablesFrom sources live (only labeled
// ones count) and merges them with its inline variables.
func (f *Flow) variables(ctx context.Context, p *Pass, role contract.Role) (inputs.Variables, *InputsOutcome, error) {
	ws := p.Obj.GetWorkspace()
	var sources []inputs.Source
	for _, vs := range ws.VariablesFrom {
		optional := vs.Optional != nil && *vs.Optional
		format := inputs.FormatString
		if vs.Format == infrav1.VariablesFormatJSON {
			format = inputs.FormatJSON
		}
		switch {
		case vs.ConfigMapRef != nil:
			cm := &corev1.ConfigMap{}
			err := f.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: vs.ConfigMapRef.Name}, cm)
			switch {
			case apierrors.IsNotFound(err) || (err == nil && cm.Labels[infrav1.VariablesLabel] != "true"):
				sources = append(sources, inputs.MissingSource(inputs.SourceConfigMap, vs.ConfigMapRef.Name, optional))
			case err != nil:
				return inputs.Variables{}, nil, fmt.Errorf("failed to read ConfigMap %s: %w", vs.ConfigMapRef.Name, err)
			default:
				sources = append(sources, inputs.ConfigMapSource(vs.ConfigMapRef.Name, format, optional, cm.Data, cm.BinaryData))
			}
		case vs.SecretRef != nil:
			s := &corev1.Secret{}
			err := f.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: vs.SecretRef.Name}, s)
			switch {
			case apierrors.IsNotFound(err) || (err == nil && s.Labels[infrav1.VariablesLabel] != "true"):
				sources = append(sources, inputs.MissingSource(inputs.SourceSecret, vs.SecretRef.Name, optional))
			case err != nil:
				return inputs.Variables{}, nil, fmt.Errorf("failed to read Secret %s: %w", vs.SecretRef.Name, err)
			default:
				sources = append(sources, inputs.SecretSource(vs.SecretRef.Name, format, optional, s.Data))
			}
		}
	}
	var inline []byte
	if len(ws.Variables) > 0 {
		b, err := json.Marshal(ws.Variables)
		if err != nil {
			return inputs.Variables{}, nil, fmt.Errorf("failed to encode spec.variables: %w", err)
		}
		inline = b
	}
	vars, err := inputs.ResolveVariables(role, sources, inline)
	if err != nil {
		var ve *inputs.VariablesError
		if errors.As(err, &ve) {
			out := Waiting(ve.Reason, ve.Error())
			return inputs.Variables{}, &out, nil
		}
		return inputs.Variables{}, nil, err
	}
	return vars, nil, nil
}

// Render renders a role's inputs and checks their size.
func Render(image string, in inputs.RoleInputs, vars inputs.Variables) (InputsOutcome, error) {
	r, err := inputs.Render(inputs.Request{Image: image, Inputs: in, Variables: vars})
	if err != nil {
		var ue *inputs.UnhashableError
		if errors.As(err, &ue) {
			if ue.ClusterOutputs() {
				return Waiting(infrav1.WaitingForClusterExportsReason, "the cluster module's exports output cannot be hashed: "+ue.Error()), nil
			}
			return Waiting(infrav1.VariablesInvalidReason, ue.Error()), nil
		}
		return InputsOutcome{}, fmt.Errorf("failed to render the inputs: %w", err)
	}
	if err := r.CheckSize(); err != nil {
		return InputsOutcome{Status: decide.InputsTooLarge, Rendered: r, Reason: infrav1.InputsTooLargeReason, Message: err.Error(), Image: image}, nil
	}
	return InputsOutcome{Status: decide.InputsBuilt, Rendered: r, Image: image}, nil
}

// clusterExports reads the TerraformCluster's exports output from its
// state: {} for an externally managed cluster; a wait when it cannot be
// read.
func (f *Flow) clusterExports(ctx context.Context, p *Pass) (json.RawMessage, *InputsOutcome) {
	tc := p.TerraformCluster
	if tc == nil {
		w := Waiting(infrav1.WaitingForClusterInfrastructureReason, "the TerraformCluster is not known yet")
		return nil, &w
	}
	if annotations.IsExternallyManaged(tc) {
		return inputs.ExternallyManagedClusterOutputs(), nil
	}
	suffix, err := state.Suffix(tc.Namespace, tc.GetWorkloadKind(), tc.Name)
	if err != nil {
		w := Waiting(infrav1.WaitingForClusterExportsReason, err.Error())
		return nil, &w
	}
	exports, ok, err := f.exports.readClusterExports(ctx, f.Client, f.APIReader, tc.Namespace, suffix)
	if err != nil {
		w := Waiting(infrav1.WaitingForClusterExportsReason, "the cluster state cannot be read: "+err.Error())
		return nil, &w
	}
	if !ok {
		w := Waiting(infrav1.WaitingForClusterExportsReason, "the cluster module's exports output is not set yet")
		return nil, &w
	}
	if err := inputs.CheckClusterOutputs(exports); err != nil {
		w := Waiting(infrav1.WaitingForClusterExportsReason, "the cluster module's exports output is invalid: "+err.Error())
		return nil, &w
	}
	return exports, nil
}

// bootstrap reads the bootstrap data Secret live (CAPTF never caches it).
func (f *Flow) bootstrap(ctx context.Context, p *Pass, dataSecretName *string) ([]byte, string, *InputsOutcome, error) {
	if dataSecretName == nil || *dataSecretName == "" {
		w := Waiting(infrav1.WaitingForBootstrapDataReason, "the bootstrap data Secret is not set yet")
		return nil, "", &w, nil
	}
	s := &corev1.Secret{}
	err := f.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: *dataSecretName}, s)
	switch {
	case apierrors.IsNotFound(err):
		w := Waiting(infrav1.WaitingForBootstrapDataReason, "the bootstrap data Secret "+*dataSecretName+" does not exist yet")
		return nil, "", &w, nil
	case err != nil:
		return nil, "", nil, fmt.Errorf("failed to read the bootstrap data Secret %s: %w", *dataSecretName, err)
	}
	return s.Data["value"], inputs.BootstrapFormat(s.Data["format"]), nil, nil
}

// ClusterInfrastructureProvisioned reports whether the Cluster's
// infrastructure is provisioned (machines and pools wait for it).
func ClusterInfrastructureProvisioned(c *clusterv1.Cluster) bool {
	return c != nil && c.Status.Initialization.InfrastructureProvisioned != nil && *c.Status.Initialization.InfrastructureProvisioned
}

// buildInputs renders the current inputs (the kind's part).
func (f *Flow) buildInputs(ctx context.Context, p *Pass) error {
	if p.Active != nil {
		return nil
	}
	if err := f.Adapter.BuildInputs(ctx, p); err != nil {
		return err
	}
	p.facts.dependenciesChecked = true
	switch p.Inputs.Status {
	case decide.InputsWaiting:
		status := metav1ConditionUnknown
		if p.Inputs.Reason == infrav1.VariablesInvalidReason || p.Inputs.Reason == infrav1.VariablesSourceNotFoundReason {
			status = metav1ConditionFalse
		}
		if p.OwnerWait == nil {
			p.OwnerWait = &Wait{Reason: p.Inputs.Reason, Message: p.Inputs.Message, False: status == metav1ConditionFalse}
		}
	}
	return nil
}

// durableInputsHash recomputes the durable inputs Secret's hash.
func (p *Pass) durableInputsHash(role contract.Role) string {
	if p.Durable == nil {
		return ""
	}
	h, err := inputs.HashFiles(role, p.Durable.Annotations[infrav1.ImageAnnotation],
		p.Durable.Data[contract.MainFile], p.Durable.Data[contract.TFVarsFile])
	if err != nil {
		return ""
	}
	return h
}
