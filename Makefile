# CAPTF — Cluster API Provider Terraform.
#
# Third-party binaries (kube-apiserver, etcd, OpenTofu, Terraform, Cluster API,
# controller-gen, kustomize, staticcheck) are built from their Go modules at pinned
# versions by hack/tools/install.sh and cached under
# $${XDG_CACHE_HOME:-$$HOME/.cache}/captf/tools, so only the first run on a
# machine pays for them.

SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

TOOLS := hack/tools/install.sh
GENERATORS = $(shell $(TOOLS) generators)
CONTROLLER_GEN = $(GENERATORS)/controller-gen
KUSTOMIZE = $(GENERATORS)/kustomize
STATICCHECK = $(shell $(TOOLS) staticcheck)/staticcheck
# -trimpath keeps source paths out of the build, so a fresh clone in another
# folder reuses the build cache instead of compiling every package again.
# -ldflags=-w leaves DWARF out of the test binaries (stack traces and race
# reports do not use it), which makes each link about a quarter cheaper.
# -p 3 runs three test binaries at once on two cores: most packages wait on
# an API server, a Job or a process for part of their time, and a third
# binary uses that idle CPU.
GO_BUILD_FLAGS := -race -trimpath -ldflags=-w
GO_TEST_FLAGS ?= $(GO_BUILD_FLAGS) -p 3 -count=1 -timeout 45m

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
generate: ## Regenerate deepcopy, CRDs, RBAC and the webhook configuration from the API types and markers.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=captf-manager-role paths=./internal/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhook/... output:webhook:artifacts:config=config/webhook
	go run ./hack/docsgen

.PHONY: manifests
manifests: generate ## Render the CRDs with their contract labels (kustomize).
	$(KUSTOMIZE) build config/crd > /dev/null

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: ## Run staticcheck (default checks, unused code included; staticcheck.conf).
	$(STATICCHECK) ./...

.PHONY: verify
verify: ## Fail when a generated file is stale, the code is unformatted, or vet or staticcheck complains.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above need formatting"; exit 1; }
	go vet ./...
	$(STATICCHECK) ./...
	go test -count=1 ./test/verify/...

.PHONY: check-licenses
check-licenses: ## Fail when a Go module linked into a CAPTF binary has a licence that is not permissive (nor a recorded exception, hack/licenses).
	go run ./hack/licenses -q

##@ Test

.PHONY: tools
tools: ## Build (once per machine) every pinned third-party binary.
	$(TOOLS) all > /dev/null

.PHONY: test
# The longest packages are named first so that they start first, while the
# short ones share the other core.
LONGEST_TESTS := ./test/e2e ./test/lifecycle ./test/scale ./cmd/runner

# hack/testrun runs the test binaries as go test does, but keeps them linked
# under $${XDG_CACHE_HOME:-$$HOME/.cache}/captf/testbin: a binary is linked
# again only when something it is made of changed (go test links all of
# them on every run, about a fifth of this target's CPU).
test: tools ## Run every test, end-to-end included.
	go run ./hack/testrun -p 3 -build '$(GO_BUILD_FLAGS)' -timeout 45m $(LONGEST_TESTS) ./...

.PHONY: scale
scale: tools ## Measure one manager at scale (N=100,500,... TerraformMachines) and rewrite docs/book/operator-guide/scale.md.
	go run ./test/scale/cmd/scale -n $(or $(N),100) $(SCALE_FLAGS)

.PHONY: rollout
rollout: tools ## Roll a ClusterClass control plane (KubeadmControlPlane on an external etcd) out to a new machine image, its old machine destroyed.
	go test $(GO_TEST_FLAGS) -run 'TestClusterClassControlPlaneRollout' -v ./test/e2e/

.PHONY: chaos
chaos: tools ## Run the fault-injection matrix: the manager killed after every write site of the reference bring-up, and the fault scenarios.
	go test $(GO_TEST_FLAGS) -tags chaos -run 'TestFault' -v ./test/e2e/

.PHONY: move
move: tools ## Move a cluster between two local environments with clusterctl move (Cluster API's own library) and check what the target rebuilds.
	go test $(GO_TEST_FLAGS) -tags move -run 'TestClusterctlMove' -v ./test/e2e/

##@ Build

.PHONY: build
build: ## Build the binaries into bin/.
	CGO_ENABLED=0 go build -o bin/ ./cmd/...

# The no-op images: the roles in NOOP, each built on OpenTofu and on
# Terraform and tagged $(VERSION)-opentofu and $(VERSION)-terraform. No
# container engine is needed: images are built and pushed with
# go-containerregistry.
NOOP ?= cluster machine machinepool
VERSION ?= dev
NOOP_IMAGES_DIR ?= _out/images
NOOP_REGISTRY ?=

.PHONY: noop-images
noop-images: ## Build the no-op module images of NOOP (tags $(VERSION)-opentofu, $(VERSION)-terraform) into OCI layouts in $(NOOP_IMAGES_DIR).
	go run ./hack/noop-images --layout-dir $(NOOP_IMAGES_DIR) --tag $(VERSION) --roles "$(NOOP)"

.PHONY: noop-images-push
noop-images-push: ## Build and push the no-op module images of NOOP to $(NOOP_REGISTRY)/noop-<role>:$(VERSION)-<runtime>.
	@test -n "$(NOOP_REGISTRY)" || { echo "noop-images-push: set NOOP_REGISTRY=<registry>/<path>"; exit 1; }
	go run ./hack/noop-images --registry $(NOOP_REGISTRY) --tag $(VERSION) --roles "$(NOOP)"

