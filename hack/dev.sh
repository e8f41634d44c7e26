#!/usr/bin/env bash
# Starts the local environment with the CAPTF manager and the no-op module
# images, and keeps it running until Ctrl-C. It prints the line that puts the
# pinned kubectl, clusterctl and kubectl-captf on PATH with KUBECONFIG set,
# and writes the same settings to _out/dev/env.sh for another shell to source.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/tools/install.sh kubernetes kubectl etcd opentofu clusterapi generators > /dev/null
exec go run ./hack/quickstart -dev "$@"
