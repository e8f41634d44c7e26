// Package v1alpha1 holds CAPTF's API: the eight kinds of the
// infrastructure.cluster.x-k8s.io/v1alpha1 group, their condition types and
// reasons, and the annotations, labels and finalizers CAPTF reads and writes.
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1alpha1
