# Kubewarden policy Makefile. Target names follow kubewarden/rust-policy-template
# (policy.wasm, annotated-policy.wasm, fmt, lint, test, e2e-tests, clean); the rest are this
# project's. The first two commands of the README:
#
#   make             build policy.wasm and annotated-policy.wasm, run it on test_data/example/
#   make test-all    unit tests (policy crate and tools/), then e2e.bats on the compiled policy,
#                    on the stand-in and, when found, the real kwctl; bad-inputs.bats and
#                    release.bats
#
# Both work on a bare machine with rustup: the wasm32-wasip1 target is added to the pinned
# toolchain when it lacks it (scripts/ensure-wasm-target.sh), and bats is taken from PATH or
# installed (scripts/ensure-bats.sh: apt-get as root, else npm into .tools/).
#
# A real kwctl is used when scripts/find-kwctl.sh finds one ($KWCTL_REAL, `kwctl` on PATH,
# $SHARED_DIR/tools/kwctl, ../shared/tools/kwctl beside the checkout; KWCTL_REAL=none for
# none); otherwise the host tools in tools/ stand in for it: policy-annotate for
# `kwctl annotate`, replay-runner for `kwctl run` (README, "The stand-ins").

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := all

SOURCE_FILES := $(shell find src -type f 2>/dev/null)

# Where `policy.wasm` is built and copied to (scripts/check-reproducible.sh overrides both).
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
WASM_OUT ?= policy.wasm
WASM_NAME := tenant_reservation_policy.wasm

# No absolute path of the build machine may reach the module (panic locations name source
# files): the registry sources under CARGO_HOME and this checkout are remapped. Rust's own
# library paths are already /rustc/<commit>/... . RUSTFLAGS is set, not appended to, so that
# every release build uses exactly these flags.
CARGO_HOME_DIR := $(or $(CARGO_HOME),$(HOME)/.cargo)
WASM_RUSTFLAGS := --remap-path-prefix=$(CARGO_HOME_DIR)=/cargo --remap-path-prefix=$(CURDIR)=/src

KWCTL_BIN := $(shell bash scripts/find-kwctl.sh)
TOOLS_MANIFEST := tools/Cargo.toml
TOOLS_BIN := tools/target/release
POLICY_ANNOTATE := $(TOOLS_BIN)/policy-annotate
REPLAY_RUNNER := $(TOOLS_BIN)/replay-runner
QUESTIONS := deploy/questions-ui.yml

# `make e2e-tests` runs e2e.bats as kubewarden/rust-policy-template does: under the real kwctl
# when scripts/find-kwctl.sh finds one (its cluster-state tests are skipped there), otherwise on
# the stand-in, saying so in one line. `make e2e-stand-in` always runs it on the stand-in (which
# also answers the cluster-state tests); `make test-all` runs both.
STAND_IN := $(CURDIR)/$(REPLAY_RUNNER)
E2E_KWCTL ?= $(or $(KWCTL_BIN),$(STAND_IN))

EXAMPLE_DIR := test_data/example

.PHONY: all
all: run-example

policy.wasm: $(SOURCE_FILES) Cargo.toml Cargo.lock rust-toolchain.toml | wasm-target
	RUSTFLAGS="$(WASM_RUSTFLAGS)" cargo build --target=wasm32-wasip1 --release --locked --target-dir "$(TARGET_DIR)"
	cp "$(TARGET_DIR)/wasm32-wasip1/release/$(WASM_NAME)" "$(WASM_OUT)"

# The pinned toolchain's wasm32-wasip1 target (a no-op when it is installed).
.PHONY: wasm-target
wasm-target:
	@bash scripts/ensure-wasm-target.sh wasm32-wasip1

annotated-policy.wasm: policy.wasm metadata.yml
ifneq ($(KWCTL_BIN),)
	"$(KWCTL_BIN)" annotate -m metadata.yml -o annotated-policy.wasm policy.wasm
else
	$(MAKE) --no-print-directory policy-annotate
	$(POLICY_ANNOTATE) annotate -m metadata.yml -o annotated-policy.wasm policy.wasm
endif

