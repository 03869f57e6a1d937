# berth: build, test and demo. Everything needs only Go.

GO           ?= go
VERSION      ?= dev
TEST_TIMEOUT ?= 30m
LDFLAGS      := -X github.com/berthdev/berth/internal/version.Version=$(VERSION)

.PHONY: all help build berth devcluster generate docs test test-tools browser test-shared fuzz demo demo-stop dashboard-screenshots bench bench-fleet clean

all: build

## help: list the targets and what they do
help:
	@sed -n 's/^## //p' Makefile

## build: build bin/berth and bin/berth-devcluster
build: berth devcluster

## berth: build bin/berth
berth:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/berth ./cmd/berth

## devcluster: build bin/berth-devcluster, the local Kubernetes control plane
# The touch marks the binary newer than its sources even when go build finds
# it up to date; tests rebuild it when a source file is newer.
devcluster:
	devcluster/build.sh $(CURDIR)/bin/berth-devcluster
	@touch bin/berth-devcluster

## generate: regenerate the controller API's deep-copy functions and CRD from its Go types with
## controller-gen (from the tools module, so berth's own go.mod does not require it), and copy
## the CRD into the berth-controller chart
CONTROLLER_API := ./api/...
generate:
	$(GO) -C tools build -o $(CURDIR)/bin/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
	bin/controller-gen object paths=$(CONTROLLER_API)
	bin/controller-gen crd paths=$(CONTROLLER_API) output:crd:dir=api/crds
	cp api/crds/berth.dev_releases.yaml api/crds/berth.dev_rollouts.yaml charts/berth-controller/crds/

## docs: write docs/api.md, the Release API reference, from the Go types in api/v1alpha1
## (internal/apidocs); a test of make test fails when it is stale
docs:
	$(GO) run ./internal/apidocs/cmd/apidocs -o docs/api.md

## test: run every test, unit and integration (integration tests start devclusters), then each
## fuzz target for FUZZTIME_SHORT beyond its seed corpus
FUZZTIME_SHORT ?= 5s
test: devcluster test-tools browser
	@rm -f bin/crash-summary.txt
	BERTH_CRASH_SUMMARY=$(CURDIR)/bin/crash-summary.txt $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	@cat bin/crash-summary.txt 2>/dev/null || true
	cd devcluster && $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	GO=$(GO) FUZZTIME=$(FUZZTIME_SHORT) scripts/fuzz.sh

## test-tools: build into Go's build cache the other side's CLIs that tests run (cosign and sops,
## each from its own module under test/tools), so that their first build, minutes long, is not
## counted against a test package's timeout; tests find the cached binary
test-tools:
	$(GO) -C test/tools/cosign tool cosign version >/dev/null
	$(GO) -C test/tools/sops tool sops --disable-version-check --version >/dev/null

## browser: install Debian's chromium for the dashboard's browser tests when it is missing (nothing
## to do when BERTH_CHROMIUM is set, or chromium or chromium-browser is on PATH); apt-get runs as
## root: through sudo when make runs as another user
browser:
	@if [ -n "$$BERTH_CHROMIUM" ]; then \
		command -v "$$BERTH_CHROMIUM" >/dev/null || { echo "browser: BERTH_CHROMIUM=$$BERTH_CHROMIUM: not found"; exit 1; }; \
	elif command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then \
		:; \
	else \
		missing="browser: chromium is not on PATH: install Debian's chromium package (apt-get install chromium) or set BERTH_CHROMIUM to a Chromium"; \
		command -v apt-get >/dev/null || { echo "$$missing (there is no apt-get here to do it)"; exit 1; }; \
		sudo=; \
		if [ "$$(id -u)" -ne 0 ]; then \
			command -v sudo >/dev/null || { echo "$$missing (run make browser as root: there is no sudo here)"; exit 1; }; \
			sudo=sudo; \
		fi; \
		echo "browser: installing Debian's chromium package"; \
		$$sudo apt-get update && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium || \
			{ echo "$$missing"; exit 1; }; \
	fi

## fuzz: run every fuzz target of the module for FUZZTIME each (scripts/fuzz.sh); a failing input
## is saved under its package's testdata/fuzz and becomes a regression test once committed
FUZZTIME ?= 30s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

