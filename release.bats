#!/usr/bin/env bats
# The scripts the release workflow's jobs call, run here for every platform they claim:
# scripts/plugin-package.sh (archives + checksums), scripts/krew-manifest.sh (the krew
# manifest from them), scripts/check-identity.sh and scripts/check-workflows.sh. The plugin
# binary is a stand-in per platform (a small script naming its platform): the layout, modes,
# checksums and reproducibility do not depend on what the binary is.

bats_require_minimum_version 1.5.0

PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"
NAME=kubectl-cozystack_reservations

setup() {
    cd "$BATS_TEST_DIRNAME"
    bins=$BATS_TEST_TMPDIR/bins
    mkdir -p "$bins"
    for p in $PLATFORMS; do
        printf '#!/bin/sh\necho "kubectl cozystack-reservations stand-in %s"\n' "$p" >"$bins/${p/\//-}"
        chmod 0700 "$bins/${p/\//-}"
    done
}

archive_of() { # archive_of OS ARCH
    if [ "$1" = windows ]; then echo "${NAME}_$1_$2.zip"; else echo "${NAME}_$1_$2.tar.gz"; fi
}

package_all() { # package_all OUTDIR
    local p
    for p in $PLATFORMS; do
        bash scripts/plugin-package.sh "$bins/${p/\//-}" "${p%/*}" "${p#*/}" "$1" >/dev/null
    done
}

@test "plugin-package: every platform's archive holds its binary (0755) and LICENSE (0644) at the root, owner 0, fixed times; its .sha256 is the archive's" {
    local dist=$BATS_TEST_TMPDIR/dist
    package_all "$dist"
    [ "$(ls "$dist" | wc -l)" -eq 10 ]
    python3 - "$dist" "$bins" <<'PY'
import hashlib, os, sys, tarfile, zipfile
dist, bins = sys.argv[1:]
name = "kubectl-cozystack_reservations"
license = open("LICENSE", "rb").read()
for p in ["linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"]:
    os_, arch = p.split("/")
    binary = open(f"{bins}/{os_}-{arch}", "rb").read()
    if os_ == "windows":
        archive = f"{name}_{os_}_{arch}.zip"
        with zipfile.ZipFile(f"{dist}/{archive}") as z:
            infos = z.infolist()
            assert [i.filename for i in infos] == [f"{name}.exe", "LICENSE"], infos
            assert z.read(f"{name}.exe") == binary and z.read("LICENSE") == license
            modes = [(i.external_attr >> 16) & 0o777 for i in infos]
            assert modes == [0o755, 0o644], modes
            assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}, infos
    else:
        archive = f"{name}_{os_}_{arch}.tar.gz"
        with tarfile.open(f"{dist}/{archive}") as t:
            members = t.getmembers()
            assert [m.name for m in members] == [name, "LICENSE"], members
            assert t.extractfile(name).read() == binary and t.extractfile("LICENSE").read() == license
            assert [m.mode for m in members] == [0o755, 0o644], [m.mode for m in members]
            assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {(0, 0, "", "", 0)}
            assert all(m.isfile() for m in members)
    digest = hashlib.sha256(open(f"{dist}/{archive}", "rb").read()).hexdigest()
    assert open(f"{dist}/{archive}.sha256").read() == f"{digest}  {archive}\n", p
PY
    # The .sha256 files are in the format sha256sum -c (and shasum -a 256 -c) reads.
    if command -v sha256sum >/dev/null; then
        (cd "$dist" && sha256sum --quiet -c ./*.sha256)
    fi
    # Installed as krew installs it: extracted, the binary runs.
    mkdir "$BATS_TEST_TMPDIR/x"
    tar -xzf "$dist/$(archive_of linux amd64)" -C "$BATS_TEST_TMPDIR/x"
    run "$BATS_TEST_TMPDIR/x/$NAME"
    [ "$status" -eq 0 ]
    [ "$output" = "kubectl cozystack-reservations stand-in linux/amd64" ]
}

@test "plugin-package: the same binary gives the same bytes (another directory, mtime and umask); another binary does not" {
    package_all "$BATS_TEST_TMPDIR/a"
    # The same binaries copied elsewhere, with other times and modes, packaged under another umask.
    cp -r "$bins" "$BATS_TEST_TMPDIR/bins2"
    touch -t 202001020304 "$BATS_TEST_TMPDIR"/bins2/*
    chmod 0755 "$BATS_TEST_TMPDIR"/bins2/*
    bins=$BATS_TEST_TMPDIR/bins2
    (umask 077 && package_all "$BATS_TEST_TMPDIR/b")
    for p in $PLATFORMS; do
        a=$(archive_of "${p%/*}" "${p#*/}")
        cmp "$BATS_TEST_TMPDIR/a/$a" "$BATS_TEST_TMPDIR/b/$a"
        cmp "$BATS_TEST_TMPDIR/a/$a.sha256" "$BATS_TEST_TMPDIR/b/$a.sha256"
    done
    echo changed >>"$bins/darwin-arm64"
    bash scripts/plugin-package.sh "$bins/darwin-arm64" darwin arm64 "$BATS_TEST_TMPDIR/c" >/dev/null
    run cmp -s "$BATS_TEST_TMPDIR/a/$(archive_of darwin arm64).sha256" "$BATS_TEST_TMPDIR/c/$(archive_of darwin arm64).sha256"
    [ "$status" -eq 1 ]
}

