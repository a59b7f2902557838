#!/usr/bin/env bash
# The OCI path, end to end, on this machine: the way a release reaches a policy server.
#
#   1. starts Debian's docker-registry (installed with apt-get when missing) on a free port of
#      127.0.0.1, with a temporary config and storage directory, stopped again on exit;
#   2. `kwctl push`es annotated-policy.wasm to registry://127.0.0.1:<port>/cozystack/policies/
#      tenant-reservation:v<version>;
#   3. `kwctl pull`s it back (into a temporary Kubewarden store, and to a file that must be
#      byte-identical to what was pushed);
#   4. runs e2e scenarios from registry://... by digest with `kwctl run` and their recorded
#      sessions (--replay-host-capabilities-interactions, as e2e.bats does), checking the verdicts.
#
# The registry speaks plain HTTP: kwctl is told so with --sources-path, a sources.yaml whose
# insecure_sources lists 127.0.0.1:<port> (policy-fetcher's Sources; the same format as a
# PolicyServer's spec.insecureSources).
#
# Usage: scripts/oci-roundtrip.sh [POLICY]   (default annotated-policy.wasm; make oci-roundtrip)
# Needs a real kwctl (scripts/find-kwctl.sh: KWCTL_REAL, PATH, ../shared/tools/kwctl).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/portable.sh
source "$root/scripts/portable.sh"

policy=${1:-annotated-policy.wasm}
kwctl=$(bash scripts/find-kwctl.sh)
if [ -z "$kwctl" ]; then
    echo "oci-roundtrip: needs a real kwctl (set KWCTL_REAL, put kwctl on PATH, or ../shared/tools/kwctl)" >&2
    exit 1
fi
[ -f "$policy" ] || { echo "oci-roundtrip: $policy is missing (make annotated-policy.wasm)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/oci-roundtrip.XXXXXX")
cleanup() {
    bash scripts/local-registry.sh stop "$work/registry" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# A plain-HTTP registry on a free loopback port (scripts/local-registry.sh: Debian's
# docker-registry); $work/registry/sources.yaml names it as an insecure source.
port=$(bash scripts/local-registry.sh start "$work/registry")
echo "oci-roundtrip: registry on 127.0.0.1:$port"
cp "$work/registry/sources.yaml" "$work/sources.yaml"
# kwctl's store (pulled policies) and wasmtime cache go to the temporary directory.
export XDG_CACHE_HOME="$work/cache"

version=$(awk -F'"' '/^version *=/{print $2; exit}' Cargo.toml)
ref="registry://127.0.0.1:$port/cozystack/policies/tenant-reservation:v$version"

echo "== kwctl push $policy $ref"
# kwctl logs the plain-HTTP fallback (INFO) and its warnings on stderr: show the warnings.
warnings_of() { sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -E ' (WARN|ERROR) ' | sed 's/^/   kwctl: /' || true; }
push_json=$("$kwctl" push --sources-path "$work/sources.yaml" -o json "$policy" "$ref" 2>"$work/push.err") || {
    cat "$work/push.err" >&2
    echo "oci-roundtrip: FAIL: kwctl push" >&2
    exit 1
}
warnings_of "$work/push.err"
echo "   $push_json"
immutable=$(sed -n 's/.*"immutable_ref": *"\([^"]*\)".*/\1/p' <<<"$push_json")
[ -n "$immutable" ] || { echo "oci-roundtrip: FAIL: kwctl push gave no immutable_ref" >&2; exit 1; }
digest_ref="registry://${immutable#registry://}"

echo "== kwctl pull $ref"
for args in "$ref" "-o $work/pulled.wasm $digest_ref"; do
    # shellcheck disable=SC2086 # two words on purpose
    "$kwctl" pull --sources-path "$work/sources.yaml" $args 2>"$work/pull.err" || {
        cat "$work/pull.err" >&2
        echo "oci-roundtrip: FAIL: kwctl pull $args" >&2
        exit 1
    }
    warnings_of "$work/pull.err"
done
want=$(sha256_of "$policy")
have=$(sha256_of "$work/pulled.wasm")
if [ "$want" != "$have" ]; then
    echo "oci-roundtrip: FAIL: the pulled module ($have) is not the pushed one ($want)" >&2
    exit 1
fi
echo "   pulled $digest_ref: sha256 $have, the pushed bytes"
"$kwctl" policies | grep -F "127.0.0.1:$port" >/dev/null ||
    { echo "oci-roundtrip: FAIL: the pulled policy is not in the kwctl store" >&2; exit 1; }

# scenario, expected "allowed", a fragment of the message
check() {
    local scenario=$1 allowed=$2 fragment=$3 dir="test_data/scenarios/$1" out
    echo "== kwctl run $digest_ref ($scenario)"
    out=$("$kwctl" run --sources-path "$work/sources.yaml" \
        --request-path "$dir/request.json" \
        --settings-path "$dir/settings.json" \
        --allow-context-aware \
        --replay-host-capabilities-interactions "$dir/session.yml" \
        "$digest_ref" 2>"$work/run.stderr") || {
        cat "$work/run.stderr" >&2
        echo "oci-roundtrip: FAIL: kwctl run of $scenario failed" >&2
        exit 1
    }
    echo "   $out"
    if ! grep -Eq "\"allowed\": *$allowed[,}]" <<<"$out" || ! grep -Fq -- "$fragment" <<<"$out"; then
        echo "oci-roundtrip: FAIL: $scenario: expected allowed=$allowed and a message with: $fragment" >&2
        exit 1
    fi
}
# The verdicts, and that the rejection names the pool (the exact messages are e2e.bats' to check).
check 02-vm-create-exceeds false "tenant-foo"
check 01-vm-create-fits true '"uid"'

echo "oci-roundtrip: OK: pushed, pulled (byte-identical) and run from $digest_ref"
