#!/usr/bin/env bash
# A plain-HTTP OCI registry on 127.0.0.1 for tests (Debian's docker-registry, installed with
# apt-get when missing; its own service on :5000 is not used):
#
#   local-registry.sh start DIR    start one on a free port, storage in DIR; prints the port
#   local-registry.sh stop DIR     stop what `start DIR` started (safe to call twice)
#
# DIR also gets sources.yaml (the registry as a kwctl / policy-server insecure source).
set -euo pipefail
cmd=${1:?usage: local-registry.sh start|stop DIR} dir=${2:?usage: local-registry.sh start|stop DIR}

stop() {
    local pid
    pid=$(cat "$dir/registry.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$dir/registry.pid"
}

start() {
    local bin port started=false
    bin=$(command -v docker-registry || true)
    [ -z "$bin" ] && [ -x /usr/bin/docker-registry ] && bin=/usr/bin/docker-registry
    if [ -z "$bin" ]; then
        local sudo=()
        [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
        echo "local-registry: installing docker-registry (apt-get)" >&2
        export DEBIAN_FRONTEND=noninteractive
        if ! "${sudo[@]}" apt-get install -y -q docker-registry >&2; then
            "${sudo[@]}" apt-get update -q >&2
            "${sudo[@]}" apt-get install -y -q docker-registry >&2
        fi
        bin=/usr/bin/docker-registry
    fi
    mkdir -p "$dir/storage"
    port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
    # A free port, bind-tested by the registry itself; a few tries in case another takes it.
    for _ in 1 2 3 4 5; do
        port=$((20000 + (RANDOM % 20000)))
        port_in_use "$port" && continue
        cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: local-registry-$RANDOM$RANDOM
EOF
        "$bin" serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
        echo $! >"$dir/registry.pid"
        for _ in $(seq 1 50); do
            if curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null; then
                started=true
                break
            fi
            kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null || break
            sleep 0.1
        done
        $started && break
        stop
    done
    if ! $started; then
        echo "local-registry: docker-registry did not start:" >&2
        cat "$dir/registry.log" >&2 || true
        exit 1
    fi
    printf 'insecure_sources:\n  - "127.0.0.1:%s"\n' "$port" >"$dir/sources.yaml"
    echo "local-registry: docker-registry $("$bin" --version 2>/dev/null | awk '{print $NF}') on 127.0.0.1:$port (pid $(cat "$dir/registry.pid"))" >&2
    echo "$port"
}

case "$cmd" in
start) start ;;
stop) stop ;;
*) echo "usage: local-registry.sh start|stop DIR" >&2; exit 2 ;;
esac
