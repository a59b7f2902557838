#!/usr/bin/env bash
# find-tool.sh NAME: prints the path of a runnable NAME (kube-apiserver, etcd, policy-server,
# kwctl), or prints nothing and says on stderr, in one line, where it looked (exit 0 either way).
# First found of: $KUBE_APISERVER / $ETCD / $POLICY_SERVER / $KWCTL_REAL (NAME upper-cased, dashes
# as underscores; "none" finds none); NAME on PATH; $SHARED_DIR/tools/NAME (a shared/ folder
# anywhere: a clone made elsewhere names it so); ../shared/tools/NAME beside the checkout (the
# git top level, then this checkout's directory, which differ in a worktree).
# For etcd, Debian's etcd-server (/usr/bin/etcd, 3.4) also counts.
set -uo pipefail
name=${1:?usage: find-tool.sh kube-apiserver|etcd|policy-server|kwctl}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

var=$(tr 'a-z-' 'A-Z_' <<<"$name")
[ "$name" = kwctl ] && var=KWCTL_REAL
override=${!var:-}
[ "$override" = none ] && { echo "find-tool: $var=none" >&2; exit 0; }

candidates=()
[ -n "$override" ] && candidates+=("$override")
if p=$(command -v "$name" 2>/dev/null); then candidates+=("$p"); fi
[ -n "${SHARED_DIR:-}" ] && candidates+=("$SHARED_DIR/tools/$name")
if top=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null); then
    candidates+=("$top/../shared/tools/$name")
fi
candidates+=("$here/../shared/tools/$name")

for c in "${candidates[@]}"; do
    if [ -x "$c" ] && [ ! -d "$c" ]; then
        echo "$(cd "$(dirname "$c")" && pwd -P)/$(basename "$c")"
        exit 0
    fi
done
echo "find-tool: no $name (looked at \$$var, PATH, \$SHARED_DIR/tools, ../shared/tools beside the checkout)" >&2
exit 0
