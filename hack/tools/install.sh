#!/usr/bin/env bash
# Builds the pinned third-party binaries CAPTF's tests and local environment
# run, from their Go modules, into a cache kept outside the repository:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/captf/tools/<name>-<version>/
#
# A tool already in the cache is reused, so only the first run on a machine
# pays for the build. The book's site generator and the browser its test
# drives (hugo, chromium) are Debian packages instead, installed with
# apt-get when missing. Usage:
#
#   hack/tools/install.sh <tool>...   tools: generators staticcheck promtool vale kubernetes kubectl etcd opentofu terraform openstack clusterapi certmanager certmanager-manifest hugo chromium all
#
# Prints, one per line, the directory holding each tool's binaries.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/captf/tools

# version <dir> <module>: the version of <module> pinned in <dir>/go.mod.
version() {
	(cd "$here/$1" && go list -m -f '{{.Version}}' "$2")
}

# build <dir> <name> <version> <ldflags> <pkg=binary>...: builds each package
# of the pinned module <dir> into the cache entry <name>-<version>. When the
# caller has set after_build (a function name, usually with local), it runs
# with the entry's directory as its argument once the binaries are built and
# before the entry is marked complete. A caller that sets cgo=1 (with local)
# builds with cgo; every other tool is static.
build() {
	local dir=$1 name=$2 ver=$3 ldflags=$4
	shift 4
	local dest=$cache/$name-$ver
	if [[ -f $dest/.complete ]]; then
		echo "$dest"
		return
	fi
	mkdir -p "$cache"
	exec 9>"$cache/.$name-$ver.lock"
	flock 9
	if [[ ! -f $dest/.complete ]]; then
		local tmp
		tmp=$(mktemp -d "$cache/.$name-$ver.XXXXXX")
		chmod 755 "$tmp"
		local start=$SECONDS
		echo "captf: building $name $ver (first run on this machine; cached afterwards)" >&2
		local spec pkg bin
		for spec in "$@"; do
			pkg=${spec%=*}
			bin=${spec#*=}
			(cd "$here/$dir" && CGO_ENABLED=${cgo:-0} go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp/$bin" "$pkg")
		done
		if [[ -n ${after_build:-} ]]; then
			"$after_build" "$tmp"
		fi
		touch "$tmp/.complete"
		rm -rf "$dest"
		mv "$tmp" "$dest"
		echo "captf: built $name $ver in $((SECONDS - start))s" >&2
	fi
	exec 9>&-
	echo "$dest"
}

# kubernetes_ldflags <version>: the version stamps a Kubernetes binary reports.
kubernetes_ldflags() {
	local v=$1 minor=${1#v1.}
	minor=${minor%%.*}
	local p ld=""
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
	done
	echo "$ld"
}

kubernetes() {
	local v
	v=$(version kubernetes k8s.io/kubernetes)
	build kubernetes kubernetes "$v" "$(kubernetes_ldflags "$v")" \
		k8s.io/kubernetes/cmd/kube-apiserver=kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager=kube-controller-manager
}

# kubectl is built from the same pinned module as the control plane, into a
# cache entry of its own so the control plane's entry stays valid.
kubectl() {
	local v
	v=$(version kubernetes k8s.io/kubernetes)
	build kubernetes kubectl "$v" "$(kubernetes_ldflags "$v")" \
		k8s.io/kubernetes/cmd/kubectl=kubectl
}

etcd() {
	local v
	v=$(version etcd go.etcd.io/etcd/server/v3)
	build etcd etcd "$v" "" go.etcd.io/etcd/server/v3=etcd
}

opentofu() {
	local v
	v=$(version opentofu github.com/opentofu/opentofu)
	build opentofu opentofu "$v" "-X github.com/opentofu/opentofu/version.dev=no" \
		github.com/opentofu/opentofu/cmd/tofu=tofu
}

# terraform: HashiCorp Terraform, the second runtime a module image may ship.
# Its main package is the module root; an empty Prerelease marks a release build.
terraform() {
	local v
	v=$(version terraform github.com/hashicorp/terraform)
	build terraform terraform "$v" "-X github.com/hashicorp/terraform/version.Prerelease=" \
		github.com/hashicorp/terraform=terraform
}

# openstack: the OpenStack provider (MPL), which the tests place in a module
# image's provider mirror: a real third-party plugin, installed by init from
# /captf/providers with no network.
openstack() {
	local v
	v=$(version openstack github.com/terraform-provider-openstack/terraform-provider-openstack/v3)
	build openstack openstack-provider "$v" "" \
		github.com/terraform-provider-openstack/terraform-provider-openstack/v3=terraform-provider-openstack
}

clusterapi() {
	local v
	v=$(version clusterapi sigs.k8s.io/cluster-api)
	build clusterapi clusterapi "$v" "-X sigs.k8s.io/cluster-api/version.gitVersion=$v" \
		sigs.k8s.io/cluster-api/core=capi-manager \
		sigs.k8s.io/cluster-api/bootstrap/kubeadm=kubeadm-bootstrap-manager \
		sigs.k8s.io/cluster-api/controlplane/kubeadm=kubeadm-control-plane-manager \
		sigs.k8s.io/cluster-api/cmd/clusterctl=clusterctl
}

# certmanager: cert-manager's controller, webhook and cainjector, which
# clusterctl installs on the local environment's management cluster. Their
# main packages are CAPTF's own (hack/tools/certmanager: cert-manager's
# command modules are not served by the module proxy); everything they run
# is cert-manager's code at the pinned version, stamped as cert-manager's
# release build stamps it.
certmanager() {
	local v
	v=$(version certmanager github.com/cert-manager/cert-manager)
	build certmanager certmanager "$v" "-X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$v" \
		./controller=cert-manager-controller \
		./webhook=cert-manager-webhook \
		./cainjector=cert-manager-cainjector
}

# certmanager_manifest: cert-manager.yaml, the static install manifest of the
# pinned cert-manager, rendered from the chart in its module as cert-manager's
# release renders it (hack/tools/certmanager-manifest, Helm's Go library).
# The images are the release's; test/env/certmanager points them at the
# images it builds from the binaries of the certmanager entry.
certmanager_manifest() {
	local v
	v=$(version certmanager github.com/cert-manager/cert-manager)
	local after_build=render_certmanager_manifest
	build certmanager-manifest certmanager-manifest "$v" "" .=certmanager-manifest
}

render_certmanager_manifest() {
	local dir=$1 v module
	v=$(version certmanager github.com/cert-manager/cert-manager)
	module=$(cd "$here/certmanager" && go mod download github.com/cert-manager/cert-manager && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
	"$dir/certmanager-manifest" -module-dir "$module" -version "$v" >"$dir/cert-manager.yaml"
}

generators() {
	local v
	v=$(version generators sigs.k8s.io/controller-tools)-kustomize-$(version generators sigs.k8s.io/kustomize/kustomize/v5)
	build generators generators "$v" "" \
		sigs.k8s.io/controller-tools/cmd/controller-gen=controller-gen \
		sigs.k8s.io/kustomize/kustomize/v5=kustomize
}

staticcheck() {
	local v
	v=$(version staticcheck honnef.co/go/tools)
	build staticcheck staticcheck "$v" "" honnef.co/go/tools/cmd/staticcheck=staticcheck
}

# promtool: Prometheus's rule checker and rule unit-test runner, and
# promql-metrics (CAPTF's, hack/tools/prometheus/promql-metrics), which parses
# PromQL with the same parser and names the metrics an expression reads.
# Prometheus's Go module v0.3MM.P is its release 3.MM.P, the version promtool
# reports.
promtool() {
	local v release
	v=$(version prometheus github.com/prometheus/prometheus)
	release=${v#v0.}
	release=${release:0:1}.$((10#${release:1:2})).${release#*.}
	build prometheus promtool "$v" "-X github.com/prometheus/common/version.Version=$release" \
		github.com/prometheus/prometheus/cmd/promtool=promtool \
		./promql-metrics=promql-metrics
}

# vale: the prose linter make lint-docs-prose runs over the book. Its Markdown
# parser is Go, but it links tree-sitter's C grammars, so it is built with
# cgo (gcc).
vale() {
	local v cgo=1
	v=$(version vale github.com/vale-cli/vale/v3)
	build vale vale "$v" "-X main.version=${v#v}" github.com/vale-cli/vale/v3/cmd/vale=vale
}

# apt_tool <binary> <package>: a tool taken from Debian's packages (the
# machines CAPTF is developed and tested on run Debian bookworm): installed
# with apt-get unless <binary> is already on PATH. Prints its directory.
apt_tool() {
	local bin=$1 pkg=$2 found
	if ! found=$(type -P "$bin"); then
		mkdir -p "$cache"
		exec 8>"$cache/.apt.lock"
		flock 8
		if ! found=$(type -P "$bin"); then
			local sudo=
			[[ $(id -u) -eq 0 ]] || sudo=sudo
			echo "captf: installing Debian's $pkg with apt-get (first run on this machine)" >&2
			$sudo apt-get update -qq >&2
			DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg" >&2
			found=$(type -P "$bin")
		fi
		exec 8>&-
	fi
	dirname "$found"
}

# hugo: the static site generator that builds the book (make docs), Debian
# bookworm's hugo 0.111.3. chromium: the browser test/site drives headless.
hugo() { apt_tool hugo hugo; }
chromium() { apt_tool chromium chromium; }

[[ $# -gt 0 ]] || { sed -n '2,14p' "$0" >&2; exit 2; }
for tool in "$@"; do
	case $tool in
	kubernetes | kubectl | etcd | opentofu | terraform | openstack | clusterapi | certmanager | generators | staticcheck | promtool | vale | hugo | chromium) "$tool" ;;
	certmanager-manifest) certmanager_manifest ;;
	all) generators; staticcheck; promtool; vale; etcd; kubernetes; kubectl; opentofu; terraform; openstack; clusterapi; certmanager; certmanager_manifest; hugo; chromium ;;
	*) echo "hack/tools/install.sh: unknown tool $tool" >&2; exit 2 ;;
	esac
done
