#!/usr/bin/env bash
# Starts the local environment and keeps it running until Ctrl-C.
set -euo pipefail
echo "The local environment is not yet available." >&2
exit 1
