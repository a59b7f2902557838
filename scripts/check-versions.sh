#!/usr/bin/env bash
# Fails when the release files drift apart:
#   - the version in Cargo.toml, metadata.yml (io.kubewarden.policy.version), artifacthub-pkg.yml
#     (version, containersImages, install) and deploy/clusteradmissionpolicy.yaml (module tag);
#   - the rules, contextAwareResources, mutating flag and questions-ui that artifacthub-pkg.yml
#     and the manifest copy from metadata.yml;
#   - metadata.yml itself: kwctl's validation, unknown keys, the required annotations.
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
exec tools/target/release/policy-annotate "${args[@]}"
