// Package verify holds repository-wide checks: generated files are current
// and the shipped manifests carry what Cluster API and clusterctl expect.
package verify
