#!/usr/bin/env bash
# Regenerates the e2e scenarios and records each one's kwctl session.
#
#   scripts/record-sessions.sh          (make sessions)
#
# 1. builds the policy (or takes a fresh policy.wasm / annotated-policy.wasm made by make,
#    or $POLICY) and the replay-runner (or $REPLAY_RUNNER);
# 2. regenerates test_data/scenarios/ and test_data/example/ with examples/scenarios.rs;
# 3. runs each scenario on the runner with its lookups answered from cluster.yaml, recording
#    them as session.yml, the kwctl session e2e.bats replays (under kwctl or the runner).
#
# A scenario whose settings the policy refuses makes no host call (settings are validated
# first): its session is empty. Any other failure stops the script.
# scripts/check-sessions.sh runs this and fails if any file changed.

set -euo pipefail
cd "$(dirname "$0")/.."

SCENARIOS=test_data/scenarios
EXAMPLE=test_data/example

# Whether $1 exists and is newer than every input of the policy build.
fresh() {
    [ -f "$1" ] || return 1
    [ -z "$(find src Cargo.toml Cargo.lock rust-toolchain.toml metadata.yml -newer "$1" -print -quit 2>/dev/null)" ]
}

if [ -n "${POLICY:-}" ]; then
    policy=$POLICY
elif fresh annotated-policy.wasm; then
    policy=annotated-policy.wasm
elif fresh policy.wasm; then
    policy=policy.wasm
else
    # Through make: the release flags of every other build, so the build is made once.
    echo "record-sessions: building the policy" >&2
    make --no-print-directory policy.wasm >&2
    policy=policy.wasm
fi

if [ -n "${REPLAY_RUNNER:-}" ]; then
    runner=$REPLAY_RUNNER
else
    echo "record-sessions: building the replay-runner" >&2
    bash scripts/build-tools.sh
    runner=tools/target/release/replay-runner
fi

echo "record-sessions: generating the scenarios" >&2
cargo run -q --example scenarios -- "$SCENARIOS" "$EXAMPLE"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Records the session of the scenario in directory $1.
record() {
    local dir=$1
    if "$runner" run \
        --request-path "$dir/request.json" \
        --settings-path "$dir/settings.json" \
        --allow-context-aware \
        --cluster-state "$dir/cluster.yaml" \
        --record-host-capabilities-interactions "$scratch/session.yml" \
        "$policy" >"$scratch/stdout" 2>"$scratch/stderr"; then
        mv "$scratch/session.yml" "$dir/session.yml"
        printf '%s: %s\n' "$dir" "$(cat "$scratch/stdout")"
    elif grep -q 'Provided settings are not valid' "$scratch/stderr"; then
        printf '[]\n' >"$dir/session.yml"
        printf '%s: settings refused, empty session: %s\n' "$dir" "$(grep -m 1 'Provided settings are not valid' "$scratch/stderr")"
    else
        echo "record-sessions: $dir failed:" >&2
        cat "$scratch/stderr" >&2
        return 1
    fi
}

count=0
for dir in "$SCENARIOS"/*/ "$EXAMPLE"/; do
    record "${dir%/}"
    count=$((count + 1))
done
echo "record-sessions: $count sessions recorded with $policy" >&2
