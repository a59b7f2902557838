#!/usr/bin/env bash
# Builds the host tools of tools/ (release): every member and every target, always with the
# same selection, so that every build of them shares one feature set.
#
# cargo unifies a dependency's features over the packages a command selects: `-p replay-runner`
# alone, `-p policy-annotate` alone and `cargo test --workspace` each resolved wasmtime's
# dependencies (serde_json, tokio, futures-util, object, ...) differently, so a cold CI built
# wasmtime in release twice (8-12 minutes each on 2 CPUs). Built this way, the binaries and
# `cargo test --release --workspace` (make test) share every dependency.
#
# The kubectl plugin is the one exception: it ships built alone (`-p ledger`, no wasmtime), and
# plugin.bats and the release workflow build it so.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec cargo build --release --locked --manifest-path tools/Cargo.toml --workspace --all-targets "$@"
