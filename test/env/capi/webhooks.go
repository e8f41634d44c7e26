package capi

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	bootstrapadmission "sigs.k8s.io/cluster-api/bootstrap/kubeadm/webhooks/admission"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	controlplaneadmission "sigs.k8s.io/cluster-api/controlplane/kubeadm/webhooks/admission"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
)

// The admission webhooks each upstream manager registers.

func coreWebhooks(mgr ctrl.Manager, cc clustercache.ClusterCache) error {
	c := mgr.GetClient()
	for _, w := range []interface{ SetupWebhookWithManager(ctrl.Manager) error }{
		&coreadmission.ClusterClass{Client: c},
		&coreadmission.Cluster{Client: c, ClusterCacheReader: cc},
		&coreadmission.Machine{},
		&coreadmission.MachineSet{},
		&coreadmission.MachineDeployment{},
		&coreadmission.MachineDrainRule{},
		&coreadmission.MachinePool{},
		&coreadmission.ClusterResourceSet{},
		&coreadmission.ClusterResourceSetBinding{},
		&coreadmission.MachineHealthCheck{},
		&coreadmission.ExtensionConfig{},
		&coreadmission.IPAddress{Client: mgr.GetAPIReader()},
		&coreadmission.IPAddressClaim{},
	} {
		if err := w.SetupWebhookWithManager(mgr); err != nil {
			return fmt.Errorf("%T: %w", w, err)
		}
	}
	return nil
}

func bootstrapWebhooks(mgr ctrl.Manager, _ clustercache.ClusterCache) error {
	if err := (&bootstrapadmission.KubeadmConfig{}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("KubeadmConfig: %w", err)
	}
	if err := (&bootstrapadmission.KubeadmConfigTemplate{}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("KubeadmConfigTemplate: %w", err)
	}
	return nil
}

func controlPlaneWebhooks(mgr ctrl.Manager, _ clustercache.ClusterCache) error {
	if err := (&controlplaneadmission.KubeadmControlPlane{}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("KubeadmControlPlane: %w", err)
	}
	if err := (&controlplaneadmission.ScaleValidator{Client: mgr.GetClient()}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("KubeadmControlPlane scale: %w", err)
	}
	if err := (&controlplaneadmission.KubeadmControlPlaneTemplate{}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("KubeadmControlPlaneTemplate: %w", err)
	}
	return nil
}
