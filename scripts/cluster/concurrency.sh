#!/usr/bin/env bash
# Concurrent writes into one pool against the real engine: how far over budget do the admitted
# writes take a pool when CLIENTS clients create applications in it at once?
#
#   scripts/cluster/concurrency.sh [-r REPEATS] [-f FITS] [CLIENTS...]  (default: -r 3 -f 1 2 8 32)
#
# One control plane (control-plane.sh), the apps stand-in (cozystack-apps.sh) and the real
# policy-server in protect mode from deploy/ (policy-server.sh). For each CLIENTS and repeat: a
# fresh Tenant whose pool holds FITS (1) u1.small VMs by memory (budget FITS x 2Gi; cpu and
# storage ample), then CLIENTS processes, released together, each `kubectl create` one u1.small
# VMInstance (2Gi) there through cozystack-apps.sh write (the HelmRelease is stored once the
# write is admitted). Afterwards a probe write (a u1.4xlarge, larger than the budget) is refused by the policy with
# the pool's figures as it sees them, which the table quotes. Prints one line per run and a
# summary: admitted, over budget (admitted - FITS) x 2Gi, and the threat model's bound (the sum
# of what the concurrently admitted writes grew: all were concurrent, so admitted x 2Gi).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

repeats=3
FITS=1
while [ $# -gt 0 ]; do
    case "$1" in
    -r) repeats=${2:?-r REPEATS} && shift 2 ;;
    -f) FITS=${2:?-f FITS} && shift 2 ;;
    *) break ;;
    esac
done
clients=("$@")
[ ${#clients[@]} -gt 0 ] || clients=(2 8 32)

# shellcheck source=scripts/cluster/scratch-cluster.bash
source "$here/scratch-cluster.bash"
scratch_cluster concurrency
bash "$here/policy-server.sh" up "$dir" --mode protect >/dev/null
# Releases are stored by the stand-in's watcher (the smallest gap between an admitted write
# and its HelmRelease this stand-in offers; Cozystack's storage has none), so that clients are
# plain `kubectl create`.
bash "$here/cozystack-apps.sh" watcher "$dir" start
# shellcheck disable=SC1091
source "$dir/env"

app() { # app KIND NAMESPACE NAME SPEC_JSON > file
    printf '{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"%s","metadata":{"name":"%s","namespace":"%s"},"spec":%s}\n' "$1" "$3" "$2" "$4"
}

summary=()
echo "clients repeat admitted refused over_budget bound  policy_after"
for n in "${clients[@]}"; do
    for r in $(seq "$repeats"); do
        t=c${n}r${r}
        ns=tenant-$t
        app Tenant tenant-root "$t" '{"resourceQuotas":{"cpu":"100","memory":"'"$((FITS * 2))"'Gi","storage":"1Ti"}}' >"$dir/tenant.json"
        kubectl create -f "$dir/tenant.json" >/dev/null
        for _ in $(seq 50); do kubectl get helmrelease -n "$ns" info >/dev/null 2>&1 && break; sleep 0.1; done
        run=$dir/run-$t
        mkdir -p "$run"
        for i in $(seq "$n"); do
            app VMInstance "$ns" "vm$i" '{"instanceType":"u1.small"}' >"$run/vm$i.json"
        done
        burst "$run"
        admitted=$(grep -l admitted "$run"/*.rc 2>/dev/null | wc -l)
        refused=$((n - admitted))
        stored=$(kubectl get vminstances -n "$ns" -o name | wc -l)
        [ "$stored" -eq "$admitted" ] || echo "concurrency: $ns holds $stored VMInstances, $admitted admitted" >&2
        over=$((admitted > FITS ? (admitted - FITS) * 2 : 0))
        # docs/threat-model.md: at most the sum of what the concurrently admitted writes grew.
        bound=$((admitted * 2))
        # The policy's own view of the pool once the writes have settled (its reflectors caught up).
        sleep 1
        # (a probe larger than the budget: always refused, it only reads the figures)
        app VMInstance "$ns" probe '{"instanceType":"u1.4xlarge"}' >"$run/probe.json"
        probe=$(kubectl create -f "$run/probe.json" 2>&1 || true)
        after=$(grep -o 'budget [^(]*' <<<"$probe" | head -1 | sed 's/, *$//' || true)
        [ -n "$after" ] || after="probe admitted: $(tail -1 <<<"$probe")"
        printf '%7s %6s %8s %7s %10s %5s  %s\n' "$n" "$r" "$admitted" "$refused" "${over}Gi" "${bound}Gi" "$after"
        summary+=("$n $admitted $over $bound")
    done
done

echo
echo "clients  admitted(min/max of $repeats)  over budget Gi (max)  within the bound (over <= admitted x 2Gi)"
for n in "${clients[@]}"; do
    printf '%s\n' "${summary[@]}" | awk -v n="$n" -v fits="$FITS" '$1 == n {
        if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2; if ($3 > over) over = $3
        if ($3 > $4) bad++ }
        END { printf "%7s  %d/%d (pool fits %d)  %d  %s\n", n, min, max, fits, over, bad ? "NO" : "yes" }'
done
