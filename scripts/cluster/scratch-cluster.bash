# Sourced by the scripts that run on a throwaway control plane (concurrency.sh, compare-replay.sh,
# cold-burst.sh, soak.sh): `scratch_cluster NAME` makes $dir (a new directory under $TMPDIR), starts
# the control plane there with Cozystack's apps stood in for, sources its env, and stops
# everything it or the caller started there (stand-in watcher, policy-server, control plane)
# and removes $dir on exit. Needs $here (scripts/cluster).
scratch_cleanup() {
    bash "$here/cozystack-apps.sh" watcher "$dir" stop >/dev/null 2>&1 || true
    bash "$here/policy-server.sh" down "$dir" >/dev/null 2>&1 || true
    bash "$here/control-plane.sh" down "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}

scratch_cluster() { # scratch_cluster NAME
    dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    trap scratch_cleanup EXIT
    bash "$here/control-plane.sh" up "$dir" >"$dir/up.log" 2>&1 || { cat "$dir/up.log" >&2; exit 1; }
    bash "$here/cozystack-apps.sh" install "$dir"
    # shellcheck disable=SC1091
    source "$dir/env"
}

# burst RUN: `kubectl create -f` of every RUN/*.json at once (each client waits for the others to
# start, then all are released together); leaves RUN/NAME.out (kubectl's output) and RUN/NAME.rc
# (admitted or refused) for each, and returns once every client is done.
burst() {
    local run=$1 f p pids=()
    for f in "$run"/*.json; do
        (
            while [ ! -e "$run/go" ]; do sleep 0.005; done
            if kubectl create --request-timeout 60s -f "$f" >"${f%.json}.out" 2>&1; then
                echo admitted >"${f%.json}.rc"
            else
                echo refused >"${f%.json}.rc"
            fi
        ) &
        pids+=($!)
    done
    sleep 0.5
    touch "$run/go"
    for p in "${pids[@]}"; do wait "$p" || true; done
}
