#!/usr/bin/env bash
# The krew manifest of the kubectl plugin for a release, from its archives' checksums:
#
#   krew-manifest.sh [--all] TAG DIR [BASE_URL]
#
# DIR holds the archives plugin-package.sh wrote (with their .sha256 files); every platform
# found there gets an entry, once its archive matches its checksum. --all (the release) also
# fails unless every platform plugin-package.sh builds is there. BASE_URL is where the release
# serves them (default: the GitHub release of TAG). Prints the manifest (krew's Plugin,
# v1alpha2) on stdout.
set -euo pipefail
# shellcheck source=scripts/portable.sh
source "$(dirname "${BASH_SOURCE[0]}")/portable.sh"
all=false
[ "${1:-}" = --all ] && { all=true; shift; }
[ $# -ge 2 ] || { echo "usage: krew-manifest.sh [--all] TAG DIR [BASE_URL]" >&2; exit 2; }
tag=$1 dir=$2
base=${3:-https://github.com/cozystack/tenant-reservation-policy/releases/download/$tag}
[[ "$tag" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    { echo "krew-manifest.sh: $tag is not a release tag (vMAJOR.MINOR.PATCH)" >&2; exit 2; }
name=kubectl-cozystack_reservations
platforms=()
for sum in "$dir"/${name}_*.sha256; do
    [ -e "$sum" ] || continue
    archive=$(basename "$sum" .sha256)
    [ -f "$dir/$archive" ] || { echo "krew-manifest.sh: $archive is missing (its .sha256 is there)" >&2; exit 1; }
    want=$(cut -d' ' -f1 "$sum")
    [ "$(sha256_of "$dir/$archive")" = "$want" ] ||
        { echo "krew-manifest.sh: $archive does not match its checksum" >&2; exit 1; }
    platform=${archive#"${name}_"}
    platform=${platform%.tar.gz}
    platform=${platform%.zip}
    os=${platform%_*} arch=${platform#*_}
    bin=$name
    [ "$os" = windows ] && bin=$name.exe
    platforms+=("$(printf '  - selector:\n      matchLabels:\n        os: %s\n        arch: %s\n    uri: %s/%s\n    sha256: %s\n    bin: %s\n    files:\n      - from: %s\n        to: .\n      - from: LICENSE\n        to: .' \
        "$os" "$arch" "$base" "$archive" "$want" "$bin" "$bin")")
done
if $all; then
    for p in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64; do
        ext=tar.gz
        [ "$p" = windows_amd64 ] && ext=zip
        [ -e "$dir/${name}_$p.$ext.sha256" ] ||
            { echo "krew-manifest.sh: --all: no ${name}_$p.$ext (with its .sha256) in $dir" >&2; exit 1; }
    done
fi
[ ${#platforms[@]} -gt 0 ] || { echo "krew-manifest.sh: no ${name}_OS_ARCH archive in $dir" >&2; exit 1; }
cat <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: cozystack-reservations
spec:
  version: $tag
  homepage: https://github.com/cozystack/tenant-reservation-policy
  shortDescription: Cozystack tenant quotas as reservation ledgers
  description: |
    Every Cozystack tenant pool and quota key: its budget, what sub-tenants carve out,
    what its applications reserve as the tenant-reservation admission policy charges them,
    what is left, and the largest holders. Judges with the settings of the policy deployed
    in the cluster. --what-if decides one write as the policy would; --compare shows what
    other settings or another version would change, application by application; and
    --fail-over-budget gates a rollout. Read-only: it only LISTs.
  caveats: |
    It needs list on applicationdefinitions.cozystack.io, helmreleases.helm.toolkit.fluxcd.io,
    virtualmachineclusterinstancetypes.instancetype.kubevirt.io and (for the deployed
    settings) clusteradmissionpolicies.policies.kubewarden.io: examples/plugin/rbac.yaml
    in the repository grants exactly that.
  platforms:
$(printf '%s\n' "${platforms[@]}")
YAML
