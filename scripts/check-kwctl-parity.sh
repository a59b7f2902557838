#!/usr/bin/env bash
# tools/policy-annotate stands in for `kwctl annotate` and `kwctl scaffold artifacthub` where
# there is no kwctl; this checks that it still produces what the real kwctl produces:
#   - annotate: the io.kubewarden.metadata section byte for byte (policy-annotate told kwctl's
#     version, as kwctl records it), then the whole module; a module that differs only in the
#     producers section's walrus version (kwctl 1.35 links walrus 0.26.1, like policy-annotate;
#     1.36 links 0.26.2) is reported, not failed;
#   - scaffold artifacthub: the whole file, with the same createdAt.
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
cargo build --quiet --release --manifest-path tools/Cargo.toml -p policy-annotate
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
"$pa" annotate --kwctl-version "$version" -m metadata.yml -o "$work/pa.wasm" policy.wasm
"$pa" inspect --raw "$work/kwctl.wasm" >"$work/kwctl.json"
"$pa" inspect --raw "$work/pa.wasm" >"$work/pa.json"
if cmp -s "$work/kwctl.json" "$work/pa.json"; then
    echo "ok: annotate: the io.kubewarden.metadata sections are byte-identical ($(size_of "$work/pa.json") bytes)"
else
    echo "FAIL: annotate: the io.kubewarden.metadata sections differ:"
    diff <(tr ',' '\n' <"$work/kwctl.json") <(tr ',' '\n' <"$work/pa.json") | head -20 || true
    status=1
fi
if cmp -s "$work/kwctl.wasm" "$work/pa.wasm"; then
    echo "ok: annotate: the modules are byte-identical"
else
    # Where they differ, if only in the producers section's "walrus <version>".
    differing=$(cmp -l "$work/kwctl.wasm" "$work/pa.wasm" 2>/dev/null | wc -l || true)
    walrus_kwctl=$(grep -a -o 'walrus.0\.[0-9]*\.[0-9]*' "$work/kwctl.wasm" | head -1 | tr -cd '0-9.' || true)
    walrus_pa=$(grep -a -o 'walrus.0\.[0-9]*\.[0-9]*' "$work/pa.wasm" | head -1 | tr -cd '0-9.' || true)
    same_size=$([ "$(size_of "$work/kwctl.wasm")" = "$(size_of "$work/pa.wasm")" ] && echo yes || echo no)
    if [ "$same_size" = yes ] && [ "$walrus_kwctl" != "$walrus_pa" ] &&
        cmp -s <(sed "s/walrus.$walrus_kwctl/walrus.X/" "$work/kwctl.wasm" 2>/dev/null || true) \
               <(sed "s/walrus.$walrus_pa/walrus.X/" "$work/pa.wasm" 2>/dev/null || true); then
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
created=$(awk '/^createdAt:/{print $2; exit}' "$work/kwctl-pkg.yml")
"$pa" scaffold-artifacthub --metadata-path metadata.yml --questions-path deploy/questions-ui.yml \
    --created-at "$created" --kwctl-version "$version" --output "$work/pa-pkg.yml"
if cmp -s "$work/kwctl-pkg.yml" "$work/pa-pkg.yml"; then
    echo "ok: scaffold artifacthub: byte-identical files"
else
    echo "FAIL: scaffold artifacthub: policy-annotate's file differs from kwctl's:"
    diff "$work/kwctl-pkg.yml" "$work/pa-pkg.yml" || true
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