@test "plugin-package: an unsupported platform or a missing binary is refused" {
    run bash scripts/plugin-package.sh "$bins/linux-amd64" windows arm64 "$BATS_TEST_TMPDIR/d"
    [ "$status" -eq 2 ]
    [[ "$output" == *"unsupported platform windows/arm64"* ]]
    run bash scripts/plugin-package.sh "$BATS_TEST_TMPDIR/nothing" linux amd64 "$BATS_TEST_TMPDIR/d"
    [ "$status" -eq 2 ]
    [ ! -e "$BATS_TEST_TMPDIR/d/$(archive_of linux amd64)" ]
}

@test "krew-manifest --all: one entry per platform whose sha256, uri, bin and files are its archive's; a missing platform or a tampered archive fails" {
    local dist=$BATS_TEST_TMPDIR/dist
    package_all "$dist"
    bash scripts/krew-manifest.sh --all v1.2.3 "$dist" >"$BATS_TEST_TMPDIR/manifest.yaml"
    python3 - "$dist" "$BATS_TEST_TMPDIR/manifest.yaml" <<'PY'
import hashlib, sys, tarfile, zipfile, yaml
dist, path = sys.argv[1:]
m = yaml.safe_load(open(path))
assert (m["apiVersion"], m["kind"], m["metadata"]["name"], m["spec"]["version"]) == (
    "krew.googlecontainertools.github.com/v1alpha2", "Plugin", "cozystack-reservations", "v1.2.3"), m
got = {}
for p in m["spec"]["platforms"]:
    sel = p["selector"]["matchLabels"]
    archive = p["uri"].rsplit("/", 1)[1]
    assert p["uri"] == f"https://github.com/cozystack/tenant-reservation-policy/releases/download/v1.2.3/{archive}", p
    assert hashlib.sha256(open(f"{dist}/{archive}", "rb").read()).hexdigest() == p["sha256"], p
    if archive.endswith(".zip"):
        names = zipfile.ZipFile(f"{dist}/{archive}").namelist()
    else:
        names = tarfile.open(f"{dist}/{archive}").getnames()
    assert p["bin"] in names and all(f["from"] in names for f in p["files"]), (p, names)
    assert p["bin"].endswith(".exe") == (sel["os"] == "windows"), p
    got[f'{sel["os"]}/{sel["arch"]}'] = archive
assert sorted(got) == sorted(["linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"]), got
PY
    # A platform missing: without --all the manifest has the rest; with --all it fails.
    rm "$dist/$(archive_of darwin amd64)" "$dist/$(archive_of darwin amd64).sha256"
    run bash scripts/krew-manifest.sh v1.2.3 "$dist"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^  - selector:' <<<"$output")" -eq 4 ]
    run bash scripts/krew-manifest.sh --all v1.2.3 "$dist"
    [ "$status" -eq 1 ]
    [[ "$output" == *"--all: no ${NAME}_darwin_amd64.tar.gz"* ]]
    # A tampered archive fails, whatever the platform.
    echo x >>"$dist/$(archive_of windows amd64)"
    run bash scripts/krew-manifest.sh v1.2.3 "$dist"
    [ "$status" -eq 1 ]
    [[ "$output" == *"$(archive_of windows amd64) does not match its checksum"* ]]
}

