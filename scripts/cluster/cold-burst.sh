#!/usr/bin/env bash
# Concurrent cold writes on the real engine: N writes into one large pool sent at once to a
# fresh policy-server (no list read yet). policy-server inserts a reflector only once it is
# ready (callback_handler/kubernetes/client.rs), so each write that asks for a list still
# syncing starts its own; this shows how many the API server sees.
#
#   scripts/cluster/cold-burst.sh [N...]      (default: 2 8 32; an N given twice runs twice)
#   COLD_APPS=10000                           applications stored in the pool first
#
# One Tenant (tenant-big: cpu and memory ample) holding COLD_APPS u1.nano VMInstance releases,
# loaded straight into the API server (load.py) as the stand-in stores them. Then for each N:
# policy-server started afresh (policy-server.sh up), and N `kubectl create` of one u1.nano
# VMInstance each into tenant-big, released together. Prints per N: the HelmRelease LIST requests
# the API server served meanwhile (its /metrics: apiserver_request_total{resource="helmreleases",
# verb="LIST"}; a reflector lists in pages of 500, so one LIST of the pool is about 20 of them),
# the HelmRelease watches opened (apiserver_longrunning_requests{verb="WATCH"}, a gauge),
# policy-server's new reflectors (its log: "creating new reflector"), its RSS after the burst,
# the burst's time and the verdicts.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(2 8 32)

# shellcheck source=scripts/cluster/scratch-cluster.bash
source "$here/scratch-cluster.bash"
# shellcheck source=scripts/cluster/writes.bash
source "$here/writes.bash"
scratch_cluster cold-burst
bash "$here/cozystack-apps.sh" watcher "$dir" start


# metric NAME FILTER: the sum of NAME's samples whose labels contain FILTER (a regex).
metrics() { curl -sf --cacert "$APISERVER_CA" -H "Authorization: Bearer $ADMIN_TOKEN" "$APISERVER_URL/metrics"; }
sum() { # sum METRICS_FILE NAME REGEX
    grep "^$2{" "$1" | grep -E "$3" | awk '{ s += $NF } END { printf "%d", s }'
}

# The large pool: a Tenant, one VMInstance stored by the watcher as a template, then COLD_APPS
# copies of its release loaded directly (the policy reads releases, not the applications).
apps=${COLD_APPS:-10000}
bash "$here/policy-server.sh" up "$dir" --mode protect >/dev/null
app Tenant tenant-root big '{"resourceQuotas":{"cpu":"100000","memory":"100Ti","storage":"100Ti"}}' | kubectl create -f - >/dev/null
for _ in $(seq 100); do kubectl get namespace tenant-big >/dev/null 2>&1 && break; sleep 0.1; done
app VMInstance tenant-big template '{"instanceType":"u1.nano"}' | kubectl create -f - >/dev/null
for _ in $(seq 100); do kubectl get helmrelease -n tenant-big vm-instance-template >/dev/null 2>&1 && break; sleep 0.1; done
mkdir -p "$dir/load"
kubectl get helmrelease -n tenant-big vm-instance-template -o json |
    jq --argjson n "$apps" '[range($n) as $i | {apiVersion, kind,
        metadata: {name: "vm-instance-l\($i)", namespace: .metadata.namespace,
            labels: (.metadata.labels + {"apps.cozystack.io/application.name": "l\($i)"})},
        spec}]' >"$dir/load/helmrelease.json"
python3 "$here/load.py" "$dir/load"
echo "cold-burst: tenant-big holds $(kubectl get helmreleases -n tenant-big -o name | wc -l) releases"

printf '%4s %8s %9s %10s %7s %8s  %s\n' N "HR LISTs" "HR WATCHes" reflectors "RSS MB" "burst s" verdicts
k=0
for n in "${counts[@]}"; do
    k=$((k + 1))
    # A fresh policy-server: no reflector yet. (Its readiness probe write is a Tenant dry run
    # in `default`, which reads the lists too: the reflectors it made are not counted.)
    bash "$here/policy-server.sh" up "$dir" --mode protect >/dev/null
    run=$dir/run-$k
    mkdir -p "$run"
    for i in $(seq "$n"); do
        app VMInstance tenant-big "c${k}x$i" '{"instanceType":"u1.nano"}' >"$run/vm$i.json"
    done
    metrics >"$run/before"
    reflectors_before=$(grep -c 'creating new reflector' "$dir/policy-server/policy-server.log" || true)
    t0=$(date +%s.%N)
    burst "$run"
    took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    metrics >"$run/after"
    hr='resource="helmreleases"'
    lists=$(($(sum "$run/after" apiserver_request_total "$hr.*verb=\"LIST\"|verb=\"LIST\".*$hr") -
        $(sum "$run/before" apiserver_request_total "$hr.*verb=\"LIST\"|verb=\"LIST\".*$hr")))
    # Open watches (a gauge): those opened during the burst and still open after it.
    watches=$(($(sum "$run/after" apiserver_longrunning_requests "$hr.*verb=\"WATCH\"|verb=\"WATCH\".*$hr") -
        $(sum "$run/before" apiserver_longrunning_requests "$hr.*verb=\"WATCH\"|verb=\"WATCH\".*$hr")))
    reflectors=$(($(grep -c 'creating new reflector' "$dir/policy-server/policy-server.log" || true) - reflectors_before))
    rss=$(awk '/^VmRSS:/ { printf "%d", $2 / 1024 }' "/proc/$(cat "$dir/policy-server/pid")/status")
    verdicts=$(tally "$run" || true)
    printf '%4s %8s %9s %10s %7s %8s  %s\n' "$n" "$lists" "$watches" "$reflectors" "$rss" "$took" "$verdicts"
done
echo "(HR LISTs: HelmRelease LIST requests the API server served during the burst; HR WATCHes: its open"
echo " HelmRelease watches after the burst less those before it; reflectors: new ones in"
echo " policy-server's log, all kinds)"
