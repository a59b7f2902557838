#!/usr/bin/env bash
# Prints the path of a real kwctl, or nothing (exit 0 either way), first found of:
#   $KWCTL_REAL; `kwctl` on PATH; $SHARED_DIR/tools/kwctl (a shared/ folder anywhere: a clone
#   made elsewhere names it so); ../shared/tools/kwctl beside the checkout (the git top level,
#   then this checkout's directory, which differ in a worktree or a copy).
# A candidate counts only when `kwctl --version` runs. KWCTL_REAL=none finds none (to run
# everything on the stand-in tools).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

candidates=()
if [ -n "${KWCTL_REAL:-}" ]; then
    [ "$KWCTL_REAL" = none ] && exit 0
    candidates+=("$KWCTL_REAL")
fi
if p=$(command -v kwctl 2>/dev/null); then candidates+=("$p"); fi
[ -n "${SHARED_DIR:-}" ] && candidates+=("$SHARED_DIR/tools/kwctl")
if top=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null); then
    candidates+=("$top/../shared/tools/kwctl")
fi
candidates+=("$here/../shared/tools/kwctl")

runs() { [ -x "$1" ] && [ ! -d "$1" ] && "$1" --version >/dev/null 2>&1; }
if [ -n "${KWCTL_REAL:-}" ] && ! runs "$KWCTL_REAL"; then
    echo "find-kwctl: KWCTL_REAL=$KWCTL_REAL is not a kwctl that runs; looking further" >&2
fi
for c in "${candidates[@]}"; do
    if runs "$c"; then
        # An absolute path without ../ (e2e.bats runs it from its own directory).
        echo "$(cd "$(dirname "$c")" && pwd -P)/$(basename "$c")"
        exit 0
    fi
done
exit 0
