// Package capi runs Cluster API v1.14's controllers in-process (in the test
// binary, or in captf-env's process with env.Options.Separate) against the
// local environment's API server, with the CRDs and admission webhooks from
// the pinned CAPI Go module: the core controllers (Cluster, Machine,
// MachineSet, MachineDeployment, MachinePool, MachineHealthCheck), the
// kubeadm bootstrap provider (KubeadmConfig) and the kubeadm control-plane
// provider (KubeadmControlPlane). Each provider gets its own
// controller-runtime manager with the cache and client options of its
// upstream binary, as if they were three processes, and serves its
// admission webhooks on 127.0.0.1 with a generated CA; the webhook
// configurations are the provider's own manifests pointed at those servers.
// So objects are defaulted and validated as in a real management cluster.
//
// Differences from a management cluster, all deliberate:
//   - CRDs are served with conversion strategy None: use the v1beta2 API
//     (v1beta1 requests are not converted).
//   - The ClusterTopology feature is on, as clusterctl init sets it with
//     CLUSTER_TOPOLOGY=true: the ClusterClass controller and the topology
//     controllers run. RuntimeSDK stays off (upstream default): no runtime
//     extensions. ClusterResourceSets are not reconciled.
//   - MachineSets run all preflight checks, as upstream does by default. A
//     control plane here is never reachable, so worker Machines wait for it
//     unless the MachineDeployment (or MachineSet) carries
//     machineset.cluster.x-k8s.io/skip-preflight-checks: All.
//
// With Options.NoWebhooks nothing is defaulted or validated beyond the CRD
// schemas: callers then set what the webhooks would, notably on
// MachineDeployments spec.rollout.strategy (type RollingUpdate, maxSurge 1,
// maxUnavailable 0), the cluster.x-k8s.io/cluster-name label on the object,
// its selector and template, and spec.clusterName on Machines, MachineSets
// and MachineDeployments; on a KubeadmControlPlane spec.replicas.
package capi
