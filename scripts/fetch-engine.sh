#!/usr/bin/env bash
# Downloads the real engine pinned in a checksum file and prints the environment that points
# the tests at it (append it to $GITHUB_ENV, or eval it):
#
#   fetch-engine.sh DIR [SUMS]     SUMS: default .github/real-engine.sha256
#
# Each line of SUMS is `NAME VERSION SOURCE SHA256` (# comments): SOURCE is an https:// or
# file:// URL of the binary, or docker://IMAGE#PATH (the file PATH of that image, by
# docker create + docker cp). A file is made executable only once its sha256 is SHA256; a
# mismatch, or a SHA256 not filled in yet, fails naming the line. Prints NAME_VAR=DIR/NAME
# (KUBE_APISERVER=..., POLICY_SERVER=..., as scripts/cluster/find-tool.sh reads them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/portable.sh
source "$root/scripts/portable.sh"
[ $# -ge 1 ] || { echo "usage: fetch-engine.sh DIR [SUMS]" >&2; exit 2; }
dir=$1 sums=${2:-$root/.github/real-engine.sha256}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
n=0
while read -r name version source sha rest; do
    case "$name" in '' | '#'*) continue ;; esac
    n=$((n + 1))
    [ -n "$sha" ] && [ -z "$rest" ] || { echo "fetch-engine: $sums: bad line for $name" >&2; exit 1; }
    if ! [[ "$sha" =~ ^[0-9a-f]{64}$ ]]; then
        echo "fetch-engine: $sums: the sha256 of $name $version is not filled in ($sha): compute it from a trusted download of $source" >&2
        exit 1
    fi
    out=$dir/$name
    rm -f "$out" "$out.part"
    case "$source" in
    https://* | file://*)
        curl -fsSL --retry 3 -o "$out.part" "$source" ;;
    docker://*)
        ref=${source#docker://}
        image=${ref%%#*} path=${ref#*#}
        docker pull -q "$image" >&2
        id=$(docker create "$image")
        docker cp "$id:$path" "$out.part" >&2
        docker rm "$id" >/dev/null ;;
    *)
        echo "fetch-engine: $sums: $name: unknown source $source" >&2
        exit 1 ;;
    esac
    have=$(sha256_of "$out.part")
    if [ "$have" != "$sha" ]; then
        rm -f "$out.part"
        echo "fetch-engine: $name $version from $source has sha256 $have, not $sha" >&2
        exit 1
    fi
    chmod 0755 "$out.part"
    mv "$out.part" "$out"
    echo "fetch-engine: $name $version ok (sha256 $sha)" >&2
    echo "$(tr 'a-z-' 'A-Z_' <<<"$name")=$out"
done <"$sums"
[ $n -gt 0 ] || { echo "fetch-engine: $sums lists nothing" >&2; exit 1; }
