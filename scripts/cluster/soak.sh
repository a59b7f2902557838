#!/usr/bin/env bash
# A bounded soak of the real engine (make soak; not part of CI): one control plane, the apps
# stand-in with its watcher, the real policy-server in protect mode from deploy/, then
# soak.py's load for MINUTES (default 20) at half the throughput it first measures; at the end
# the ledger ($LEDGER, default tools/target/release/tenant-reservation: make soak builds it)
# checks every pool of the cluster as stored (exit 3 when one is over budget).
#
#   scripts/cluster/soak.sh [MINUTES]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=scripts/cluster/scratch-cluster.bash
source "$here/scratch-cluster.bash"
scratch_cluster soak
bash "$here/policy-server.sh" up "$dir" --mode protect >/dev/null
bash "$here/cozystack-apps.sh" watcher "$dir" start
ledger=${LEDGER:-$repo/tools/target/release/tenant-reservation}
[ -x "$ledger" ] || { echo "soak: no ledger at $ledger (make soak builds it)" >&2; exit 1; }
python3 "$here/soak.py" "$dir" "${1:-20}"
"$ledger" ledger --fail-over-budget --settings deploy/clusteradmissionpolicy.yaml -A
