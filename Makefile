# CAPTF — Cluster API Provider Terraform.
#
# Third-party binaries (kube-apiserver, etcd, OpenTofu, Cluster API,
# controller-gen, kustomize) are built from their Go modules at pinned
# versions by hack/tools/install.sh and cached under
# $${XDG_CACHE_HOME:-$$HOME/.cache}/captf/tools, so only the first run on a
# machine pays for them.

SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

TOOLS := hack/tools/install.sh
GENERATORS = $(shell $(TOOLS) generators)
CONTROLLER_GEN = $(GENERATORS)/controller-gen
KUSTOMIZE = $(GENERATORS)/kustomize
GO_TEST_FLAGS ?= -race -count=1 -timeout 45m

##@ General

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Getting started

.PHONY: quickstart
quickstart: ## Run the Quick Start on the local environment (no cloud, no cluster, no Docker).
	@hack/quickstart.sh

.PHONY: dev
dev: ## Start the local environment and keep it running until Ctrl-C.
	@hack/dev.sh

##@ Development

.PHONY: generate
generate: ## Regenerate deepcopy, CRDs and RBAC from the API types and markers.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=captf-manager-role paths=./internal/... output:rbac:artifacts:config=config/rbac

.PHONY: manifests
manifests: generate ## Render the CRDs with their contract labels (kustomize).
	$(KUSTOMIZE) build config/crd > /dev/null

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify
verify: ## Fail when a generated file is stale, the code is unformatted or vet complains.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above need formatting"; exit 1; }
	go vet ./...
	go test -count=1 ./test/verify/...

##@ Test

.PHONY: tools
tools: ## Build (once per machine) every pinned third-party binary.
	$(TOOLS) all > /dev/null

.PHONY: test
test: tools ## Run every test, end-to-end included.
	go test $(GO_TEST_FLAGS) ./...

##@ Build

.PHONY: build
build: ## Build the binaries into bin/.
	CGO_ENABLED=0 go build -o bin/ ./cmd/...
