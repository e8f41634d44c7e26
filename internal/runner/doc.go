// Package runner is what runs inside a CAPTF Job: the `runner` binary's
// command line (copy, run, version), the image-layout preflight, the
// generated root at <workdir>/root, the environment rewrite and CLI
// configuration, the command sequence of each operation (apply, destroy,
// refresh, drift, plan, restore) against the image's /captf/runtime, the
// destructive-plan guard and the approved-plan check with the plan hash,
// SIGTERM forwarding to the runtime, the curated failure summary, the result
// document (package result) and the best-effort step events on the owning
// object.
//
// The runtime is always exec'd directly, never through a shell and never
// with -chdir: every command runs with <workdir>/root as its working
// directory. Output of `show -json` (which carries every input value) never
// reaches the log; everything else the runtime prints streams to the pod
// log as it runs.
//
// Events use in-cluster configuration in a Job. Outside a cluster (tests,
// a manual reproduction) they use the kubeconfig named by the
// `config_path=` backend configuration, the same one the state backend uses,
// or the hidden --events-kubeconfig flag.
package runner
