// Package capi runs Cluster API v1.14's controllers in-process against the
// local environment's API server, with the CRDs from the pinned CAPI Go
// module: the core controllers (Cluster, Machine, MachineSet,
// MachineDeployment, MachinePool, MachineHealthCheck), the kubeadm bootstrap
// provider (KubeadmConfig) and the kubeadm control-plane provider
// (KubeadmControlPlane). Each provider gets its own controller-runtime
// manager with the cache and client options of its upstream binary, as if
// they were three processes.
//
// CAPI's admission webhooks do not run, so nothing is defaulted or validated
// beyond the CRD schemas. Callers set what the webhooks would: on Machines,
// MachineSets and MachineDeployments spec.clusterName and the
// cluster.x-k8s.io/cluster-name label on the object, selector and template;
// on a MachineDeployment its selector, template labels and replicas; on a
// KubeadmControlPlane spec.replicas and spec.version; on a Cluster its
// references (apiGroup, kind, name) to infrastructure and control plane.
package capi
