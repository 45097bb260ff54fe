# kubectl-federate. `make help` lists the targets.
SHELL := /usr/bin/env bash
GO ?= go
PKG := github.com/federate-dev/kubectl-federate
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# ldflags stamps a version (its argument) with this commit and date; dist passes the release version.
ldflags = -s -w -X $(PKG)/pkg/version.version=$(1) -X $(PKG)/pkg/version.commit=$(COMMIT) -X $(PKG)/pkg/version.date=$(DATE)
LDFLAGS := $(call ldflags,$(VERSION))
DEMO_DIR ?= $(CURDIR)/.demo
TEST_FLAGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build bin/kubectl-federate
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/kubectl-federate ./cmd/kubectl-federate

BINDIR ?= $(shell $(GO) env GOPATH)/bin
.PHONY: install
install: build ## Put kubectl-federate and its completion shim kubectl_complete-federate in BINDIR (default: GOPATH/bin)
	install -d $(BINDIR)
	install -m 0755 bin/kubectl-federate $(BINDIR)/kubectl-federate
	install -m 0755 hack/kubectl_complete-federate $(BINDIR)/kubectl_complete-federate

RELEASE_VERSION ?= $(shell v=$$(git describe --tags --exact-match 2>/dev/null); echo $${v:-v0.0.0-dev})
.PHONY: dist
dist: ## Cross-build release archives, checksums.txt and the validated krew manifest into dist/
	VERSION=$(RELEASE_VERSION) LDFLAGS="$(call ldflags,$(RELEASE_VERSION))" hack/dist.sh

.PHONY: kubeenv
kubeenv: ## Build the local cluster runner and, once per machine, the control plane (etcd, kube-apiserver, kube-controller-manager, kubectl) and a node's binaries (kubelet, kube-scheduler, containerd, kube-router)
	$(GO) build -o bin/kubeenv ./hack/kubeenv
	bin/kubeenv build --node provider >/dev/null

.PHONY: demo
demo: build kubeenv ## Start two throwaway clusters (consumer, provider, the provider with a real node: Linux and root) and federate them; KEEP=1 leaves them up
ifeq ($(KEEP),1)
	bin/kubeenv down --dir $(DEMO_DIR)
	rm -rf $(DEMO_DIR)
	bin/kubeenv up --dir $(DEMO_DIR) --node provider > $(DEMO_DIR).env
	source $(DEMO_DIR).env && hack/demo.sh && hack/demo-keep.sh $(DEMO_DIR)
else
	bin/kubeenv run --node provider -- hack/demo.sh
endif

.PHONY: demo-down
demo-down: ## Stop the clusters left by KEEP=1 make demo
	bin/kubeenv down --dir $(DEMO_DIR)
	rm -rf $(DEMO_DIR) $(DEMO_DIR).env

.PHONY: test
test: unit e2e ## Run all tests: the unit tier, then the end-to-end tests against real local clusters

UNIT_PKGS := ./pkg/... ./cmd/... ./hack/...
.PHONY: unit
unit: ## Run the fast tier, no clusters (seconds), with each package's coverage
	$(GO) test -count=1 -cover $(TEST_FLAGS) $(UNIT_PKGS)

.PHONY: cover
# One number for the unit tier: every unit test counts toward every package of pkg/ it runs (a command's
# test covers the domain it calls), as the per-package figures of `make unit` do not.
cover: ## Unit coverage of pkg/ as one number (-coverpkg=./pkg/...), the profile in bin/cover.out
	@mkdir -p bin
	$(GO) test -count=1 -coverpkg=./pkg/... -coverprofile=bin/cover.out $(UNIT_PKGS) >/dev/null
	$(GO) tool cover -func=bin/cover.out | tail -1

.PHONY: e2e
# The doc test writes how many blocks ran and were skipped to DOCTEST_SUMMARY, printed after the run:
# go test shows a passing package's log only with -v.
DOCTEST_SUMMARY := $(CURDIR)/bin/doctest-summary.txt
e2e: build kubeenv ## Run the end-to-end tests against real local clusters, the doc test and the node tier among them (in 4 processes, see hack/e2e.sh)
	@rm -f $(DOCTEST_SUMMARY)
	FEDERATE_BIN=$(CURDIR)/bin/kubectl-federate DOCTEST_SUMMARY=$(DOCTEST_SUMMARY) GO=$(GO) bash hack/e2e.sh $(TEST_FLAGS); \
	  status=$$?; if [ -f $(DOCTEST_SUMMARY) ]; then cat $(DOCTEST_SUMMARY); fi; exit $$status

.PHONY: doctest
doctest: build kubeenv ## Run only the doc test (part of e2e): the shell blocks of README.md and docs/*.md on two fresh clusters; DOCTEST_UPDATE=1 rewrites the output the pages show
	@rm -f $(DOCTEST_SUMMARY)
	FEDERATE_BIN=$(CURDIR)/bin/kubectl-federate DOCTEST_SUMMARY=$(DOCTEST_SUMMARY) $(GO) test -count=1 -timeout 20m -tags e2e -run TestDocs $(TEST_FLAGS) ./test/docs; \
	  status=$$?; if [ -f $(DOCTEST_SUMMARY) ]; then cat $(DOCTEST_SUMMARY); fi; exit $$status

.PHONY: bench
bench: build kubeenv ## Measure on local clusters (round trips through a 50 ms link, a burst of 20, 1,000 tenants, a 10-cluster mesh, startup, size) into docs/benchmarks.md; BENCH_FLAGS=-parts=pairing for one part
	FEDERATE_BIN=$(CURDIR)/bin/kubectl-federate $(GO) run ./hack/bench $(BENCH_FLAGS)

.PHONY: vet
vet: ## Run go vet, check formatting, and refuse build output in git (a tracked binary or file over 1 MB)
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) run ./hack/verifyrepo

GOLANGCI_LINT := bin/golangci-lint
$(GOLANGCI_LINT): hack/tools/lint/go.mod
	cd hack/tools/lint && $(GO) build -o ../../../$(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (built once from the pinned tools module) with .golangci.yaml
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

.PHONY: clean
clean: ## Remove build output
	rm -rf bin dist

# A count, not a duration: Go 1.26's fuzz coordinator can report a spurious "context deadline exceeded"
# when a duration runs out (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 20000x
.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 20000x executions, about 10 s)
	@for t in FuzzDecodeTenant FuzzDecodeIdentity FuzzCheckCSR FuzzVerifySignature; do \
	  $(GO) test ./pkg/handshake -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) || exit 1; done
	$(GO) test ./pkg/nonce -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/internal/gotemplate -run '^$$' -fuzz '^FuzzMatchesTextTemplate$$' -fuzztime $(FUZZTIME)

.PHONY: docs
docs: ## Regenerate the command reference in docs/reference
	$(GO) run ./hack/gendocs docs/reference
