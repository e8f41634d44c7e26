// Package terraformcluster reconciles TerraformClusters: the cluster role
// of a module, run through the shared flow of internal/lifecycle. The
// adapter adds what only a cluster does: the Cluster owner and its
// back-reference, the control_plane_endpoint input and its one-time
// write-back, failure domains, and the deletion wait for the cluster's
// machines and pools.
package terraformcluster
