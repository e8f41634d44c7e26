#!/usr/bin/env bash
# Builds kubectl-captf for each platform into <dir>/kubectl-captf_<os>_<arch>.tar.gz
# (the binary only) and renders the krew manifest
# <dir>/kubectl-captf.yaml from kubectl-captf.yaml.tmpl with their checksums.
#
#   hack/krew/release.sh <version> <dir> [<os>/<arch>...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${1:?usage: release.sh <version> <dir> [<os>/<arch>...]}
dir=${2:?usage: release.sh <version> <dir> [<os>/<arch>...]}
shift 2
platforms=("$@")
[[ ${#platforms[@]} -gt 0 ]] || platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64)
repo=https://github.com/captf-io/cluster-api-provider-terraform
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
entries=""
for p in "${platforms[@]}"; do
	os=${p%/*} arch=${p#*/} ext=""
	[[ $os == windows ]] && ext=.exe
	work=$(mktemp -d)
	(cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X github.com/captf-io/cluster-api-provider-terraform/internal/cli.version=$version" \
		-o "$work/kubectl-captf$ext" ./cmd/kubectl-captf)
	archive=kubectl-captf_${os}_${arch}.tar.gz
	tar -C "$work" -czf "$dir/$archive" "kubectl-captf$ext"
	rm -rf "$work"
	sum=$(sha256sum "$dir/$archive" | cut -d' ' -f1)
	entries+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $repo/releases/download/$version/$archive
    sha256: $sum
    bin: kubectl-captf$ext
"
done
manifest=$(sed -e "s|@VERSION@|$version|" "$here/kubectl-captf.yaml.tmpl")
printf '%s\n' "${manifest/@PLATFORMS@/${entries%$'\n'}}" | sed -e '1,3d' > "$dir/kubectl-captf.yaml"
echo "$dir/kubectl-captf.yaml"