# artifacthub-pkg.yml as `kwctl scaffold artifacthub` writes it (a new createdAt each time).
# Only kwctl writes it; without one, `scripts/check-versions.sh` (policy-annotate check) says
# whether the committed file is still what kwctl would write, and what differs.
.PHONY: artifacthub-pkg.yml
artifacthub-pkg.yml:
ifneq ($(KWCTL_BIN),)
	"$(KWCTL_BIN)" scaffold artifacthub --metadata-path metadata.yml --questions-path $(QUESTIONS) --output artifacthub-pkg.yml
else
	@echo "artifacthub-pkg.yml: needs kwctl (KWCTL_REAL, PATH, ../shared/tools/kwctl); scripts/check-versions.sh checks the committed file without it" >&2; exit 1
endif

# Host tools, built once in release (replay-runner embeds wasmtime: the first build is slow),
# every member at once so that they and `make test` share one build of their dependencies
# (scripts/build-tools.sh says why).
.PHONY: tools policy-annotate replay-runner
tools:
	bash scripts/build-tools.sh
policy-annotate replay-runner: tools

# `kwctl run` has no --cluster-state (it replays recorded sessions instead), so the example
# always runs on the replay-runner; EXAMPLE_RUNNER overrides it.
EXAMPLE_RUNNER ?= $(REPLAY_RUNNER)
.PHONY: run-example
run-example: annotated-policy.wasm
	@if [ "$(EXAMPLE_RUNNER)" = "$(REPLAY_RUNNER)" ]; then $(MAKE) --no-print-directory replay-runner; fi
	$(EXAMPLE_RUNNER) run \
		--request-path $(EXAMPLE_DIR)/request.json \
		$(if $(wildcard $(EXAMPLE_DIR)/settings.json),--settings-path $(EXAMPLE_DIR)/settings.json) \
		--cluster-state $(EXAMPLE_DIR)/cluster.yaml \
		--allow-context-aware \
		annotated-policy.wasm

# The pool ledger (tools/ledger, `tenant-reservation ledger`) of the example's cluster: every
# pool and key, its budget, carve-outs, reservations, headroom and largest holders, on the
# policy's own evaluation compiled natively.
LEDGER := $(TOOLS_BIN)/tenant-reservation
.PHONY: ledger
ledger:
	bash scripts/build-tools.sh
	$(LEDGER) ledger --state $(EXAMPLE_DIR)/cluster.yaml \
		$(if $(wildcard $(EXAMPLE_DIR)/settings.json),--settings $(EXAMPLE_DIR)/settings.json)

.PHONY: fmt
fmt:
	cargo fmt --all
	cargo fmt --all --manifest-path $(TOOLS_MANIFEST)

.PHONY: check
check:
	cargo fmt --all -- --check
	cargo fmt --all --manifest-path $(TOOLS_MANIFEST) -- --check

.PHONY: lint
lint: wasm-target
	cargo clippy --locked --all-targets -- -D warnings
	cargo clippy --locked --target wasm32-wasip1 --lib -- -D warnings
	cargo clippy --manifest-path $(TOOLS_MANIFEST) --workspace --all-targets -- -D warnings

# Tools tests run in release so they share the release build of wasmtime with the binaries
# (scripts/build-tools.sh selects the same packages and targets).
# replay-runner's tests build policy.wasm themselves, hence the wasm32-wasip1 target.
.PHONY: test
test: wasm-target
	cargo test --locked
	cargo test --release --locked --manifest-path $(TOOLS_MANIFEST) --workspace

# bad-inputs.bats answers lookups from a cluster state, a replay-runner feature, so it always
# runs on the stand-in.
.PHONY: e2e-tests
e2e-tests: annotated-policy.wasm
	@if [ "$(E2E_KWCTL)" = "$(STAND_IN)" ]; then \
		echo "e2e-tests: no real kwctl found (KWCTL_REAL, PATH, \$$SHARED_DIR/tools, ../shared/tools): e2e.bats runs on the stand-in tools/replay-runner"; \
		$(MAKE) --no-print-directory replay-runner; \
	else echo "e2e-tests: e2e.bats under $(E2E_KWCTL)"; fi
	bats=$$(bash scripts/ensure-bats.sh); \
	KWCTL="$(E2E_KWCTL)" "$$bats" e2e.bats
	$(MAKE) --no-print-directory bad-inputs

.PHONY: bad-inputs
bad-inputs: annotated-policy.wasm replay-runner
	bats=$$(bash scripts/ensure-bats.sh); \
	KWCTL="$(STAND_IN)" POLICY="$(CURDIR)/policy.wasm" "$$bats" bad-inputs.bats

