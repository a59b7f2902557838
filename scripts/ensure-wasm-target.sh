#!/usr/bin/env bash
# Adds the wasm32-wasip1 target to the toolchain rust-toolchain.toml selects, when it lacks it.
#
# rustup installs the `targets` of rust-toolchain.toml only when it installs the toolchain
# itself: a machine that already has 1.95.0 (host target only) builds policy.wasm with
# "can't find crate for `core`". The check is one `rustc --print` (no network, no rustup
# lock): the target's library directory exists once the target is installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

target=${1:-wasm32-wasip1}
libdir=$(rustc --print target-libdir --target "$target" 2>/dev/null || true)
if [ -n "$libdir" ] && compgen -G "$libdir/libcore-*.rlib" >/dev/null; then
    exit 0
fi
echo "ensure-wasm-target: $(rustc --version) has no $target target; running rustup target add $target" >&2
if ! command -v rustup >/dev/null 2>&1; then
    echo "ensure-wasm-target: install the $target target of $(rustc --version) (rustup is not on PATH)" >&2
    exit 1
fi
rustup target add "$target" >&2
