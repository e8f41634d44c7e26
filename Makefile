# CAPTF — Cluster API Provider Terraform.
#
# Third-party binaries (kube-apiserver, etcd, OpenTofu, Terraform, Cluster API,
# controller-gen, kustomize, staticcheck, promtool, vale) are built from their Go modules at pinned
# versions by hack/tools/install.sh and cached under
# $${XDG_CACHE_HOME:-$$HOME/.cache}/captf/tools, so only the first run on a
# machine pays for them. Hugo and Chromium, which build and test the book's
# website, are Debian's packages, installed by the same script with apt-get.

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
lint: ## Run staticcheck (default checks, unused code included; staticcheck.conf), then its unused-code check without tests: code only tests reach fails.
	$(STATICCHECK) ./...
	$(STATICCHECK) -tests=false -checks U1000 ./...

.PHONY: verify
verify: ## Fail when a generated file is stale, the code is unformatted, vet or staticcheck complains, or code is reached only by tests.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above need formatting"; exit 1; }
	go vet ./...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tests=false -checks U1000 ./...
	go test -count=1 ./test/verify/...

.PHONY: lint-fix
lint-fix: ## Apply go fix's rewrites and gofmt -s, then run staticcheck.
	go fix ./...
	gofmt -s -w $$(git ls-files '*.go')
	$(STATICCHECK) ./...

.PHONY: lint-api
lint-api: ## Check the API against its conventions: generated CRDs current and labelled, the API reference current, the CRD schemas and CEL rules on a real API server.
	go test -count=1 -run 'TestGeneratedFilesAreCurrent|TestCRDManifestsCarryContractLabels|TestDocsAPIReferenceIsCurrent' ./test/verify/
	go test -count=1 ./api/...

.PHONY: verify-gen
verify-gen: ## Fail when a generated file (deepcopy, CRDs, RBAC, webhook configuration) is stale.
	go test -count=1 -run 'TestGeneratedFilesAreCurrent' ./test/verify/

.PHONY: verify-godoc
verify-godoc: ## Fail when a Go package has no package comment.
	@missing=$$(go list -f '{{if not .Doc}}{{.ImportPath}}{{end}}' ./...); \
	test -z "$$missing" || { echo "packages without a package comment:"; echo "$$missing"; exit 1; }

.PHONY: verify-modules
verify-modules: ## Fail when go.mod or go.sum is not tidy, or a downloaded module does not match go.sum.
	go mod tidy -diff
	go mod verify

.PHONY: verify-schemas
verify-schemas: tools ## Check the CRDs on a real API server: invalid objects refused, immutability kept, the book's examples accepted.
	go test -count=1 ./api/...

.PHONY: verify-components
verify-components: tools ## Check config/: the rendered components, RBAC, webhooks, Deployment and the Prometheus component, applied to a real API server.
	go test -count=1 ./config/

.PHONY: verify-metadata
verify-metadata: tools ## Check metadata.yaml and the release manifests clusterctl reads from a local repository.
	go test -count=1 -run 'TestReleaseManifests' ./config/

.PHONY: verify-templates
verify-templates: tools ## Check the cluster templates, ClusterClass and identity templates with clusterctl and a real API server.
	go test -count=1 ./test/flavors/

.PHONY: verify-containerfiles
verify-containerfiles: ## Check modules/Containerfile.* against the image contract and the images CAPTF builds.
	go test -count=1 -run 'TestContainerfilesMatchTheImageContract' ./internal/imagebuild/

.PHONY: verify-noop-modules
verify-noop-modules: lint-modules tools ## Lint the no-op modules strictly and have the pinned OpenTofu validate each.
	@tofu=$$($(TOOLS) opentofu)/tofu; for role in $(ROLES); do \
		work=$$(mktemp -d); cp -R modules/noop/$$role/. $$work/; \
		echo "== tofu validate modules/noop/$$role"; \
		(cd $$work && TF_CLI_CONFIG_FILE=/dev/null $$tofu init -backend=false -input=false >/dev/null && $$tofu validate) || { rm -rf $$work; exit 1; }; \
		rm -rf $$work; done

