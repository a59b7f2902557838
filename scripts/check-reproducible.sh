#!/usr/bin/env bash
# Two builds of policy.wasm must be byte-identical.
#
# Build A: this checkout's own `make policy.wasm` (its target directory and CARGO_HOME; clean on
#          a fresh clone, as in CI). Later steps use this module, so the check costs one build.
# Build B: a snapshot of this checkout's sources (uncommitted edits included), unpacked at
#          another path, built into a fresh target directory with another CARGO_HOME (sharing
#          this one's downloaded registry, so no network).
# Both go through `make policy.wasm` (so with the release workflow's exact flags: --locked, the
# pinned toolchain, the path remapping). The script prints both sha256s and fails when they
# differ, or when an absolute path of the build machine is left in the module.
#
# Usage: scripts/check-reproducible.sh [KEEP_DIR]   (KEEP_DIR keeps the two modules)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/portable.sh
source "$root/scripts/portable.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/repro.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A snapshot of the sources for build B.
tar -C "$root" \
    --exclude=./target --exclude=./tools/target --exclude=./fuzz/target --exclude=./.git \
    --exclude=./policy.wasm --exclude=./annotated-policy.wasm \
    -cf "$work/sources.tar" .
mkdir -p "$work/nested/path/src-b"
tar -C "$work/nested/path/src-b" -xf "$work/sources.tar"

cargo_home=${CARGO_HOME:-$HOME/.cargo}
mkdir -p "$work/cargo-home-b"
[ -d "$cargo_home/registry" ] && ln -s "$cargo_home/registry" "$work/cargo-home-b/registry"
[ -d "$cargo_home/git" ] && ln -s "$cargo_home/git" "$work/cargo-home-b/git"

# The two builds run side by side: most of each is the single-threaded LTO step.
echo "== build A: $root (make policy.wasm), CARGO_HOME $cargo_home"
echo "== clean build B: $work/nested/path/src-b, target dir $work/target-b, CARGO_HOME $work/cargo-home-b"
start=$SECONDS
make --no-print-directory -C "$root" policy.wasm >"$work/build-a.log" 2>&1 & pid_a=$!
CARGO_HOME="$work/cargo-home-b" make --no-print-directory -B -C "$work/nested/path/src-b" policy.wasm \
    TARGET_DIR="$work/target-b" WASM_OUT="$work/b.wasm" >"$work/build-b.log" 2>&1 & pid_b=$!
failed=0
wait $pid_a || { cat "$work/build-a.log"; echo "check-reproducible: build A failed" >&2; failed=1; }
wait $pid_b || { cat "$work/build-b.log"; echo "check-reproducible: build B failed" >&2; failed=1; }
[ $failed -eq 0 ] || exit 1
echo "   both done in $((SECONDS - start))s"
cp "$root/policy.wasm" "$work/a.wasm"

sha_a=$(sha256_of "$work/a.wasm")
sha_b=$(sha256_of "$work/b.wasm")
echo "build A  $sha_a  ($(size_of "$work/a.wasm") bytes)"
echo "build B  $sha_b  ($(size_of "$work/b.wasm") bytes)"

if [ $# -ge 1 ]; then
    mkdir -p "$1"
    cp "$work/a.wasm" "$1/policy-a.wasm"
    cp "$work/b.wasm" "$1/policy-b.wasm"
fi

status=0
if [ "$sha_a" != "$sha_b" ]; then
    echo "check-reproducible: FAIL: the two builds differ" >&2
    cmp -l "$work/a.wasm" "$work/b.wasm" | head -5 >&2 || true
    status=1
fi

# Absolute paths of this machine that must not be in the module.
for leak in "$root" "$work" "$cargo_home" "$HOME/.rustup"; do
    if grep -a -F -q -- "$leak" "$work/a.wasm" "$work/b.wasm"; then
        echo "check-reproducible: FAIL: the module contains the build path $leak" >&2
        status=1
    fi
done

if [ $status -eq 0 ]; then
    echo "check-reproducible: OK: the two builds are byte-identical, no build paths in the module"
fi
exit $status
