#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for tests: etcd and kube-apiserver, RBAC on,
# certificates and keys made for each run, the real CRDs installed ($CRDS_DIR, else the copies
# vendored in test_data/crds, whose SOURCES names each one's origin).
#
#   control-plane.sh up DIR     start; writes DIR/kubeconfig (admin), DIR/env (source it), logs
#   control-plane.sh down DIR   stop what `up DIR` started (safe to call twice)
#   control-plane.sh stop DIR etcd|kube-apiserver [SIGNAL]   stop one (fault tests)
#   control-plane.sh start DIR etcd|kube-apiserver           start it again as `up` did
#   control-plane.sh check      exit 0 when etcd and kube-apiserver are found; else one line why
#
# Ports are picked free on 127.0.0.1 at each start, so runs do not collide. DIR/env exports
# KUBECONFIG, APISERVER_URL, APISERVER_CA (the CA that signed the serving certificate; it also
# signs the certificates a test makes for its own servers: DIR/pki/ca.{crt,key}) and ADMIN_TOKEN.
# Admin is `system:masters` by a static token; every other identity goes through RBAC
# (`kubectl create token SA` works: the API server signs service-account tokens itself).
# Binaries come from scripts/cluster/find-tool.sh (environment, PATH, ../shared/tools).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

find_tool() { bash "$here/find-tool.sh" "$1"; }

crds_dir() {
    local d
    for d in "${CRDS_DIR:-}" "$repo/test_data/crds"; do
        [ -n "$d" ] && [ -f "$d/helm.toolkit.fluxcd.io_helmreleases.yaml" ] && { (cd "$d" && pwd); return; }
    done
    echo "control-plane: no CRDs (looked at \$CRDS_DIR, test_data/crds)" >&2
    return 1
}

# free_ports N: N distinct ports free on 127.0.0.1 now (all held open until each is chosen).
free_ports() {
    python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            echo "control-plane: $what not ready" >&2
            return 1
        fi
        sleep 0.2
    done
}

fail_with_log() { # fail_with_log LOG: its last lines on stderr (CI shows nothing else), then exit 1
    echo "control-plane: last lines of $1:" >&2
    tail -n 20 "$1" | sed 's/^/  | /' >&2
    exit 1
}