.PHONY: verify-tilt-provider
verify-tilt-provider: ## Does not apply: CAPTF ships no tilt-provider file; local development runs on test/env (make dev).
	@echo "verify-tilt-provider: CAPTF has no Tilt provider; use make dev"

.PHONY: kubebuilder
kubebuilder: ## Does not apply: CAPTF is not scaffolded by kubebuilder; controller-gen and kustomize are pinned tools (make tools).
	@echo "kubebuilder: not used; make generate runs the pinned controller-gen"

.PHONY: check-licenses
check-licenses: ## Fail when a Go module linked into a CAPTF binary has a licence that is not permissive (nor a recorded exception, hack/licenses).
	go run ./hack/licenses -q

##@ Documentation

# The book is docs/book (Markdown that reads the same on GitHub); docs/site is
# the Hugo project that builds it into a website. Hugo and Chromium are
# Debian's packages and Vale is built from its Go module, all by
# hack/tools/install.sh on first use.
HUGO = $(shell $(TOOLS) hugo)/hugo
VALE = $(shell $(TOOLS) vale)/vale
DOCS_OUT ?= _out/site
DOCS_PORT ?= 1313
DOCS_BASE_URL ?= /

.PHONY: require-docs-dir
require-docs-dir: ## Fail unless docs/book, the users' book, and docs/site, the Hugo project of its website, are there.
	@test -f docs/book/README.md || { echo "docs/book/README.md is missing"; exit 1; }
	@test -f docs/site/hugo.toml || { echo "docs/site/hugo.toml is missing"; exit 1; }

.PHONY: docs
docs: require-docs-dir ## Build the book's website into _out/site (Hugo; DOCS_OUT=dir to change it, DOCS_BASE_URL=/path/ to publish it below a path).
	$(HUGO) --source docs/site --destination $(abspath $(DOCS_OUT)) --cleanDestinationDir --baseURL '$(DOCS_BASE_URL)'
	@echo "docs: the book's website is in $(DOCS_OUT); make docs-serve serves it"

.PHONY: docs-serve
docs-serve: require-docs-dir ## Serve the book's website on http://localhost:1313/ (DOCS_PORT), rebuilt whenever a page changes (Ctrl-C stops).
	@echo "docs-serve: the book is at http://localhost:$(DOCS_PORT)/"
	$(HUGO) server --source docs/site --bind 127.0.0.1 --port $(DOCS_PORT) --baseURL http://localhost:$(DOCS_PORT)/

.PHONY: docs-api
docs-api: require-docs-dir ## Write the API reference page (docs/book/reference/api.md) from api/v1alpha1.
	go run ./hack/docsgen

.PHONY: docs-gen
docs-gen: docs-api ## Write every generated page of the book (the API reference; the Scale page is written by make scale).

.PHONY: verify-docs-api
verify-docs-api: require-docs-dir ## Fail when the API reference page is not what docs-api writes.
	go test -count=1 -run 'TestDocsAPIReferenceIsCurrent' ./test/verify/

.PHONY: verify-docs
verify-docs: require-docs-dir ## Check the book against the code: conditions, events, metrics, flags, RBAC, alerts, runbooks, links.
	go test -count=1 -run 'TestDocs' ./test/verify/

.PHONY: verify-docs-site
verify-docs-site: require-docs-dir ## Build the website and open every page in headless Chromium: links, anchors, images, console errors, 404s; screenshots in _out/site-screenshots.
	go test -count=1 -v -run 'TestSite' ./test/site/

.PHONY: docs-check
docs-check: verify-docs lint-docs-md lint-docs-prose verify-docs-site ## Every documentation check.

.PHONY: lint-docs-md
lint-docs-md: require-docs-dir ## Lint the book's Markdown: links and anchors resolve, every page in the table of contents, one title, headings in order, code blocks with a language, tables well formed.
	go test -count=1 -run 'TestDocsLinksResolve|TestDocsSplitRowAndAnchors' ./test/verify/
	go test -count=1 -run 'TestBook' ./test/site/

.PHONY: lint-docs-prose
lint-docs-prose: require-docs-dir ## Lint the book's prose with Vale (docs/vale): spelling, repeated words, names as their owners write them, nothing left unfinished.
	$(VALE) --config docs/vale/vale.ini docs/book

