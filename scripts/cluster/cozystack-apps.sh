#!/usr/bin/env bash
# A stand-in for Cozystack's apps API on a control plane made by control-plane.sh (Cozystack's
# aggregated API server is not buildable here; docs/real-engine.md says where this differs):
#
#   cozystack-apps.sh install DIR [ROOT_VALUES]
#       the apps.cozystack.io/v1alpha1 kinds as CRDs made from the real ApplicationDefinitions
#       (cozystack_stand_in.py crds), the ApplicationDefinitions themselves (the stock CRD
#       prunes spec.reservation), the instance types Cozystack ships, and the root tenant as the
#       platform installs it: namespace tenant-root and HelmRelease tenant-root (kind Tenant,
#       name root) whose values are ROOT_VALUES (a YAML/JSON file; default {}).
#   cozystack-apps.sh write DIR VERB [KUBECTL ARGS...]
#       `kubectl VERB ARGS -o json` of applications (create, apply, replace, patch, edit...), as
#       the caller (KUBECONFIG, --as, --token... in ARGS); when the API server accepted the write
#       (admission included), writes what Cozystack's storage writes for each application, as
#       admin: its HelmRelease, and for a Tenant the tenant chart's namespace and module
#       HelmReleases. kubectl's stderr (a refusal) is passed through, with its exit status.
#   cozystack-apps.sh release DIR PLURAL NAMESPACE NAME
#       what `write` does after an accepted write, for an application already stored: reads it
#       (as admin) and writes its HelmRelease (and a Tenant's tree) as Cozystack's storage does
#   cozystack-apps.sh watcher DIR start|stop
#       instead of `write`: a watcher (cozystack_stand_in.py watch) that stores the HelmRelease
#       of every application the API server admits, whoever writes it (plain kubectl works);
#       its log is DIR/stand-in-watcher.log
#   cozystack-apps.sh crds
#       print the generated CRDs (JSON, one a line)
#
# The reference data comes from $COZYSTACK_REF, else the copy in test_data/reference (the same
# files, vendored: test_data/reference/README.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() {
    echo "cozystack-apps.sh: $*" >&2
    exit 1
}

ref_dir() {
    local d
    for d in "${COZYSTACK_REF:-}" "$repo/test_data/reference"; do
        [ -n "$d" ] && [ -d "$d/applicationdefinitions" ] && { (cd "$d" && pwd); return; }
    done
    die "no Cozystack reference data (looked at \$COZYSTACK_REF, test_data/reference)"
}

stand_in() { python3 "$here/cozystack_stand_in.py" "$@"; }

env_of() { # env_of DIR: source the control plane's env
    [ -f "$1/env" ] || die "no $1/env: run control-plane.sh up $1 first"
    # shellcheck disable=SC1091
    source "$1/env"
}

install() {
    local dir=$1 root_values=${2:-} ref values
    env_of "$dir"
    ref=$(ref_dir)
    stand_in crds "$ref/applicationdefinitions" | kubectl apply -f - >/dev/null
    kubectl wait --for condition=Established --timeout 60s crd -l cozystack.io/stand-in=true >/dev/null
    kubectl apply -f "$ref/applicationdefinitions" >/dev/null
    # The instance types (the same files also hold preferences, whose CRD is not installed).
    cat "$ref/instancetypes/templates_instancetypes.yaml" "$ref/instancetypes/templates_extra-instancetypes.yaml" |
        python3 -c 'import json, sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if isinstance(d, dict) and d.get("kind") == "VirtualMachineClusterInstancetype": print(json.dumps(d))' |
        kubectl apply -f - >/dev/null
    kubectl create namespace tenant-root --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    values='{}'
    if [ -n "$root_values" ]; then
        values=$(python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1])) or {}))' "$root_values")
    fi
    # The root tenant is installed by the platform, not through the apps API: its HelmRelease
    # is what the tenant chart's parent lookups find.
    jq -n --argjson values "$values" '{
        apiVersion: "apps.cozystack.io/v1alpha1", kind: "Tenant",
        metadata: {name: "root", namespace: "tenant-root"}, spec: $values}' |
        stand_in store "$ref/applicationdefinitions" |
        jq -c 'if .kind == "HelmRelease" and .metadata.name == "tenant-root" then .metadata.namespace = "tenant-root" else . end' |
        jq -c 'select(.kind == "HelmRelease" and .metadata.namespace == "tenant-root")' |
        kubectl apply -f - >/dev/null
}

write() {
    local dir=$1 out err rc=0 ref
    shift
    [ $# -ge 1 ] || die "usage: cozystack-apps.sh write DIR VERB [KUBECTL ARGS...]"
    env_of "$dir"
    ref=$(ref_dir)
    out=$(mktemp)
    err=$(mktemp)
    kubectl "$@" -o json >"$out" 2>"$err" || rc=$?
    cat "$err" >&2
    if [ -s "$out" ]; then
        # Cozystack's storage writes the release as itself (admin here), whoever the caller.
        stand_in store "$ref/applicationdefinitions" <"$out" |
            KUBECONFIG=$dir/kubeconfig kubectl apply -f - >/dev/null || rc=$?
        jq -r 'if has("items") then .items[] else . end | "\(.kind | ascii_downcase)/\(.metadata.name) written"' "$out" || true
    fi
    rm -f "$out" "$err"
    return "$rc"
}

release() { # release DIR PLURAL NAMESPACE NAME
    local dir=$1 ref
    env_of "$dir"
    ref=$(ref_dir)
    kubectl get "$2.apps.cozystack.io" -n "$3" "$4" -o json |
        stand_in store "$ref/applicationdefinitions" |
        kubectl apply -f - >/dev/null
}

watcher() { # watcher DIR start|stop
    local dir=$1 pidfile=$1/stand-in-watcher.pid pid
    case "$2" in
    start)
        env_of "$dir"
        [ -f "$pidfile" ] && watcher "$dir" stop
        python3 -u "$here/cozystack_stand_in.py" watch "$(ref_dir)/applicationdefinitions" \
            >"$dir/stand-in-watcher.log" 2>&1 &
        echo $! >"$pidfile"
        for _ in $(seq 100); do
            grep -q 'stand-in: watching' "$dir/stand-in-watcher.log" 2>/dev/null && return 0
            kill -0 "$(cat "$pidfile")" 2>/dev/null || break
            sleep 0.1
        done
        cat "$dir/stand-in-watcher.log" >&2
        die "the watcher did not start"
        ;;
    stop)
        [ -f "$pidfile" ] || return 0
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        rm -f "$pidfile"
        ;;
    *) die "usage: cozystack-apps.sh watcher DIR start|stop" ;;
    esac
}

case "${1:-}" in
watcher) watcher "${2:?usage: cozystack-apps.sh watcher DIR start|stop}" "${3:?start|stop}" ;;
release) release "${2:?usage: cozystack-apps.sh release DIR PLURAL NAMESPACE NAME}" "${3:?PLURAL}" "${4:?NAMESPACE}" "${5:?NAME}" ;;
install) install "${2:?usage: cozystack-apps.sh install DIR [ROOT_VALUES]}" "${3:-}" ;;
write)
    shift
    write "$@"
    ;;
crds) stand_in crds "$(ref_dir)/applicationdefinitions" ;;
*)
    echo "usage: cozystack-apps.sh install DIR [ROOT_VALUES] | write DIR VERB [KUBECTL ARGS...] | release DIR PLURAL NAMESPACE NAME | crds" >&2
    exit 2
    ;;
esac
