// Package flavors tests what templates/ ships: each cluster template,
// ClusterClass and identity template rendered by clusterctl from a local
// repository with the variables a user sets, then applied to a real API
// server with CAPTF's and Cluster API's CRDs, and the cluster-autoscaler
// RBAC the machine pool page asks for.
package flavors
