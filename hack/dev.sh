#!/usr/bin/env bash
# Starts the local environment with the CAPTF manager and the no-op module
# images, and keeps it running until Ctrl-C. It prints the kubeconfig path.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/tools/install.sh kubernetes etcd opentofu generators > /dev/null
exec go run ./hack/quickstart -dev "$@"