## test-shared: run the tests that need the real public charts kept beside the repository in
## ../shared/charts (podinfo, ingress-nginx): built with the sharedcharts tag, so that make test
## passes in a bare clone; .ci/run runs both
SHARED_TESTS := TestRenderMatchesHelm|TestTemplateMatchesHelm|TestTemplateShowOnly|TestPodinfoLifecycle|TestIngressNginxLifecycle|TestRenderedManifestEqualsHelmTemplate|TestHelmCompatibility|TestIngressNginxWithHooks
test-shared: devcluster
	@test -d ../shared/charts || { echo "test-shared: ../shared/charts not found: the real charts must sit beside the repository"; exit 1; }
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -tags sharedcharts -run '^($(SHARED_TESTS))$$' ./internal/chart/ ./internal/cli/ ./test/lifecycle/ ./test/e2e/

## demo: start a local cluster and show berth against it; the cluster keeps running, with the
## demo's release, for berth dashboard (KUBECONFIG=bin/demo/kubeconfig bin/berth dashboard)
demo: build
	./scripts/demo.sh

## dashboard-screenshots: run the dashboard's browser tests and copy the screenshots they take
## into docs/images/dashboard, which docs/dashboard.md shows
DASHBOARD_SHOTS := releases diff objects hooks release-object blocked-uninstall
dashboard-screenshots: devcluster browser
	rm -rf bin/artifacts/dashboard
	BERTH_ARTIFACTS=$(CURDIR)/bin/artifacts/dashboard $(GO) test -count=1 ./test/dashboard
	mkdir -p docs/images/dashboard
	for f in $(DASHBOARD_SHOTS); do cp bin/artifacts/dashboard/*/$$f.png docs/images/dashboard/ || exit 1; done

## demo-stop: stop the cluster make demo left running
demo-stop:
	./scripts/demo-stop.sh

## bench: berth against Helm v4 and the client-go floor on a local cluster (see bench/README.md),
## then large release records written, read and listed against Helm's, then berth controller
## reconciling 100 and 1000 Releases at once, then berth doctor over a cluster of 2,000 more
## objects, then berth dashboard's release list with 1,000 releases (its API, and the page in a
## Chromium that make browser installs); every part runs even when one misses a goal, and then
## make fails (berth-bench exits 2);
## --report-only in BENCH_FLAGS, RECORDS_BENCH_FLAGS and CONTROLLER_BENCH_FLAGS only reports;
## BENCH_FLAGS passes flags to "berth-bench run", e.g. BENCH_FLAGS="--pairs 3 --cases large",
## RECORDS_BENCH_FLAGS to "berth-bench records", CONTROLLER_BENCH_FLAGS to "berth-bench controller"
BENCH_FLAGS ?=
RECORDS_BENCH_FLAGS ?=
CONTROLLER_BENCH_FLAGS ?= --releases 100,1000 --controller-qps 20,1000 --hung 100 --interval 1m --steady 3m
bench: build browser
	$(GO) build -o bin/helm helm.sh/helm/v4/cmd/helm
	$(GO) build -o bin/berth-bench ./bench
	$(GO) build -o bin/berth-bench-measure ./bench/measure
	missed=0; \
	bin/berth-bench run $(BENCH_FLAGS); rc=$$?; \
	if [ $$rc -eq 2 ]; then missed=1; elif [ $$rc -ne 0 ]; then exit $$rc; fi; \
	bin/berth-bench records $(RECORDS_BENCH_FLAGS); rc=$$?; \
	if [ $$rc -eq 2 ]; then missed=1; elif [ $$rc -ne 0 ]; then exit $$rc; fi; \
	bin/berth-bench controller $(CONTROLLER_BENCH_FLAGS); rc=$$?; \
	if [ $$rc -eq 2 ]; then missed=1; elif [ $$rc -ne 0 ]; then exit $$rc; fi; \
	$(GO) test -run '^$$' -bench BenchmarkDoctor -benchtime 5x ./test/doctor || exit $$?; \
	$(GO) test -run '^$$' -bench BenchmarkDashboardReleases -benchtime 5x ./test/dashboard || exit $$?; \
	if [ $$missed -ne 0 ]; then echo "bench: a goal was missed (the goals tables above say which)"; exit 2; fi

## bench-fleet: berth controller as 2 shards, and releasing into a second cluster, beside one
## controller, with 100, 1000 and 3000 Releases (bench/README.md, "Fleets: shards and remote clusters");
## apart from "make bench", whose budget it does not fit. Writes bench/results/controller-fleet.md
## and .json; FLEET_BENCH_FLAGS changes the flags
FLEET_BENCH_FLAGS ?= --releases 100,1000,3000 --shards 2 --remote 100 --controller-qps 1000
bench-fleet: build
	$(GO) build -o bin/berth-bench ./bench
	$(GO) build -o bin/berth-bench-measure ./bench/measure
	bin/berth-bench controller --name controller-fleet --readme "" $(FLEET_BENCH_FLAGS)

## clean: remove build output
clean:
	rm -rf bin