# e2e.bats on the stand-in (tools/replay-runner), whatever kwctl is installed: its cluster-state
# tests run only there.
.PHONY: e2e-stand-in
e2e-stand-in: annotated-policy.wasm replay-runner
	bats=$$(bash scripts/ensure-bats.sh); KWCTL="$(STAND_IN)" "$$bats" e2e.bats

# e2e.bats under the real kwctl (`kwctl run --replay-host-capabilities-interactions` on each
# scenario's recorded session; its cluster-state tests are skipped there), when one is found.
.PHONY: e2e-kwctl
e2e-kwctl: annotated-policy.wasm
ifeq ($(KWCTL_BIN),)
	@echo "e2e-kwctl: no real kwctl found (KWCTL_REAL, PATH, \$$SHARED_DIR/tools, ../shared/tools): skipped"
else
	bats=$$(bash scripts/ensure-bats.sh); KWCTL="$(KWCTL_BIN)" "$$bats" e2e.bats
endif

# Every cluster state of test_data/ against the real CRDs on a real control plane (skipped,
# with one line, where etcd, kube-apiserver or kubectl are absent).
.PHONY: check-cluster-states
check-cluster-states:
	bash scripts/check-cluster-states.sh

.PHONY: test-all
# Each bats file once per runner: e2e.bats on the stand-in and under the real kwctl (when
# found), bad-inputs.bats, release.bats.
test-all: test e2e-stand-in e2e-kwctl bad-inputs release-test

# release.bats: the scripts release.yml's jobs call (plugin archives for every platform,
# checksums, the krew manifest, the identity check, the workflows' lint), with stand-in binaries.
.PHONY: release-test
release-test:
	bats=$$(bash scripts/ensure-bats.sh); "$$bats" release.bats

.PHONY: check-versions
check-versions:
	bash scripts/check-versions.sh

# Every variant of the kustomize install renders and a real kube-apiserver with the real
# Kubewarden CRDs accepts it (server-side part skipped when no etcd/kube-apiserver is found).
.PHONY: check-install
check-install:
	bash scripts/check-install.sh

.PHONY: reproducible
reproducible:
	bash scripts/check-reproducible.sh

.PHONY: sessions
sessions:
	bash scripts/record-sessions.sh

# The policy in the real engine: kwctl (live) and policy-server 1.36 against a real control
# plane (scripts/cluster/control-plane.sh) holding generated clusters (`bench --dump`): pools of
# 20 and 1,000 applications in a 1,000-application cluster, 10,000 in a 10,000 one. Prints cold
# (kwctl, fresh policy-server) and warm p50/p99, writes/s (pool of 20), HelmRelease watches
# (reflectors) and API requests of the cold request, policy-server's RSS; asserts no time.
# BENCH_CLUSTER_MODULES adds modules to compare (`name=annotated.wasm ...`). Needs python3
# with requests; about 12 minutes.
BENCH_CLUSTER_DIR ?= $(or $(TMPDIR),/tmp)/bench-cluster
BENCH_CLUSTER_MODULES ?=
.PHONY: bench-cluster
bench-cluster: annotated-policy.wasm
	bash scripts/build-tools.sh
	rm -rf "$(BENCH_CLUSTER_DIR)/dump"
	$(TOOLS_BIN)/bench --dump "$(BENCH_CLUSTER_DIR)/dump" --clusters 1000 --pools 20,1000 --variants same
	$(TOOLS_BIN)/bench --dump "$(BENCH_CLUSTER_DIR)/dump" --clusters 10000 --pools 10000 --variants same
	python3 scripts/cluster/bench_cluster.py --dump "$(BENCH_CLUSTER_DIR)/dump" --work "$(BENCH_CLUSTER_DIR)" \
		$(foreach m,$(BENCH_CLUSTER_MODULES),--module $(m)) --module current=$(CURDIR)/annotated-policy.wasm \
		--json "$(BENCH_CLUSTER_DIR)/figures.json"

# The admission benchmark (README, Performance). BENCH_ARGS=--fail-on-miss makes a modelled
# target that misses exit 3 (after the report and the plot); not the default, since README
# records misses on the reference machine and timings vary. No CI job runs it.
BENCH_ARGS ?=
.PHONY: bench
bench: policy.wasm
	bash scripts/build-tools.sh
	$(TOOLS_BIN)/bench --policy policy.wasm --svg docs/bench.svg $(BENCH_ARGS)

