#!/usr/bin/env bash
# Packages a built kubectl plugin binary as krew installs it:
#
#   plugin-package.sh BINARY OS ARCH OUTDIR
#
# writes OUTDIR/kubectl-cozystack_reservations_OS_ARCH.tar.gz (.zip for windows) holding the
# binary (mode 0755) and LICENSE (0644) at its root, and OUTDIR/<archive>.sha256 (the
# `sha256sum` format: "HEX  NAME"). OS and ARCH are krew's selector values
# (linux|darwin|windows, amd64|arm64).
#
# Reproducible and portable: the archive is written by python3's tarfile/gzip/zipfile with a
# fixed order (binary, LICENSE), owner 0:0, empty user/group names and times (1970 for tar, the
# zip epoch 1980-01-01 for zip), so the same binary gives the same bytes on Linux, macOS or
# Windows (no GNU tar --sort, sha256sum or zip needed). release.yml packages every platform on
# Linux with it; release.bats checks every platform here.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: plugin-package.sh BINARY OS ARCH OUTDIR" >&2; exit 2; }
binary=$1 os=$2 arch=$3 out=$4
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "$os/$arch" in
    linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64 | windows/amd64) ;;
    *) echo "plugin-package.sh: unsupported platform $os/$arch" >&2; exit 2 ;;
esac
# Artifacts downloaded between jobs lose their executable bit: a regular file is enough, the
# archive sets the mode.
[ -f "$binary" ] || { echo "plugin-package.sh: $binary is not a file" >&2; exit 2; }
command -v python3 >/dev/null || { echo "plugin-package.sh: needs python3" >&2; exit 2; }
name=kubectl-cozystack_reservations
exe=$name
ext=tar.gz
[ "$os" = windows ] && exe=$name.exe ext=zip
archive=${name}_${os}_${arch}.$ext
mkdir -p "$out"
python3 - "$binary" "$exe" "$repo/LICENSE" "$out/$archive" <<'PY'
import gzip, hashlib, io, os, sys, tarfile, zipfile

binary, exe, license_path, archive = sys.argv[1:]
members = [(exe, open(binary, "rb").read(), 0o755), ("LICENSE", open(license_path, "rb").read(), 0o644)]
tmp = archive + ".tmp"
if archive.endswith(".zip"):
    with zipfile.ZipFile(tmp, "w") as z:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3  # Unix, so that the mode below is kept
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data, compresslevel=9)
else:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            t.addfile(info, io.BytesIO(data))
    with open(tmp, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as g:
        g.write(buf.getvalue())
os.replace(tmp, archive)
digest = hashlib.sha256(open(archive, "rb").read()).hexdigest()
with open(archive + ".sha256", "w", newline="\n") as f:
    f.write(f"{digest}  {os.path.basename(archive)}\n")
PY
echo "$out/$archive"
