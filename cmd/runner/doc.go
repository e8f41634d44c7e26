// Command runner is CAPTF's in-Job binary: the Job's init container copies
// it into the pod (`runner copy /captf/bin/runner`) and the module container
// runs one operation with it (`/captf/bin/runner run --op ...`) against the
// image's /captf/runtime. It is a thin main over internal/runner, built
// static: CGO_ENABLED=0 go build ./cmd/runner.
//
// Its tests build this binary and run it against the pinned OpenTofu and a
// real kube-apiserver (envtest) with the kubernetes backend writing real
// state Secrets. Outside a cluster, the runner reaches the API server
// through --backend-config=config_path=<kubeconfig>, which its events use
// too (or the hidden --events-kubeconfig flag).
package main