# The fuzz targets of fuzz/ (cargo-fuzz), each run for a bounded time by scripts/fuzz.sh.
.PHONY: fuzz
fuzz:
	@if [ -f scripts/fuzz.sh ]; then bash scripts/fuzz.sh; else echo "fuzz: there is no scripts/fuzz.sh yet, nothing to run"; fi

.PHONY: oci-roundtrip
oci-roundtrip: annotated-policy.wasm
	bash scripts/oci-roundtrip.sh

# signatures.bats: the module pushed to a local registry and signed with a test key (cosign's
# format), then kwctl verify and policy-server's verification config accept it and refuse an
# unsigned or otherwise-signed one. Needs a real kwctl and policy-server.
.PHONY: signature-test
signature-test: annotated-policy.wasm
	bats=$$(bash scripts/ensure-bats.sh); "$$bats" signatures.bats

.PHONY: clean
clean:
	cargo clean
	cargo clean --manifest-path $(TOOLS_MANIFEST)
	rm -f policy.wasm annotated-policy.wasm

# cluster.bats: the policy in the real engine (kube-apiserver, the real CRDs, the real
# policy-server configured from deploy/, writes through kubectl); needs the binaries that
# scripts/cluster/control-plane.sh check and scripts/cluster/find-tool.sh policy-server find.
.PHONY: cluster-test
cluster-test: annotated-policy.wasm
	cargo build --release --locked --manifest-path $(TOOLS_MANIFEST) -p ledger
	bats=$$(bash scripts/ensure-bats.sh); LEDGER=$(CURDIR)/$(LEDGER) "$$bats" cluster.bats

# kubectl cozystack-reservations against a real API server (plugin.bats): built as it ships
# (`-p ledger` alone: no wasmtime), found by kubectl on PATH.
.PHONY: plugin-test
plugin-test:
	cargo build --release --locked --manifest-path $(TOOLS_MANIFEST) -p ledger
	bats=$$(bash scripts/ensure-bats.sh); PLUGIN_DIR=$(CURDIR)/tools/target/release "$$bats" plugin.bats

# scripts/cluster/concurrency.sh: concurrent writes into one pool on the real engine (docs/real-engine.md).
.PHONY: cluster-concurrency
cluster-concurrency: annotated-policy.wasm
	bash scripts/cluster/concurrency.sh

# fault.bats: faults in the real engine (policy-server killed mid-burst, kube-apiserver and etcd
# restarted, the ServiceAccount's permission removed, a slow API server, an unreadable stored
# release); figures on fd 3 (docs/threat-model.md, "Faults"); each pool's final state checked by
# the ledger (built with every tool: scripts/build-tools.sh says why). Skipped, in one line,
# where the engine's binaries are absent.
.PHONY: fault-test
fault-test: annotated-policy.wasm
	@if why=$$(bash scripts/cluster/control-plane.sh check) && [ -n "$$(bash scripts/cluster/find-tool.sh policy-server 2>/dev/null)" ]; then \
		bash scripts/build-tools.sh && \
		bats=$$(bash scripts/ensure-bats.sh) && LEDGER=$(CURDIR)/$(LEDGER) "$$bats" fault.bats; \
	else \
		echo "skipping make fault-test: $${why:-no policy-server (\$$POLICY_SERVER, PATH, ../shared/tools)}"; \
	fi

# scripts/cluster/cold-burst.sh: N = 2, 8, 32 writes at once into one pool of COLD_APPS (10000)
# applications on a fresh policy-server: the HelmRelease LISTs and watches the API server sees,
# reflectors, RSS.
.PHONY: cold-burst
cold-burst: annotated-policy.wasm
	bash scripts/cluster/cold-burst.sh

# scripts/cluster/soak.sh: SOAK_MINUTES (20) at half the measured throughput, tenants created
# and deleted throughout; policy-server RSS, reflectors and watches over time, every pool checked
# by the ledger at the end. Not part of .ci/run.
SOAK_MINUTES ?= 20
.PHONY: soak
soak: annotated-policy.wasm
	bash scripts/build-tools.sh
	LEDGER=$(CURDIR)/$(LEDGER) bash scripts/cluster/soak.sh $(SOAK_MINUTES)
