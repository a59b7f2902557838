#!/usr/bin/env bash
# Packages a built kubectl plugin binary as krew installs it:
#
#   plugin-package.sh BINARY OS ARCH OUTDIR
#
# writes OUTDIR/kubectl-cozystack_reservations_OS_ARCH.tar.gz (.zip for windows) holding the
# binary and LICENSE at its root, and OUTDIR/<archive>.sha256 (`sha256sum` format). OS and ARCH
# are krew's selector values (linux|darwin|windows, amd64|arm64).
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: plugin-package.sh BINARY OS ARCH OUTDIR" >&2; exit 2; }
binary=$1 os=$2 arch=$3 out=$4
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "$os/$arch" in
    linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64 | windows/amd64) ;;
    *) echo "plugin-package.sh: unsupported platform $os/$arch" >&2; exit 2 ;;
esac
[ -x "$binary" ] || { echo "plugin-package.sh: $binary is not an executable" >&2; exit 2; }
name=kubectl-cozystack_reservations
exe=$name
[ "$os" = windows ] && exe=$name.exe
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$binary" "$stage/$exe"
cp "$repo/LICENSE" "$stage/LICENSE"
if [ "$os" = windows ]; then
    archive=${name}_${os}_${arch}.zip
    (cd "$stage" && rm -f "$out/$archive" && zip -q -X "$out/$archive" "$exe" LICENSE)
else
    archive=${name}_${os}_${arch}.tar.gz
    # Reproducible: fixed owner, order and times.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -cf - "$exe" LICENSE |
        gzip -n >"$out/$archive"
fi
(cd "$out" && sha256sum "$archive" >"$archive.sha256")
echo "$out/$archive"
