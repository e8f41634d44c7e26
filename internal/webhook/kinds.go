package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/cluster-api/util/topology"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// One rule per kind in captf-validating-webhook-configuration (config/webhook,
// generated from these markers by make generate). Status is not covered.
// DELETE is validated for TerraformClusterIdentity and TerraformMachine only.
//
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformcluster,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=terraformclusters,versions=v1alpha1,name=validation.terraformcluster.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformclustertemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=terraformclustertemplates,versions=v1alpha1,name=validation.terraformclustertemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update;delete,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformmachine,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=terraformmachines,versions=v1alpha1,name=validation.terraformmachine.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformmachinetemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=terraformmachinetemplates,versions=v1alpha1,name=validation.terraformmachinetemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformmachinepool,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=terraformmachinepools,versions=v1alpha1,name=validation.terraformmachinepool.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformmachinepooltemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=terraformmachinepooltemplates,versions=v1alpha1,name=validation.terraformmachinepooltemplate.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update;delete,path=/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformclusteridentity,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=infrastructure.cluster.x-k8s.io,resources=terraformclusteridentities,versions=v1alpha1,name=validation.terraformclusteridentity.infrastructure.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// Setup registers the seven validating webhooks on mgr's webhook server.
// live reads objects straight from the API server (the delete guards must
// see every namespace, whatever the manager's cache holds); SubjectAccessReviews
// are created with mgr's client.
func Setup(mgr ctrl.Manager, live client.Reader) error {
	c := mgr.GetClient()
	regs := []func() error{
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &infrav1.TerraformCluster{}).WithValidator(Cluster{}).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &infrav1.TerraformClusterTemplate{}).WithValidator(ClusterTemplate{}).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &infrav1.TerraformMachine{}).WithValidator(&Machine{Reader: live}).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &infrav1.TerraformMachineTemplate{}).WithValidator(MachineTemplate{}).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &infrav1.TerraformMachinePool{}).WithValidator(MachinePool{}).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &infrav1.TerraformMachinePoolTemplate{}).WithValidator(MachinePoolTemplate{}).Complete()
		},
		func() error {
			return ctrl.NewWebhookManagedBy(mgr, &infrav1.TerraformClusterIdentity{}).WithValidator(&Identity{Client: c, Reader: live}).Complete()
		},
	}
	for _, r := range regs {
		if err := r(); err != nil {
			return fmt.Errorf("failed to register a webhook: %w", err)
		}
	}
	return nil
}

func groupKind(kind string) schema.GroupKind {
	return schema.GroupKind{Group: infrav1.GroupVersion.Group, Kind: kind}
}

// invalid turns a non-empty error list into the API's Invalid status.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(groupKind(kind), name, errs)
}

// Cluster validates TerraformClusters.
type Cluster struct{}

// ValidateCreate implements admission.Validator.
func (Cluster) ValidateCreate(_ context.Context, obj *infrav1.TerraformCluster) (admission.Warnings, error) {
	return nil, invalid("TerraformCluster", obj.Name, ValidateClusterSpec(field.NewPath("spec"), &obj.Spec, false))
}

