//lint:file-ignore SA1019 The in-process Cluster API serves every version its CRDs list, so its scheme registers the deprecated ones too; this file holds only that scheme.

package capi

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	addonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1alpha1 "sigs.k8s.io/cluster-api/api/ipam/v1alpha1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	runtimev1alpha1 "sigs.k8s.io/cluster-api/api/runtime/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

// Scheme returns a scheme with the Kubernetes types and every Cluster API
// type and version the three providers serve.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	_ = clusterv1beta1.AddToScheme(s)
	_ = clusterv1.AddToScheme(s)
	_ = bootstrapv1beta1.AddToScheme(s)
	_ = bootstrapv1.AddToScheme(s)
	_ = controlplanev1beta1.AddToScheme(s)
	_ = controlplanev1.AddToScheme(s)
	_ = addonsv1beta1.AddToScheme(s)
	_ = addonsv1.AddToScheme(s)
	_ = ipamv1alpha1.AddToScheme(s)
	_ = ipamv1beta1.AddToScheme(s)
	_ = ipamv1.AddToScheme(s)
	_ = runtimev1alpha1.AddToScheme(s)
	_ = runtimev1.AddToScheme(s)
	return s
}
