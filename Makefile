# kube-pysched developer entry points. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install lint unit e2e test demo cluster-build cluster-up cluster-down e2e-kind bench clean system-packages

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

EXAMPLE := examples/node-pool

# The last step fails on any line that cites development records instead of stating the fact
# (scripts/check-no-dev-records.sh lists the patterns and the paths it reads).
lint: install
	$(VENV)/bin/ruff check scheduler controller tests e2e examples dashboards
	$(VENV)/bin/ruff format --check scheduler controller tests e2e examples dashboards
	$(VENV)/bin/mypy
	cd $(EXAMPLE) && MYPYPATH=$(CURDIR) $(CURDIR)/$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	sh scripts/check-no-dev-records.sh

# The example plugin is a distribution of its own: its tests run with its own pytest config.
# The bench's unit tests need no cluster: e2e/conftest.py (which builds one) is not loaded.
unit: install
	$(PY) -m pytest -q tests
	$(PY) -m pytest -q -p no:cacheprovider --noconftest e2e/bench_tests
	cd $(EXAMPLE) && $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider

# Builds the pinned control plane and helm into ~/.cache/kube-pysched (once per version).
cluster-build: install
	$(PY) -m e2e.cluster build

# Debian packages the e2e suite runs: prometheus + promtool (dashboard and alert tests),
# debootstrap, buildah, umoci, runc (the container image test). Installed with apt-get when
# missing; without apt or root it says why and those tests skip. See e2e/system_packages.py.
system-packages: install
	$(PY) -m e2e.system_packages

# Always the local control plane: a developer's $KUBECONFIG must not become the test target
# by accident (`pytest e2e` itself honours $KUBECONFIG; see docs/testing.md and e2e-kind).
e2e: install cluster-build system-packages
	env -u KUBECONFIG $(PY) -m pytest -q -p no:cacheprovider e2e

test: lint unit e2e

# The reliability suite (docs/reliability.md): every test marked `reliability`, the long churn
# soak included (RELIABILITY_SOAK_SECONDS, default 1800). `make e2e` runs the short ones only
# (tests marked `reliability_long` are deselected without --run-long). Figures (JSON) land
# in RELIABILITY_OUT.
RELIABILITY_OUT ?= $(CURDIR)/.reliability
RELIABILITY_ARGS ?=
.PHONY: reliability
reliability: install cluster-build
	env -u KUBECONFIG RELIABILITY_OUT=$(RELIABILITY_OUT) $(PY) -m pytest -q -p no:cacheprovider \
	  -m reliability --run-long $(RELIABILITY_ARGS) e2e

cluster-up: install cluster-build
	$(PY) -m e2e.cluster up

cluster-down: install
	$(PY) -m e2e.cluster down

# deploy/kube-pysched.yaml is the chart's default render (helm built into the cache once).
.PHONY: deploy-manifests
deploy-manifests: install
	$(PY) -m e2e.helm render-deploy

.PHONY: cluster-status
cluster-status: install
	$(PY) -m e2e.cluster status

demo: install cluster-build
	$(PY) -m e2e.demo

# For hosts with a Docker engine: the same e2e suite against a kind cluster.
e2e-kind: install
	kind create cluster --name kube-pysched --config e2e/kind-config.yaml --kubeconfig $(CURDIR)/.kind-kubeconfig
	KUBECONFIG=$(CURDIR)/.kind-kubeconfig $(PY) -m pytest -q -p no:cacheprovider e2e; \
	  rc=$$?; kind delete cluster --name kube-pysched; exit $$rc

# Kubernetes' own e2e.test, built once per version into the same cache as the control plane.
.PHONY: e2e-test-build conformance
e2e-test-build: install cluster-build
	$(PY) -m e2e.cluster build-e2e

# The [sig-scheduling] specs of e2e.test with kube-scheduler, then with kube-pysched, as the
# default scheduler; then the Workload API selection (GangScheduling, WorkloadAwarePreemption,
# Workload) on control planes with GenericWorkload on; then the DRA specs that need no kubelet
# ([DRA] control plane). One table and gate per selection (docs/conformance.md). ~28 minutes;
# CONFORMANCE_ARGS='--selection workload' (~3 minutes) or '--selection dra' (~7) runs one.
CONFORMANCE_ARGS ?=
conformance: install e2e-test-build
	env -u KUBECONFIG $(PY) -m e2e.conformance $(CONFORMANCE_ARGS)

# The DRA oracle: upstream's structured allocator (k8s.io/dynamic-resource-allocation of the
# pinned release) behind a JSON-lines CLI, built once into the cache; the differential test of
# kube-pysched's allocator runs cases through it (docs/testing.md). `python -m e2e.dra mix`
# prints how its answers to generated cases split.
.PHONY: dra-oracle-build
dra-oracle-build: install
	$(PY) -m e2e.dra build

# scheduler_perf-style workloads, kube-scheduler beside kube-pysched (docs/benchmarks.md).
BENCH_ARGS ?= --workload all --size 1000
bench: install cluster-build
	$(PY) -m e2e.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# The container image without a Docker engine (root; Debian: apt-get install debootstrap buildah
# umoci runc): Debian base via debootstrap, cached in ~/.cache/kube-pysched/image, then
# buildah bud of image/Containerfile; OCI archive in that cache (docs/operations.md).
.PHONY: image image-test
IMAGE_ARGS ?=
image: install
	$(PY) -m e2e.image $(IMAGE_ARGS) build

# Builds (or reuses) the image and runs it: --version and a scheduling run as uid 65532 on a
# read-only root. Also part of `make e2e`, where it is skipped on hosts without the tools.
image-test: install cluster-build
	env -u KUBECONFIG KUBE_PYSCHED_IMAGE_REQUIRED=1 $(PY) -m pytest -q -p no:cacheprovider e2e/test_image.py