.PHONY: promtool-check
promtool-check: ## Check the alert rules with the pinned promtool (check rules, linter included), and their metrics and runbooks against the code and the book.
	go test -count=1 -v -run 'TestPrometheusRulesCheck' ./config/
	go test -count=1 -run 'TestDocsAlertRules' ./test/verify/

.PHONY: promtool-test
promtool-test: ## Run promtool's unit tests of every alert (config/prometheus/tests): each fires on series that should fire it and stays silent on near misses.
	go test -count=1 -v -run 'TestPrometheusRulesUnitTests' ./config/

##@ Test

.PHONY: tools
tools: ## Build (once per machine) every pinned third-party binary, and install Hugo and Chromium (apt-get) when missing.
	$(TOOLS) all > /dev/null

.PHONY: test
# The longest packages are named first so that they start first, while the
# short ones share the other core.
LONGEST_TESTS := ./test/install ./test/e2e ./test/docs ./test/lifecycle ./test/scale ./cmd/runner ./test/env ./hack/release ./test/examples ./test/site

# hack/testrun runs the test binaries as go test does, but keeps them linked
# under $${XDG_CACHE_HOME:-$$HOME/.cache}/captf/testbin: a binary is linked
# again only when something it is made of changed (go test links all of
# them on every run, about a fifth of this target's CPU).
test: tools ## Run every test, end-to-end included.
	go run ./hack/testrun -p 3 -build '$(GO_BUILD_FLAGS)' -timeout 45m $(LONGEST_TESTS) ./...

.PHONY: test-release
test-release: tools ## Build a release folder with every platform's manager image and command-line tools (make test builds this machine's platform only) and check it.
	CAPTF_TEST_RELEASE_ALL_PLATFORMS=1 go test $(GO_TEST_FLAGS) -run 'TestRelease' -v ./hack/release/

.PHONY: scale
scale: tools ## Measure one manager at scale (N=100,500,... TerraformMachines) and rewrite docs/book/operator-guide/scale.md.
	go run ./test/scale/cmd/scale -n $(or $(N),100) $(SCALE_FLAGS)

.PHONY: bench-reaction
bench-reaction: tools ## Measure the time from a finished Job to the machine's next step on a manager that is not saturated (60 machines, one every 250 ms, 1 s Jobs); reports p50/p95/p99 ms.
	go test -run '^$$' -bench BenchmarkReaction -benchtime 1x ./test/scale

.PHONY: bench-tenant
bench-tenant: tools ## Measure the manager's RSS with and without a hostile tenant (500 Secrets of 1 MiB labeled captf.io/managed, a gzip-bomb state); fails past +10 %.
	go run ./test/scale/cmd/tenant -n $(or $(N),500)

.PHONY: rollout
rollout: tools ## Roll a ClusterClass control plane (KubeadmControlPlane on an external etcd) out to a new machine image, its old machine destroyed.
	go test $(GO_TEST_FLAGS) -run 'TestClusterClassControlPlaneRollout' -v ./test/e2e/

.PHONY: chaos
chaos: tools ## Run the fault-injection matrix (the manager killed after every write site of the reference bring-up) and every fault scenario (control plane, watches, webhook, partition, throttling, a lost Node).
	go test $(GO_TEST_FLAGS) -tags chaos -run 'TestFault' -v ./test/e2e/

.PHONY: move
move: tools ## Move a cluster between two local environments with clusterctl move (Cluster API's own library) and check what the target rebuilds.
	go test $(GO_TEST_FLAGS) -tags move -run 'TestClusterctlMove' -v ./test/e2e/

##@ Build

.PHONY: build
build: ## Build the binaries into bin/.
	CGO_ENABLED=0 go build -o bin/ ./cmd/...

.PHONY: manager
manager: ## Build the manager into bin/manager.
	CGO_ENABLED=0 go build -o bin/manager ./cmd/manager

.PHONY: runner
runner: ## Build the runner (static) into bin/runner.
	CGO_ENABLED=0 go build -o bin/runner ./cmd/runner

.PHONY: run
run: ## Run the manager on this machine against the cluster of KUBECONFIG (ARGS are its flags).
	go run ./cmd/manager $(ARGS)