make_pki() { # make_pki DIR
    local pki=$1/pki
    mkdir -p "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test-ca" \
        -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
    bash "$here/serving-cert.sh" "$pki" apiserver "127.0.0.1" "localhost,kubernetes,kubernetes.default,kubernetes.default.svc"
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

start_etcd() { # start_etcd DIR BIN CLIENT PEER METRICS
    local dir=$1 bin=$2 help cmd
    # Read the whole help before matching: `--help | grep -q` under pipefail fails when grep
    # exits first and etcd dies of SIGPIPE on its next line (it did, once, in CI).
    help=$("$bin" --help 2>&1 || true)
    if grep -q -- '-client-url' <<<"$help"; then
        # ../shared/tools/etcd: a minimal command line.
        cmd=("$bin" --data-dir "$dir/etcd" --client-url "http://127.0.0.1:$3"
            --peer-url "http://127.0.0.1:$4" --metrics-url "http://127.0.0.1:$5")
    else
        # Debian's etcd-server and upstream etcd.
        cmd=("$bin" --data-dir "$dir/etcd" --name test
            --listen-client-urls "http://127.0.0.1:$3" --advertise-client-urls "http://127.0.0.1:$3"
            --listen-peer-urls "http://127.0.0.1:$4" --initial-advertise-peer-urls "http://127.0.0.1:$4"
            --initial-cluster "test=http://127.0.0.1:$4" --listen-metrics-urls "http://127.0.0.1:$5")
    fi
    # Kept, so that `start DIR etcd` starts it again as it was (fault tests).
    printf '%s\n' "${cmd[@]}" >"$dir/etcd.cmd"
    echo "curl -sf http://127.0.0.1:$3/health" >"$dir/etcd.ready"
    launch "$dir" etcd
}

# launch DIR NAME: runs the command line kept in DIR/NAME.cmd (one argument a line) in the
# background, its output appended to DIR/NAME.log, its pid in DIR/NAME.pid.
launch() {
    local cmd
    mapfile -t cmd <"$1/$2.cmd"
    "${cmd[@]}" >>"$1/$2.log" 2>&1 &
    echo $! >"$1/$2.pid"
}

up() {
    local dir=$1 etcd apiserver crds
    etcd=$(find_tool etcd)
    apiserver=$(find_tool kube-apiserver)
    [ -n "$etcd" ] && [ -n "$apiserver" ] || exit 2
    crds=$(crds_dir)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    make_pki "$dir"

    local client peer metrics port token
    read -r client peer metrics port < <(free_ports 4)
    start_etcd "$dir" "$etcd" "$client" "$peer" "$metrics"
    wait_for 30 etcd curl -sf "http://127.0.0.1:$client/health" || fail_with_log "$dir/etcd.log"

    token=$(openssl rand -hex 16)
    echo "$token,admin,admin,system:masters" >"$dir/pki/tokens.csv"
    printf '%s\n' "$apiserver" \
        --etcd-servers "http://127.0.0.1:$client" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
        --tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
        --client-ca-file "$dir/pki/ca.crt" \
        --token-auth-file "$dir/pki/tokens.csv" \
        --authorization-mode RBAC \
        --service-account-issuer https://kubernetes.default.svc \
        --service-account-key-file "$dir/pki/sa.pub" \
        --service-account-signing-key-file "$dir/pki/sa.key" \
        --service-cluster-ip-range 10.96.0.0/24 \
        --allow-privileged=false \
        >"$dir/kube-apiserver.cmd"
    : >"$dir/kube-apiserver.log"
    launch "$dir" kube-apiserver

    local url=https://127.0.0.1:$port
    cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster: { server: "$url", certificate-authority: "$dir/pki/ca.crt" }
users:
  - name: admin
    user: { token: "$token" }
contexts:
  - name: test
    context: { cluster: test, user: admin }
current-context: test
EOF
    cat >"$dir/env" <<EOF
export KUBECONFIG="$dir/kubeconfig"
export APISERVER_URL="$url"
export APISERVER_CA="$dir/pki/ca.crt"
export ADMIN_TOKEN="$token"
export ETCD_METRICS_URL="http://127.0.0.1:$metrics"
EOF
    echo "curl -sf --cacert $dir/pki/ca.crt -H 'Authorization: Bearer $token' $url/readyz" >"$dir/kube-apiserver.ready"
    wait_for 60 kube-apiserver curl -sf --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $token" "$url/readyz" ||
        fail_with_log "$dir/kube-apiserver.log"

    KUBECONFIG=$dir/kubeconfig kubectl apply -f "$crds" >"$dir/crds.log"
    KUBECONFIG=$dir/kubeconfig kubectl wait --for condition=Established --timeout 60s crd --all >>"$dir/crds.log"
    echo "control-plane: up at $url (source $dir/env)" >&2
}

# stop DIR NAME [SIGNAL]: stops one of them (etcd, kube-apiserver), TERM then KILL, or with SIGNAL
# alone (KILL: a crash); `start DIR NAME` starts it again with the same command line and data
# (fault tests: fault.bats). start waits (bounded) until it answers its health check.
stop_one() {
    local dir=$1 name=$2 sig=${3:-TERM} pid
    [ -f "$dir/$name.pid" ] || return 0
    pid=$(cat "$dir/$name.pid")
    if kill -s "$sig" "$pid" 2>/dev/null; then
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/$name.pid"
}

start_one() {
    local dir=$1 name=$2 ready
    [ -f "$dir/$name.cmd" ] || { echo "control-plane: no $dir/$name.cmd (run up first)" >&2; return 1; }
    [ -f "$dir/$name.pid" ] && kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null && return 0
    launch "$dir" "$name"
    ready=$(cat "$dir/$name.ready")
    wait_for 60 "$name" bash -c "$ready" || fail_with_log "$dir/$name.log"
}

down() {
    local dir=$1 pid name
    for name in kube-apiserver etcd; do
        [ -f "$dir/$name.pid" ] || continue
        pid=$(cat "$dir/$name.pid")
        if kill "$pid" 2>/dev/null; then
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$dir/$name.pid"
    done
}

check() {
    local missing=()
    [ -n "$(find_tool etcd 2>/dev/null)" ] || missing+=(etcd)
    [ -n "$(find_tool kube-apiserver 2>/dev/null)" ] || missing+=(kube-apiserver)
    command -v kubectl >/dev/null || missing+=(kubectl)
    command -v openssl >/dev/null || missing+=(openssl)
    command -v curl >/dev/null || missing+=(curl)
    command -v jq >/dev/null || missing+=(jq)
    python3 -c 'import yaml' 2>/dev/null || missing+=("python3 with PyYAML")
    crds_dir >/dev/null 2>&1 || missing+=("the CRDs (\$CRDS_DIR, test_data/crds)")
    if [ ${#missing[@]} -gt 0 ]; then
        echo "no ${missing[*]} (environment, PATH, \$SHARED_DIR/tools or ../shared/tools beside the checkout)"
        return 1
    fi
}

case "${1:-}" in
up) up "${2:?usage: control-plane.sh up DIR}" ;;
stop) stop_one "${2:?usage: control-plane.sh stop DIR NAME [SIGNAL]}" "${3:?etcd|kube-apiserver}" "${4:-TERM}" ;;
start) start_one "${2:?usage: control-plane.sh start DIR NAME}" "${3:?etcd|kube-apiserver}" ;;
down) down "${2:?usage: control-plane.sh down DIR}" ;;
check) check ;;
*)
    echo "usage: control-plane.sh up DIR | down DIR | stop DIR NAME [SIGNAL] | start DIR NAME | check" >&2
    exit 2
    ;;
esac
