#!/usr/bin/env bash
# Runs the book's Quick Start on the local environment (no cloud, no cluster,
# no Docker): builds what is missing, starts a real control plane, Cluster
# API, a loopback registry, the process kubelet and the CAPTF manager, then
# applies the identity and a one-machine cluster on the no-op images.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/tools/install.sh kubernetes etcd opentofu generators > /dev/null
exec go run ./hack/quickstart "$@"