@test "check-identity: the placeholder maintainer fails in one line naming what to set; a real one passes" {
    local copy=$BATS_TEST_TMPDIR/repo
    mkdir -p "$copy"
    cp metadata.yml artifacthub-pkg.yml artifacthub-repo.yml "$copy/"
    sed -i.bak -e 's/maintainers@users\.noreply\.a-seed-[0-9]*\.example/maintainers@users.noreply.example/' "$copy"/*.yml
    run bash scripts/check-identity.sh "$copy"
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == *"set the real maintainer name and email"*"metadata.yml io.kubewarden.policy.author"* ]]
    sed -i.bak -e 's/tenant-reservation-policy developers <[^>]*>/Jane Maintainer <jane@cozystack.io>/' \
        -e 's/email: .*/email: jane@cozystack.io/' "$copy"/*.yml
    run bash scripts/check-identity.sh "$copy"
    [ "$status" -eq 0 ]
    [ "$output" = "check-identity: maintainer Jane Maintainer <jane@cozystack.io>" ]
}

@test "check-workflows: the workflows pass actionlint and the job-graph check; a release without a platform's build fails" {
    run bash scripts/check-workflows.sh
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"job graph: "*" 0 problem(s)"* ]]
    # A copy whose plugin matrix lacks windows: the job graph check names it.
    local copy=$BATS_TEST_TMPDIR/repo
    mkdir -p "$copy/.github/workflows" "$copy/scripts"
    cp scripts/check-workflows.sh scripts/plugin-package.sh "$copy/scripts/"
    grep -v 'os: windows, arch: amd64' .github/workflows/release.yml >"$copy/.github/workflows/release.yml"
    CHECK_WORKFLOWS_OFFLINE=1 run bash "$copy/scripts/check-workflows.sh"
    [ "$status" -eq 1 ]
    [[ "$output" == *"the plugin matrix builds"*"plugin-package.sh packages"*"windows/amd64"* ]]
}

@test "fetch-engine: a file whose sha256 is the pinned one is installed and named; a mismatch or an unfilled sum fails" {
    local src=$BATS_TEST_TMPDIR/src out=$BATS_TEST_TMPDIR/engine
    mkdir -p "$src"
    printf '#!/bin/sh\necho kube-apiserver stand-in\n' >"$src/kube-apiserver"
    sha=$(python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$src/kube-apiserver")
    echo "kube-apiserver v0 file://$src/kube-apiserver $sha" >"$BATS_TEST_TMPDIR/sums"
    run --separate-stderr bash scripts/fetch-engine.sh "$out" "$BATS_TEST_TMPDIR/sums"
    [ "$status" -eq 0 ]
    [ "$output" = "KUBE_APISERVER=$out/kube-apiserver" ]
    [ -x "$out/kube-apiserver" ]
    [ "$("$out/kube-apiserver")" = "kube-apiserver stand-in" ]
    # Another file under the same pin: refused, and nothing is left to run.
    echo 'echo tampered' >>"$src/kube-apiserver"
    rm -rf "$out"
    run bash scripts/fetch-engine.sh "$out" "$BATS_TEST_TMPDIR/sums"
    [ "$status" -eq 1 ]
    [[ "$output" == *"has sha256 "*", not $sha"* ]]
    [ ! -e "$out/kube-apiserver" ]
    # The shipped pins: every line names a source; an unfilled one fails naming it.
    run bash scripts/fetch-engine.sh "$out" .github/real-engine.sha256
    if grep -qE '^[a-z].* UNFILLED$' .github/real-engine.sha256; then
        [ "$status" -eq 1 ]
        [[ "$output" == *"is not filled in (UNFILLED)"* ]]
    fi
}

@test "readme-block: CI's install runs README's step 1 as written, with the charts of kubewarden-versions.env" {
    source scripts/kubewarden-versions.env
    run bash scripts/readme-block.sh "### 1. Install Kubewarden"
    [ "$status" -eq 0 ]
    [[ "$output" == *"kubewarden/kubewarden-crds --version $KUBEWARDEN_CRDS_CHART"* ]]
    [[ "$output" == *"kubewarden/kubewarden-controller --version $KUBEWARDEN_CONTROLLER_CHART"* ]]
    [[ "$output" == *"kubewarden/kubewarden-defaults --version $KUBEWARDEN_DEFAULTS_CHART"* ]]
    # Every line is a command (no prose, no fence).
    [ -z "$(grep -vE '^(helm|kubectl) ' <<<"$output")" ]
    run bash scripts/readme-block.sh "### No such heading"
    [ "$status" -eq 1 ]
}