// ValidateUpdate implements admission.Validator.
func (Cluster) ValidateUpdate(_ context.Context, old, obj *infrav1.TerraformCluster) (admission.Warnings, error) {
	errs := ratchet(ValidateClusterSpec(field.NewPath("spec"), &old.Spec, false), ValidateClusterSpec(field.NewPath("spec"), &obj.Spec, false))
	errs = append(errs, ValidateClusterUpdate(old, obj)...)
	return nil, invalid("TerraformCluster", obj.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (Cluster) ValidateDelete(context.Context, *infrav1.TerraformCluster) (admission.Warnings, error) {
	return nil, nil
}

// MachinePool validates TerraformMachinePools; every field is mutable.
type MachinePool struct{}

// ValidateCreate implements admission.Validator.
func (MachinePool) ValidateCreate(_ context.Context, obj *infrav1.TerraformMachinePool) (admission.Warnings, error) {
	return nil, invalid("TerraformMachinePool", obj.Name, ValidateMachinePoolSpec(field.NewPath("spec"), &obj.Spec))
}

// ValidateUpdate implements admission.Validator.
func (MachinePool) ValidateUpdate(_ context.Context, old, obj *infrav1.TerraformMachinePool) (admission.Warnings, error) {
	return nil, invalid("TerraformMachinePool", obj.Name, ratchet(ValidateMachinePoolSpec(field.NewPath("spec"), &old.Spec), ValidateMachinePoolSpec(field.NewPath("spec"), &obj.Spec)))
}

// ValidateDelete implements admission.Validator.
func (MachinePool) ValidateDelete(context.Context, *infrav1.TerraformMachinePool) (admission.Warnings, error) {
	return nil, nil
}

// templatePath is spec.template.spec of the three template kinds.
var templatePath = field.NewPath("spec", "template", "spec")

// templateImmutable refuses a change to spec.template.spec unless the
// request is a ClusterClass topology dry-run (Cluster API's
// topology.IsDryRunRequest: a dry-run carrying the topology dry-run
// annotation).
func templateImmutable(ctx context.Context, obj client.Object, changed bool) field.ErrorList {
	if !changed {
		return nil
	}
	if req, err := admission.RequestFromContext(ctx); err == nil && topology.IsDryRunRequest(req, obj) {
		return nil
	}
	return field.ErrorList{field.Forbidden(templatePath, "immutable once the template exists: create a new template and point its users at it (spec.template.metadata stays mutable)")}
}

// ClusterTemplate validates TerraformClusterTemplates.
type ClusterTemplate struct{}

// ValidateCreate implements admission.Validator.
func (ClusterTemplate) ValidateCreate(_ context.Context, obj *infrav1.TerraformClusterTemplate) (admission.Warnings, error) {
	return nil, invalid("TerraformClusterTemplate", obj.Name, ValidateClusterSpec(templatePath, &obj.Spec.Template.Spec, true))
}

// ValidateUpdate implements admission.Validator.
func (ClusterTemplate) ValidateUpdate(ctx context.Context, old, obj *infrav1.TerraformClusterTemplate) (admission.Warnings, error) {
	errs := ratchet(ValidateClusterSpec(templatePath, &old.Spec.Template.Spec, true), ValidateClusterSpec(templatePath, &obj.Spec.Template.Spec, true))
	errs = append(errs, templateImmutable(ctx, obj, templateSpecChanged(old.Spec.Template.Spec, obj.Spec.Template.Spec))...)
	return nil, invalid("TerraformClusterTemplate", obj.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (ClusterTemplate) ValidateDelete(context.Context, *infrav1.TerraformClusterTemplate) (admission.Warnings, error) {
	return nil, nil
}

// MachineTemplate validates TerraformMachineTemplates.
type MachineTemplate struct{}

// ValidateCreate implements admission.Validator.
func (MachineTemplate) ValidateCreate(_ context.Context, obj *infrav1.TerraformMachineTemplate) (admission.Warnings, error) {
	return nil, invalid("TerraformMachineTemplate", obj.Name, ValidateMachineSpec(templatePath, &obj.Spec.Template.Spec))
}

// ValidateUpdate implements admission.Validator.
func (MachineTemplate) ValidateUpdate(ctx context.Context, old, obj *infrav1.TerraformMachineTemplate) (admission.Warnings, error) {
	errs := ratchet(ValidateMachineSpec(templatePath, &old.Spec.Template.Spec), ValidateMachineSpec(templatePath, &obj.Spec.Template.Spec))
	errs = append(errs, templateImmutable(ctx, obj, templateSpecChanged(old.Spec.Template.Spec, obj.Spec.Template.Spec))...)
	return nil, invalid("TerraformMachineTemplate", obj.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (MachineTemplate) ValidateDelete(context.Context, *infrav1.TerraformMachineTemplate) (admission.Warnings, error) {
	return nil, nil
}

// MachinePoolTemplate validates TerraformMachinePoolTemplates.
type MachinePoolTemplate struct{}

// ValidateCreate implements admission.Validator.
func (MachinePoolTemplate) ValidateCreate(_ context.Context, obj *infrav1.TerraformMachinePoolTemplate) (admission.Warnings, error) {
	return nil, invalid("TerraformMachinePoolTemplate", obj.Name, ValidateMachinePoolSpec(templatePath, &obj.Spec.Template.Spec))
}

// ValidateUpdate implements admission.Validator.
func (MachinePoolTemplate) ValidateUpdate(ctx context.Context, old, obj *infrav1.TerraformMachinePoolTemplate) (admission.Warnings, error) {
	errs := ratchet(ValidateMachinePoolSpec(templatePath, &old.Spec.Template.Spec), ValidateMachinePoolSpec(templatePath, &obj.Spec.Template.Spec))
	errs = append(errs, templateImmutable(ctx, obj, templateSpecChanged(old.Spec.Template.Spec, obj.Spec.Template.Spec))...)
	return nil, invalid("TerraformMachinePoolTemplate", obj.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (MachinePoolTemplate) ValidateDelete(context.Context, *infrav1.TerraformMachinePoolTemplate) (admission.Warnings, error) {
	return nil, nil
}
