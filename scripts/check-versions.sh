#!/usr/bin/env bash
# Fails when the release files drift apart:
#   - the version in Cargo.toml, metadata.yml (io.kubewarden.policy.version), artifacthub-pkg.yml
#     (version, containersImages, install) and deploy/clusteradmissionpolicy.yaml (module tag);
#   - the rules, contextAwareResources, mutating flag and questions-ui that artifacthub-pkg.yml
#     and the manifest copy from metadata.yml;
#   - metadata.yml itself: kwctl's validation, unknown keys, the required annotations;
#   - the timeouts: every `timeoutEvalSeconds: N`, `timeoutSeconds: N` or `timeoutSeconds` (N s)
#     in the documents and the install must be what deploy/clusteradmissionpolicy.yaml ships,
#     and README.md, docs/operating.md and metadata.yml's usage text must state both;
#   - one Kubewarden release (scripts/kubewarden-versions.env): the chart versions README's helm
#     installs pin, the policy-server image of deploy/ and examples/install/, CI's install job,
#     and the version of the policy-server and kwctl the tests find.
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

# One Kubewarden release (scripts/kubewarden-versions.env): README's helm installs pin its three
# charts, deploy/ and examples/install/ run its policy-server, CI's install job reads the same
# file, and the engine the tests run (when found) is that release.
# shellcheck source=scripts/kubewarden-versions.env
source scripts/kubewarden-versions.env
kw_drift=0
kw() { echo "$1" >&2; kw_drift=1; }
image=$POLICY_SERVER_IMAGE:$KUBEWARDEN_VERSION
for file in deploy/policyserver.yaml examples/install/kustomization.yaml; do
    images=$(grep -oE 'ghcr\.io/kubewarden/[a-z/-]*policy-server:[^ "]+' "$file" | sort -u || true)
    [ -n "$images" ] || kw "$file: names no policy-server image ($image expected)"
    for i in $images; do
        [ "$i" = "$image" ] || kw "$file: policy-server $i, but scripts/kubewarden-versions.env says $image"
    done
done
for chart in "kubewarden-crds $KUBEWARDEN_CRDS_CHART" "kubewarden-controller $KUBEWARDEN_CONTROLLER_CHART" \
    "kubewarden-defaults $KUBEWARDEN_DEFAULTS_CHART"; do
    read -r name version <<<"$chart"
    lines=$(grep -E "^helm (install|upgrade) .*kubewarden/$name( |\$)" README.md || true)
    [ -n "$lines" ] || kw "README.md: no \`helm install ... kubewarden/$name\`"
    while IFS= read -r line; do
        [ -z "$line" ] || [[ "$line" == *" --version $version"* ]] ||
            kw "README.md: \`$line\` does not pin --version $version"
    done <<<"$lines"
done
if grep -qE '^helm (install|upgrade) .*kubewarden/admission-controller' README.md; then
    kw "README.md: installs the admission-controller chart (Kubewarden 1.37+), not the tested $KUBEWARDEN_VERSION"
fi
grep -q "Kubewarden $KUBEWARDEN_VERSION" README.md || kw "README.md: does not name Kubewarden $KUBEWARDEN_VERSION"
grep -q 'scripts/kubewarden-versions.env' .github/workflows/ci.yml ||
    kw ".github/workflows/ci.yml: no job reads scripts/kubewarden-versions.env"
for tool in policy-server kwctl; do
    bin=$(bash scripts/cluster/find-tool.sh "$tool" 2>/dev/null)
    [ -n "$bin" ] || continue
    have=$("$bin" --version 2>/dev/null | awk 'NR == 1 {print $2}')
    [ "v$have" = "$KUBEWARDEN_VERSION" ] || kw "$bin is $tool $have, not the tested $KUBEWARDEN_VERSION"
done
[ "$kw_drift" = 0 ] || exit 1
echo "ok: Kubewarden $KUBEWARDEN_VERSION (charts kubewarden-crds $KUBEWARDEN_CRDS_CHART, kubewarden-controller $KUBEWARDEN_CONTROLLER_CHART, kubewarden-defaults $KUBEWARDEN_DEFAULTS_CHART; $image) in README.md, deploy/, examples/install/, ci.yml"

bash scripts/build-tools.sh --quiet

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
