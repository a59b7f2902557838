#!/usr/bin/env bash
# Builds every cargo-fuzz target of fuzz/ and runs each for a bounded time; exits non-zero if
# any target crashes (a panic, a failed invariant, a stack overflow, a timeout, an OOM).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      default 20: about a minute for the three targets
#
# Works on the stable toolchain of rust-toolchain.toml: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass
# its nightly flags (-Zsanitizer=address) to it. Installs cargo-fuzz when it is missing; also
# needs a C++ compiler (libfuzzer-sys builds libFuzzer), as on any machine with build-essential.
# The first build takes several minutes (the dependency tree is large); later ones seconds.
#
# Environment:
#   FUZZ_SANITIZER     none (default: the policy and its inputs are safe Rust, and this runs
#                      about six times as many inputs) or address (AddressSanitizer)
#   FUZZ_JOBS          parallel fuzzing jobs per target (default 1)
#   FUZZ_TARGETS       the targets to run (default: all, from `cargo fuzz list`)
#
# New inputs found go to a scratch corpus, not to the committed seeds in fuzz/corpus/<target>/;
# a crash is saved under fuzz/artifacts/<target>/ and reproduced with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz <target> fuzz/artifacts/<target>/<file>

set -euo pipefail

seconds=${1:-20}
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || {
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
}
cd "$(dirname "$0")/.."
root=$PWD

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi
command -v c++ >/dev/null || {
    echo "fuzz.sh: a C++ compiler is needed to build libFuzzer (apt-get install g++)" >&2
    exit 1
}

export RUSTC_BOOTSTRAP=1
sanitizer=${FUZZ_SANITIZER:-none}
jobs=${FUZZ_JOBS:-1}
# Debug assertions and overflow checks are on in every build (cargo-fuzz's default). 16 codegen
# units: a shorter first build for a few per cent of speed.
build_flags=(--fuzz-dir fuzz --sanitizer "$sanitizer" --debug-assertions --codegen-units 16)

read -r -a targets <<<"${FUZZ_TARGETS:-$(cargo fuzz list --fuzz-dir fuzz | tr '\n' ' ')}"
echo "fuzz.sh: building ${targets[*]} (sanitizer: $sanitizer)" >&2
cargo fuzz build "${build_flags[@]}"

parallel=()
if [ "$jobs" -gt 1 ]; then
    parallel=(-jobs="$jobs" -workers="$jobs")
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=()
summary=()
for target in "${targets[@]}"; do
    mkdir -p "$scratch/$target" "fuzz/corpus/$target" "fuzz/artifacts/$target"
    log="$scratch/$target.log"
    echo "fuzz.sh: $target for ${seconds}s" >&2
    status=0
    # The first corpus directory receives new inputs: the scratch one. max_len covers the
    # largest seed (a chart's values); -timeout turns a pathologically slow input into a crash.
    cargo fuzz run "${build_flags[@]}" "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        "${parallel[@]}" -print_final_stats=1 \
        -artifact_prefix="$root/fuzz/artifacts/$target/" >"$log" 2>&1 || status=$?
    # With -jobs, each job's statistics are in fuzz-<n>.log (in the fuzz directory).
    logs=("$log")
    for extra in fuzz/fuzz-*.log fuzz-*.log; do
        if [ -f "$extra" ]; then logs+=("$extra"); fi
    done
    execs=$(awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}' "${logs[@]}")
    rate=$(awk '/stat::average_exec_per_sec/ {s += $2} END {print s + 0}' "${logs[@]}")
    rm -f fuzz/fuzz-*.log fuzz-*.log
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        summary+=("$(printf '%-10s CRASH  %10s execs  %8s exec/s' "$target" "$execs" "$rate")")
        echo "fuzz.sh: $target failed (exit $status):" >&2
        grep -E -A 30 'panicked|ERROR: libFuzzer|==ERROR|SUMMARY' "$log" | head -60 >&2 || tail -40 "$log" >&2
        ls -1 "fuzz/artifacts/$target" >&2 || true
    else
        summary+=("$(printf '%-10s ok     %10s execs  %8s exec/s' "$target" "$execs" "$rate")")
    fi
done

printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz.sh: crashes in: ${failed[*]}" >&2
    exit 1
fi
