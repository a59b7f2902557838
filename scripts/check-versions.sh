#!/usr/bin/env bash
# Fails when the release files drift apart:
#   - the version in Cargo.toml, metadata.yml (io.kubewarden.policy.version), artifacthub-pkg.yml
#     (version, containersImages, install) and deploy/clusteradmissionpolicy.yaml (module tag);
#   - the rules, contextAwareResources, mutating flag and questions-ui that artifacthub-pkg.yml
#     and the manifest copy from metadata.yml;
#   - metadata.yml itself: kwctl's validation, unknown keys, the required annotations;
#   - the timeouts: every `timeoutEvalSeconds: N`, `timeoutSeconds: N` or `timeoutSeconds` (N s)
#     in the documents and the install must be what deploy/clusteradmissionpolicy.yaml ships,
#     and README.md, docs/operating.md and metadata.yml's usage text must state both.
# With a tag (`scripts/check-versions.sh v0.1.0`, or GITHUB_REF_NAME on a tag build), the tag
# must be v<version> too.
#
# The check is `policy-annotate check` (tools/policy-annotate): YAML is parsed there, with the
# same serde_yaml release kwctl uses, so a fresh machine needs no PyYAML or yq.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

tag=${1:-}
if [ -z "$tag" ] && [ "${GITHUB_REF_TYPE:-}" = tag ]; then
    tag=${GITHUB_REF_NAME:-}
fi

manifest=deploy/clusteradmissionpolicy.yaml
shipped() { sed -n -E "s/^  $1: ([0-9]+)\$/\1/p" "$manifest"; }
declare -A want=([timeoutEvalSeconds]=$(shipped timeoutEvalSeconds) [timeoutSeconds]=$(shipped timeoutSeconds))
drift=0
for field in timeoutEvalSeconds timeoutSeconds; do
    if [ -z "${want[$field]}" ]; then
        echo "$manifest: no spec.$field" >&2
        drift=1
        continue
    fi
    for file in README.md docs/operating.md metadata.yml CHANGELOG.md \
        examples/install/kustomization.yaml deploy/components/*/kustomization.yaml; do
        stated=$(grep -o -E "\b$field\`?:? \(?[0-9]+" "$file" | grep -o -E '[0-9]+$' | sort -u || true)
        for n in $stated; do
            if [ "$n" != "${want[$field]}" ]; then
                echo "$file: $field $n, but $manifest ships ${want[$field]}" >&2
                drift=1
            fi
        done
        case $file in
        README.md | docs/operating.md | metadata.yml)
            if [ -z "$stated" ]; then
                echo "$file: does not state $field (${want[$field]}, as $manifest ships it)" >&2
                drift=1
            fi
            ;;
        esac
    done
done
[ "$drift" = 0 ] || exit 1
echo "ok: timeoutEvalSeconds ${want[timeoutEvalSeconds]}, timeoutSeconds ${want[timeoutSeconds]} wherever stated (as $manifest ships them)"

cargo build --quiet --release --manifest-path tools/Cargo.toml -p policy-annotate

args=(check
    --cargo-toml Cargo.toml
    --metadata-path metadata.yml
    --artifacthub artifacthub-pkg.yml
    --questions-path deploy/questions-ui.yml
    --manifest deploy/clusteradmissionpolicy.yaml)
if [ -n "$tag" ]; then
    args+=(--tag "$tag")
fi
exec "${CARGO_TARGET_DIR:-tools/target}/release/policy-annotate" "${args[@]}"
