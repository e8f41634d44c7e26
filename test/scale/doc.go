// Package scale is CAPTF's scale harness: one real kube-apiserver and etcd
// (test/env's control plane, without the kubelet, registry or Cluster API
// controllers), the real manager built from cmd/manager and run as its own
// process (so its resident memory and CPU are its own), and a simulated
// executor in place of the kubelet and the Job controller.
//
// The executor watches CAPTF's Jobs and, after a configurable delay,
// finishes each as a real runner looks from outside: the state Secrets
// written in the kubernetes backend's format through internal/state's own
// encoder, a pod whose source container terminated with the runner's result
// document as its termination message, and the Job's terminal conditions.
// The harness stands in for Cluster API where CAPTF reads it: it marks the
// Cluster's infrastructure provisioned once the TerraformCluster is, and
// gives every Machine its bootstrap data Secret.
//
// Run creates N TerraformMachines (with their Machines and bootstrap
// Secrets) in one Cluster with one identity, drives them to Ready with drift
// checks on at the manager's default interval, then measures a steady
// window. It reports time to all Ready, Jobs per second, the manager's RSS,
// Go heap and CPU, the API server's requests by verb and resource, the
// reconcile latency and workqueue depth from the manager's metrics, and the
// reaction time: from each machine's Job finished to the machine's next
// step seen (reaction.go). Machines are created in batches, or one at a
// time at a pace (Config.Pace) to measure a manager that is not saturated.
//
// With Config.Shards = K > 1 the harness runs K managers against the one
// API server, manager i with --watch-filter=scale-shard-<i>, and splits the
// fleet into K Clusters, each object labeled for its shard (shards.go).
// Each manager's memory and CPU are its own; the run fails when a manager
// reconciled none of its machines, or reconciled or recorded events about
// another shard's machines (read from its log).
//
// `go test ./test/scale` runs a small sample as a test of the harness
// itself (all Ready, no duplicate Job) and the unit tests of its pure
// parts; `make scale N=...` runs the full measurement (cmd/scale) and
// writes docs/book/operator-guide/scale.md's table and plots; `make
// bench-reaction` runs BenchmarkReaction (60 paced machines).
package scale