.PHONY: libvirt-images test-libvirt-modules libvirt-images-push
libvirt-images: ## Does not apply: the libvirt modules the libvirt flavor names are not in this repository (only the no-op modules are).
	@echo "$@: this repository holds only the no-op modules (make noop-images)"; exit 1
test-libvirt-modules: libvirt-images ## Does not apply: see libvirt-images.
libvirt-images-push: libvirt-images ## Does not apply: see libvirt-images.

.PHONY: clean
clean: ## Remove what the build targets write: bin/, _out/ and dist/.
	rm -rf bin _out dist

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

.PHONY: test-modules
test-modules: bin/tfcapi-lint ## Run the contract test (tfcapi-lint test) on the no-op modules with the pinned OpenTofu, offline.
	@tofu=$$($(TOOLS) opentofu)/tofu; for role in $(ROLES); do echo "== modules/noop/$$role"; bin/tfcapi-lint test modules/noop/$$role --role $$role --runtime-binary $$tofu || exit 1; done

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

.PHONY: release-lint-binaries
release-lint-binaries: ## Build the tfcapi-lint binaries of LINT_PLATFORMS and their checksums into dist/, stamped $(VERSION).
	@$(MAKE) --no-print-directory release-lint-build LINT_VERSION="$(VERSION)"

##@ Release

# A release is one folder, $(RELEASE_ROOT)/infrastructure-terraform/$(VERSION):
# a clusterctl provider repository (hack/release says what it holds).
RELEASE_ROOT ?= _out/release
RELEASE_FOLDER = $(RELEASE_ROOT)/infrastructure-terraform/$(VERSION)
RELEASE_FLAGS = --version $(VERSION) --dir $(RELEASE_FOLDER) --image-name $(MANAGER_IMAGE_NAME)

.PHONY: require-version
require-version:
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] || { echo "set VERSION=vX.Y.Z (VERSION=$(VERSION))"; exit 1; }

.PHONY: release-preflight
release-preflight: require-version tools ## Check the checkout may be released as VERSION: semver, a clean tree, the tag (if any) on HEAD and above every other, metadata.yaml's series, make verify.
	go run ./hack/release preflight --version $(VERSION)

.PHONY: release
release: release-preflight ## Build the release folder of VERSION: manifests, images, binaries, SBOMs, notes and checksums (make release VERSION=v0.1.0).
	go run ./hack/release all $(RELEASE_FLAGS)
	go run ./hack/release verify --dir $(RELEASE_FOLDER)

.PHONY: release-image-digest
release-image-digest: require-version tools ## Build the multi-platform manager image into the release folder and print its reference pinned by digest.
	go run ./hack/release image $(RELEASE_FLAGS)

.PHONY: release-assets
release-assets: require-version tools ## Build everything of the release folder but the manager image (which must be there): manifests pinned to it, no-op images, binaries, SBOMs, checksums.
	go run ./hack/release assets $(RELEASE_FLAGS)

.PHONY: release-notes
release-notes: require-version ## Write RELEASE_NOTES.md into the release folder from the commits since the previous tag.
	go run ./hack/release notes $(RELEASE_FLAGS)

.PHONY: release-plugin
release-plugin: require-version ## Build kubectl-captf archives for each platform and render its krew manifest into the release folder.
	go run ./hack/release plugin $(RELEASE_FLAGS)

.PHONY: manifests-release
manifests-release: tools ## Render infrastructure-components.yaml (image $(RELEASE_IMG)), metadata.yaml, the flavors, ClusterClasses and identity templates into the release folder.
	go run ./hack/release manifests $(RELEASE_FLAGS) --image $(RELEASE_IMG)

.PHONY: verify-local-repository
verify-local-repository: require-version tools ## Check the release folder of VERSION: every file, checksums, image digests, SBOMs, and clusterctl reading it as a local repository.
	go run ./hack/release verify --dir $(RELEASE_FOLDER)

.PHONY: release-github
release-github: ## Not done here: publishing needs the GitHub API; upload every file of the release folder (checksums.txt lists them) as the tag's assets.
	@echo "release-github: upload the files of $(RELEASE_FOLDER) (see its checksums.txt) as the assets of release $(VERSION)"; exit 1