MANAGER_IMAGE_NAME ?= ghcr.io/captf-io/cluster-api-provider-terraform/manager
RELEASE_TAG ?= dev
RELEASE_IMAGE ?= $(MANAGER_IMAGE_NAME):$(RELEASE_TAG)
RELEASE_DIR ?= _out/release

.PHONY: manager-image
manager-image: ## Build the manager image (/manager and a static /runner); REGISTRY=host/path pushes it, else an OCI layout in _out/images.
	go run ./hack/manager-image $(if $(REGISTRY),--registry $(REGISTRY),--layout-dir _out/images) --tag $(RELEASE_TAG)

# The manager image as the Quick Start names it: IMG is the full reference.
IMG ?= $(RELEASE_IMAGE)
RELEASE_IMG ?= $(RELEASE_IMAGE)

.PHONY: docker-build
docker-build: ## Build the manager image $(IMG) into the OCI layout _out/images/manager (no container engine).
	go run ./hack/manager-image --layout-dir _out/images --tag $(lastword $(subst :, ,$(IMG))) --version $(VERSION)

.PHONY: docker-push
docker-push: ## Build and push the manager image to $(IMG) (no container engine).
	go run ./hack/manager-image --image $(IMG) --version $(VERSION)

# The platforms docker-buildx builds, as docker buildx --platform takes them.
PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: docker-buildx
docker-buildx: ## Build the manager image for each of PLATFORMS and push them to $(IMG) as one multi-platform index (no container engine).
	go run ./hack/manager-image --image $(IMG) --version $(VERSION) --platforms $(PLATFORMS)

##@ tfcapi-lint

LINT_PKG := github.com/captf-io/cluster-api-provider-terraform/internal/lint
LINT_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
LINT_DIST ?= dist
ROLES := cluster machine machinepool

bin/tfcapi-lint: FORCE
	CGO_ENABLED=0 go build -o $@ ./cmd/tfcapi-lint

.PHONY: FORCE
FORCE:

.PHONY: lint-modules
lint-modules: bin/tfcapi-lint ## Lint the no-op modules (modules/noop) with tfcapi-lint --strict.
	@for role in $(ROLES); do echo "== modules/noop/$$role"; bin/tfcapi-lint module modules/noop/$$role --role $$role --strict || exit 1; done

.PHONY: lint-images
lint-images: bin/tfcapi-lint noop-images ## Build the no-op images (make noop-images) and lint them with tfcapi-lint --strict.
	@for role in $(NOOP); do for rt in opentofu terraform; do echo "== noop-$$role:$(VERSION)-$$rt"; \
		bin/tfcapi-lint image oci:$(NOOP_IMAGES_DIR)/noop-$$role:$(VERSION)-$$rt --role $$role --strict || exit 1; done; done

.PHONY: release-lint-snapshot
release-lint-snapshot: ## Build the five tfcapi-lint release binaries and tfcapi-lint-checksums.txt into dist/, stamped with a snapshot version.
	@$(MAKE) --no-print-directory release-lint-build LINT_VERSION="$$(git describe --tags --abbrev=0 2>/dev/null || echo v0.0.0)-SNAPSHOT-$$(git rev-parse --short HEAD)"

.PHONY: release-lint
release-lint: ## Build the tfcapi-lint release binaries and checksums into dist/ from the current git tag.
	@tag="$$(git describe --tags --exact-match 2>/dev/null)" || { echo "release-lint: HEAD has no tag (use release-lint-snapshot)"; exit 1; }; \
	$(MAKE) --no-print-directory release-lint-build LINT_VERSION="$$tag"

.PHONY: release-lint-build
release-lint-build:
	@test -n "$(LINT_VERSION)" || { echo "LINT_VERSION is empty"; exit 1; }
	@mkdir -p $(LINT_DIST) && rm -f $(LINT_DIST)/tfcapi-lint-*
	@for p in $(LINT_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ "$$os" = windows ] && ext=.exe; \
		echo "tfcapi-lint $(LINT_VERSION) $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "-s -w -X $(LINT_PKG).Version=$(LINT_VERSION)" \
			-o $(LINT_DIST)/tfcapi-lint-$$os-$$arch$$ext ./cmd/tfcapi-lint || exit 1; \
	done
	@cd $(LINT_DIST) && sha256sum tfcapi-lint-*-* > tfcapi-lint-checksums.txt && cat tfcapi-lint-checksums.txt

.PHONY: release-plugin
release-plugin: ## Build kubectl-captf archives for each platform and render its krew manifest into $(RELEASE_DIR).
	hack/krew/release.sh $(RELEASE_TAG) $(RELEASE_DIR) $(PLUGIN_PLATFORMS)

.PHONY: manifests-release
manifests-release: ## Render infrastructure-components.yaml (image $(RELEASE_IMG)), metadata.yaml and the flavors into $(RELEASE_DIR), a clusterctl local repository.
	rm -rf $(RELEASE_DIR)/kustomize && mkdir -p $(RELEASE_DIR)/kustomize
	cp -R config/. $(RELEASE_DIR)/kustomize/
	cd $(RELEASE_DIR)/kustomize/default && $(KUSTOMIZE) edit set image $(MANAGER_IMAGE_NAME)=$(RELEASE_IMG)
	$(KUSTOMIZE) build $(RELEASE_DIR)/kustomize/default > $(RELEASE_DIR)/infrastructure-components.yaml
	cp config/metadata.yaml $(RELEASE_DIR)/metadata.yaml
	cp templates/cluster-template*.yaml templates/clusterclass-*.yaml $(RELEASE_DIR)/
	rm -rf $(RELEASE_DIR)/kustomize
