#!/usr/bin/env bash
# Two clean builds of policy.wasm must be byte-identical.
#
# One snapshot of this checkout's sources (uncommitted edits included) is unpacked twice:
# Build A: at one path, into a fresh target directory, with this CARGO_HOME.
# Build B: at another path, into another fresh target directory, with another CARGO_HOME
#          (sharing this one's downloaded registry, so no network).
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

# A snapshot, so that both builds read the same bytes even while the checkout is being edited.
tar -C "$root" \
    --exclude=./target --exclude=./tools/target --exclude=./fuzz/target --exclude=./.git \
    --exclude=./policy.wasm --exclude=./annotated-policy.wasm \
    -cf "$work/sources.tar" .
mkdir -p "$work/src-a" "$work/nested/path/src-b"
tar -C "$work/src-a" -xf "$work/sources.tar"
tar -C "$work/nested/path/src-b" -xf "$work/sources.tar"

cargo_home=${CARGO_HOME:-$HOME/.cargo}
mkdir -p "$work/cargo-home-b"
[ -d "$cargo_home/registry" ] && ln -s "$cargo_home/registry" "$work/cargo-home-b/registry"
[ -d "$cargo_home/git" ] && ln -s "$cargo_home/git" "$work/cargo-home-b/git"

build() { # <source dir> <target dir> <output> <cargo home>
    CARGO_HOME="$4" make --no-print-directory -B -C "$1" policy.wasm \
        TARGET_DIR="$2" WASM_OUT="$3" >"$2.log" 2>&1
}

# The two builds run side by side: most of each is the single-threaded LTO step.
echo "== clean build A: $work/src-a, target dir $work/target-a, CARGO_HOME $cargo_home"
echo "== clean build B: $work/nested/path/src-b, target dir $work/target-b, CARGO_HOME $work/cargo-home-b"
start=$SECONDS
build "$work/src-a" "$work/target-a" "$work/a.wasm" "$cargo_home" & pid_a=$!
build "$work/nested/path/src-b" "$work/target-b" "$work/b.wasm" "$work/cargo-home-b" & pid_b=$!
failed=0
wait $pid_a || { cat "$work/target-a.log"; echo "check-reproducible: build A failed" >&2; failed=1; }
wait $pid_b || { cat "$work/target-b.log"; echo "check-reproducible: build B failed" >&2; failed=1; }
[ $failed -eq 0 ] || exit 1
echo "   both done in $((SECONDS - start))s"

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
    echo "check-reproducible: OK: two clean builds are byte-identical, no build paths in the module"
fi
exit $status
