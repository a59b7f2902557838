#!/usr/bin/env bash
# Prints the path of a bats to run the .bats files with, installing one when there is none.
#
#   1. $BATS, when set;
#   2. `bats` on PATH;
#   3. a bats installed earlier by this script into .tools/ (npm);
#   4. Debian's package (apt-get install -y bats), when apt-get is there and this user is root
#      or has passwordless sudo;
#   5. the npm package `bats` (bats-core), installed into .tools/ (gitignored), when npm is there
#      (also when apt-get fails, e.g. on a held dpkg lock);
#   6. otherwise one line saying what to install, and exit 1.
#
# BATS_INSTALL=apt|npm|none restricts steps 4-5 to one way (none: never install); the default
# (auto) tries apt, then npm. Everything but the path goes to stderr.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# bats-core release installed from npm (Debian 12 ships 1.8.2; the .bats files run on both).
npm_version=1.13.0
local_bats="$root/.tools/node_modules/bats/bin/bats"
how=${BATS_INSTALL:-auto}

works() { [ -n "$1" ] && "$1" --version >/dev/null 2>&1; }

if [ -n "${BATS:-}" ]; then
    works "$BATS" || { echo "ensure-bats: BATS=$BATS does not run" >&2; exit 1; }
    echo "$BATS"; exit 0
fi
if found=$(command -v bats 2>/dev/null) && works "$found"; then
    echo "$found"; exit 0
fi
if works "$local_bats"; then
    echo "$local_bats"; exit 0
fi

sudo=()
can_apt=false
if [ "$how" = auto ] || [ "$how" = apt ]; then
    if command -v apt-get >/dev/null 2>&1; then
        if [ "$(id -u)" -eq 0 ]; then
            can_apt=true
        elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            can_apt=true; sudo=(sudo -n)
        fi
    fi
fi
if $can_apt; then
    echo "ensure-bats: bats is not installed; apt-get install -y bats" >&2
    export DEBIAN_FRONTEND=noninteractive
    # A fresh image has no package lists: update once, only when the install cannot find it.
    if "${sudo[@]}" apt-get install -y -q --no-install-recommends bats >&2 ||
        { "${sudo[@]}" apt-get update -q >&2 &&
            "${sudo[@]}" apt-get install -y -q --no-install-recommends bats >&2; }; then
        if found=$(command -v bats 2>/dev/null) && works "$found"; then
            echo "$found"; exit 0
        fi
    fi
    echo "ensure-bats: apt-get could not install a bats that runs" >&2
    [ "$how" = auto ] || exit 1
fi
if { [ "$how" = auto ] || [ "$how" = npm ]; } && command -v npm >/dev/null 2>&1; then
    echo "ensure-bats: bats is not installed; npm install bats@$npm_version into .tools/" >&2
    mkdir -p "$root/.tools"
    npm install --prefix "$root/.tools" --no-audit --no-fund --loglevel=error \
        "bats@$npm_version" >&2
    if works "$local_bats"; then
        echo "$local_bats"; exit 0
    fi
    echo "ensure-bats: npm installed bats but $local_bats does not run" >&2
    exit 1
fi
echo "ensure-bats: bats is needed to run the .bats tests: install it (apt-get install bats, or npm install -g bats) or set BATS=/path/to/bats" >&2
exit 1
