#!/usr/bin/env bash
# tools/policy-annotate stands in for `kwctl annotate` where there is no kwctl, and checks the
# committed artifacthub-pkg.yml against what `kwctl scaffold artifacthub` writes; this checks
# that both still agree with the real kwctl:
#   - annotate: the io.kubewarden.metadata section byte for byte, less the
#     `io.kubewarden.kwctl: <version>` annotation only kwctl writes (policy-annotate never claims
#     to be kwctl), then the module before that section (both append it last); a module that
#     differs only in the producers section's walrus version (kwctl 1.35 links walrus 0.26.1,
#     like policy-annotate; 1.36 links 0.26.2) is reported, not failed;
#   - scaffold artifacthub: `policy-annotate check` accepts kwctl's file as written, layout
#     included.
# Needs a real kwctl (scripts/find-kwctl.sh) and policy.wasm; `make` builds it.
set -euo pipefail
export LC_ALL=C # byte-wise sed and grep over the modules
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/portable.sh
source "$root/scripts/portable.sh"

kwctl=$(bash scripts/find-kwctl.sh)
[ -n "$kwctl" ] || { echo "check-kwctl-parity: no real kwctl found: nothing to compare"; exit 0; }
[ -f policy.wasm ] || { echo "check-kwctl-parity: policy.wasm is missing (make policy.wasm)" >&2; exit 1; }
bash scripts/build-tools.sh --quiet
pa=tools/target/release/policy-annotate

work=$(mktemp -d "${TMPDIR:-/tmp}/kwctl-parity.XXXXXX")
trap 'rm -rf "$work"' EXIT
version=$("$kwctl" --version | awk 'NR == 1 {print $2}')
echo "kwctl $version ($kwctl)"
status=0

# kwctl logs its warnings (undeclared host capabilities, ...) on stderr: there must be none.
"$kwctl" annotate -m metadata.yml -o "$work/kwctl.wasm" policy.wasm 2>"$work/annotate.err"
if [ -s "$work/annotate.err" ]; then
    echo "FAIL: kwctl annotate warned about metadata.yml:"
    sed 's/\x1b\[[0-9;]*m//g' "$work/annotate.err"
    status=1
fi
"$pa" annotate -m metadata.yml -o "$work/pa.wasm" policy.wasm
"$pa" inspect --raw "$work/kwctl.wasm" >"$work/kwctl.json"
"$pa" inspect --raw "$work/pa.wasm" >"$work/pa.json"
# kwctl's own annotation, `"io.kubewarden.kwctl":"V",` (annotations are sorted: the
# io.kubewarden.policy.* ones follow it), taken out of its section.
claim="\"io.kubewarden.kwctl\":\"$version\","
kwctl_json=$(<"$work/kwctl.json")
printf '%s' "${kwctl_json/"$claim"/}" >"$work/kwctl-less.json"
if ! grep -q -F "$claim" "$work/kwctl.json"; then
    echo "FAIL: annotate: kwctl's section has no $claim"
    status=1
elif cmp -s "$work/kwctl-less.json" "$work/pa.json"; then
    echo "ok: annotate: the io.kubewarden.metadata sections are byte-identical but for kwctl's $claim ($(size_of "$work/pa.json") bytes)"
else
    echo "FAIL: annotate: the io.kubewarden.metadata sections differ (beyond kwctl's $claim):"
    diff <(tr ',' '\n' <"$work/kwctl-less.json") <(tr ',' '\n' <"$work/pa.json") | head -20 || true
    status=1
fi

# The bytes of a module before its last section, the io.kubewarden.metadata one: its id (1 byte),
# its LEB128 size, the name's length (1 byte) and name (22 bytes), then the JSON ($2).
before_section() {
    local size leb total
    size=$((1 + 22 + $(wc -c <"$2")))
    leb=1
    [ "$size" -lt 128 ] || leb=2
    [ "$size" -lt 16384 ] || leb=3
    [ "$size" -lt 2097152 ] || leb=4
    total=$(wc -c <"$1")
    head -c $((total - 1 - leb - size)) "$1"
}
before_section "$work/kwctl.wasm" "$work/kwctl.json" >"$work/kwctl.body"
before_section "$work/pa.wasm" "$work/pa.json" >"$work/pa.body"
if cmp -s "$work/kwctl.body" "$work/pa.body"; then
    echo "ok: annotate: the modules are byte-identical before the metadata section"
else
    # Where they differ, if only in the producers section's "walrus <version>".
    differing=$(cmp -l "$work/kwctl.body" "$work/pa.body" 2>/dev/null | wc -l || true)
    walrus_kwctl=$(grep -a -o 'walrus.0\.[0-9]*\.[0-9]*' "$work/kwctl.body" | head -1 | tr -cd '0-9.' || true)
    walrus_pa=$(grep -a -o 'walrus.0\.[0-9]*\.[0-9]*' "$work/pa.body" | head -1 | tr -cd '0-9.' || true)
    same_size=$([ "$(size_of "$work/kwctl.body")" = "$(size_of "$work/pa.body")" ] && echo yes || echo no)
    if [ "$same_size" = yes ] && [ "$walrus_kwctl" != "$walrus_pa" ] &&
        cmp -s <(sed "s/walrus.$walrus_kwctl/walrus.X/" "$work/kwctl.body" 2>/dev/null || true) \
               <(sed "s/walrus.$walrus_pa/walrus.X/" "$work/pa.body" 2>/dev/null || true); then
        echo "note: annotate: the modules differ only in the producers section: kwctl's walrus $walrus_kwctl, policy-annotate's $walrus_pa ($differing byte(s))"
    else
        echo "FAIL: annotate: the modules differ beyond the producers section ($differing bytes)"
        status=1
    fi
fi

"$kwctl" scaffold artifacthub --metadata-path metadata.yml --questions-path deploy/questions-ui.yml \
    --output "$work/kwctl-pkg.yml" 2>"$work/scaffold.err" || {
    sed 's/\x1b\[[0-9;]*m//g' "$work/scaffold.err"
    echo "FAIL: kwctl scaffold artifacthub refused metadata.yml"
    exit 1
}
# policy-annotate's model of the file (what `check` compares the committed one with) must take
# kwctl's as it is: same content, same layout.
if "$pa" check --cargo-toml Cargo.toml --metadata-path metadata.yml --artifacthub "$work/kwctl-pkg.yml" \
    --questions-path deploy/questions-ui.yml >"$work/check.out" &&
    ! grep -q "not kwctl's layout" "$work/check.out"; then
    echo "ok: scaffold artifacthub: policy-annotate check accepts kwctl's file as written"
else
    echo "FAIL: scaffold artifacthub: policy-annotate's model differs from kwctl's file:"
    grep -v '^ok: ' "$work/check.out" || true
    status=1
fi
# And the committed file is what this kwctl writes (apart from createdAt).
if diff <(grep -v '^createdAt:' "$work/kwctl-pkg.yml") <(grep -v '^createdAt:' artifacthub-pkg.yml) >"$work/committed.diff"; then
    echo "ok: artifacthub-pkg.yml is what kwctl $version scaffolds"
else
    echo "note: artifacthub-pkg.yml is not what kwctl $version scaffolds (make artifacthub-pkg.yml):"
    cat "$work/committed.diff"
fi
exit $status
