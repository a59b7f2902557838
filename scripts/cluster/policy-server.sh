#!/usr/bin/env bash
# The real Kubewarden policy-server running this policy against a control plane made by
# control-plane.sh, configured the way kubewarden-controller configures it from deploy/:
#
#   policy-server.sh up DIR [OPTIONS]   start; prints its URL (https://127.0.0.1:PORT) on stdout
#   policy-server.sh down DIR           stop it (safe to call twice); removes the webhook
#   policy-server.sh policies [OPTIONS] print the policies.yml it would run (no cluster needed)
#
# DIR is the directory given to `control-plane.sh up` (DIR/env is sourced). `up`:
#   - reads the ClusterAdmissionPolicy `tenant-reservation` from `kubectl kustomize deploy/`
#     when deploy/kustomization.yaml exists, else from deploy/clusteradmissionpolicy.yaml;
#   - writes DIR/policy-server/policies.yml as the controller writes the policy server's
#     ConfigMap (policyserver_controller_configmap.go): one entry keyed by the policy id
#     `clusterwide-tenant-reservation` with namespacedName, module, policyMode, allowedToMutate,
#     contextAwareResources, settings, message, timeoutEvalSeconds (the per-policy evaluation
#     limit, which overrides --policy-timeout) and hostCapabilities ["*"] (a cluster-wide
#     policy); the
#     module is the local annotated-policy.wasm (file://) instead of the registry reference;
#   - applies deploy/policyserver.yaml minus the PolicyServer object (namespace `kubewarden`
#     first): the ServiceAccount, its ClusterRole and binding;
#   - runs policy-server with a serving certificate from DIR/pki/ca.{crt,key} and a kubeconfig
#     holding a token of that ServiceAccount (`kubectl create token`), so the policy's lookups
#     go through RBAC exactly as in a cluster: a permission missing from deploy/ fails there;
#   - waits (bounded) for its readiness endpoint, then registers the
#     ValidatingWebhookConfiguration the controller builds for the policy (rules,
#     failurePolicy, timeoutSeconds, namespaceSelector, objectSelector of the CAP; path
#     /validate/clusterwide-tenant-reservation; clientConfig.url and the run's caBundle), and
#     waits until the API server calls it.
#
# OPTIONS (each also an environment variable):
#   --mode monitor|protect     policyMode (PS_MODE; default: the CAP's spec.mode)
#   --settings FILE            settings (YAML or JSON) instead of the CAP's (PS_SETTINGS)
#   --policy-timeout SECONDS   policy-server --policy-timeout (PS_POLICY_TIMEOUT; default 2,
#                              policy-server's own default, which the controller leaves alone)
#   --module PATH              the module (PS_MODULE; default annotated-policy.wasm of this
#                              checkout, which must be built: `make annotated-policy.wasm`)
#   --rbac FILE                RBAC to apply instead of deploy/policyserver.yaml's (PS_RBAC;
#                              e.g. a ClusterRole lacking a permission)
#   --no-webhook               do not register the ValidatingWebhookConfiguration (PS_WEBHOOK=0)
#   --log-level LEVEL          policy-server's log level (PS_LOG_LEVEL; default info)
#   --apiserver URL            the API server policy-server talks to (PS_APISERVER; default the
#                              control plane's; e.g. a delaying proxy in front of it)
#
#   policy-server.sh restart DIR [OPTIONS]
#       start it again after it died (or was killed) on the ports, kubeconfig and webhook of the
#       last `up`, as a restarted pod behind the same Service; the log is appended to. Waits
#       for readiness, not for the webhook.
#
# Files in DIR/policy-server/: policies.yml, kubeconfig (the ServiceAccount's), webhook.yaml,
# policy-server.{crt,key} (in DIR/pki), policy-server.log, pid, url, port.
# The binary comes from find-tool.sh policy-server ($POLICY_SERVER, PATH, ../shared/tools).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

POLICY_ID=clusterwide-tenant-reservation
CAP_NAME=tenant-reservation
SA_NAMESPACE=kubewarden
SA_NAME=tenant-reservation-policy-server
WEBHOOK_NAME=$POLICY_ID

die() {
    echo "policy-server.sh: $*" >&2
    exit 1
}

# YAML documents on stdin as JSON, one a line (PyYAML; jq does the rest).
yaml_json() {
    python3 -c 'import json, sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d is not None: print(json.dumps(d, separators=(",", ":")))'
}

# free_ports N: N distinct ports free on 127.0.0.1 now (all held open until each is chosen).
free_ports() {
    python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

mode=${PS_MODE:-}
settings=${PS_SETTINGS:-}
policy_timeout=${PS_POLICY_TIMEOUT:-2}
module=${PS_MODULE:-$repo/annotated-policy.wasm}
rbac=${PS_RBAC:-}
webhook=${PS_WEBHOOK:-1}
log_level=${PS_LOG_LEVEL:-info}
apiserver=${PS_APISERVER:-}

parse_options() {
    while [ $# -gt 0 ]; do
        case "$1" in
        --mode) mode=${2:?--mode monitor|protect} && shift 2 ;;
        --settings) settings=${2:?--settings FILE} && shift 2 ;;
        --policy-timeout) policy_timeout=${2:?--policy-timeout SECONDS} && shift 2 ;;
        --module) module=${2:?--module PATH} && shift 2 ;;
        --rbac) rbac=${2:?--rbac FILE} && shift 2 ;;
        --no-webhook) webhook=0 && shift ;;
        --log-level) log_level=${2:?--log-level LEVEL} && shift 2 ;;
        --apiserver) apiserver=${2:?--apiserver URL} && shift 2 ;;
        *) die "unknown option $1" ;;
        esac
    done
    case "${mode:-monitor}" in monitor | protect) ;; *) die "--mode is monitor or protect, not $mode" ;; esac
    [ -z "$settings" ] || [ -f "$settings" ] || die "no settings file $settings"
}

# The deploy/ manifests as one YAML stream (kustomize when there is a kustomization).
deploy_stream() {
    if [ -f "$repo/deploy/kustomization.yaml" ]; then
        kubectl kustomize "$repo/deploy"
    else
        cat "$repo/deploy/clusteradmissionpolicy.yaml"
        echo "---"
        cat "$repo/deploy/policyserver.yaml"
    fi
}

# The documents of a YAML stream on stdin whose kind is one of KINDS (and, when NAME is not
# empty, named NAME), one JSON document a line (PyYAML: no yq needed).
select_docs() { # select_docs NAME KIND...
    python3 -c '
import json, sys, yaml
name, kinds = sys.argv[1], sys.argv[2:]
for d in yaml.safe_load_all(sys.stdin):
    if isinstance(d, dict) and d.get("kind") in kinds and (not name or d.get("metadata", {}).get("name") == name):
        print(json.dumps(d))
' "$@"
}

# The ClusterAdmissionPolicy as JSON.
cap_json() {
    deploy_stream | select_docs "$CAP_NAME" ClusterAdmissionPolicy |
        head -1 | grep . || die "no ClusterAdmissionPolicy $CAP_NAME in deploy/"
}

# policies.yml (JSON, as the controller writes it) on stdout.
policies() {
    local cap module_url settings_json
    cap=$(cap_json)
    module_url="file://$(cd "$(dirname "$module")" && pwd)/$(basename "$module")"
    if [ -n "$settings" ]; then
        settings_json=$(python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1])) or {}))' "$settings")
    else
        settings_json=$(jq -c '.spec.settings // {}' <<<"$cap")
    fi
    jq --arg id "$POLICY_ID" --arg mod "$module_url" --arg mode "$mode" \
        --argjson settings "$settings_json" '
        {($id): {
            namespacedName: {Namespace: "", Name: .metadata.name},
            "module": $mod,
            policyMode: (if $mode != "" then $mode else (.spec.mode // "protect") end),
            allowedToMutate: (.spec.mutating // false),
            contextAwareResources: (.spec.contextAwareResources // []),
            settings: $settings,
            message: .spec.message,
            timeoutEvalSeconds: .spec.timeoutEvalSeconds,
            hostCapabilities: ["*"]
        } | with_entries(select(.value != null))}' <<<"$cap"
}

# The ValidatingWebhookConfiguration the controller registers for the policy.
webhook_config() { # webhook_config URL CA_FILE
    local cap ca
    cap=$(cap_json)
    ca=$(base64 -w0 <"$2")
    jq --arg name "$WEBHOOK_NAME" --arg url "$1/validate/$POLICY_ID" --arg ca "$ca" '{
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        metadata: {name: $name, labels: {"kubewarden": "true", "kubewarden/policy-server": .spec.policyServer}},
        webhooks: [{
            name: ($name + ".kubewarden.admission"),
            clientConfig: {url: $url, caBundle: $ca},
            rules: (.spec.rules // []),
            failurePolicy: (.spec.failurePolicy // "Fail"),
            matchPolicy: (.spec.matchPolicy // "Equivalent"),
            namespaceSelector: (.spec.namespaceSelector // {}),
            objectSelector: (.spec.objectSelector // {}),
            sideEffects: "None",
            admissionReviewVersions: ["v1"],
            timeoutSeconds: (.spec.timeoutSeconds // 10)
        }]}' <<<"$cap"
}

# Starts policy-server on $port/$ready_port and waits for its readiness probe; returns 1 when it
# exits first (the caller reads the log), dies when it is not ready in time.
start_policy_server() {
    (
        cd "$ps_dir"
        KUBECONFIG=$ps_dir/kubeconfig exec "$bin" \
            --addr 127.0.0.1 --port "$port" --readiness-probe-port "$ready_port" \
            --cert-file "$dir/pki/policy-server.crt" --key-file "$dir/pki/policy-server.key" \
            --policies "$ps_dir/policies.yml" --policies-download-dir "$ps_dir/downloads" \
            --sigstore-cache-dir "$ps_dir/sigstore" "${trust[@]}" \
            --policy-timeout "$policy_timeout" --log-level "$log_level" --log-no-color \
            >>"$ps_dir/policy-server.log" 2>&1
    ) &
    pid=$!
    echo "$pid" >"$ps_dir/pid"
    url=https://127.0.0.1:$port
    echo "$url" >"$ps_dir/url"
    echo "$port" >"$ps_dir/port"
    echo "$ready_port" >"$ps_dir/ready-port"

    local deadline=$((SECONDS + ${PS_READY_TIMEOUT:-120}))
    until curl -sf "http://127.0.0.1:$ready_port/readiness" >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$ps_dir/pid"
            return 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            tail -20 "$ps_dir/policy-server.log" >&2
            down "$dir"
            die "policy-server not ready after ${PS_READY_TIMEOUT:-120}s (log: $ps_dir/policy-server.log)"
        fi
        sleep 0.2
    done
}

up() {
    local dir=$1 ps_dir bin port ready_port token pid deadline url
    shift
    parse_options "$@"
    [ -f "$dir/env" ] || die "no $dir/env: run control-plane.sh up $dir first"
    dir=$(cd "$dir" && pwd)
    # shellcheck disable=SC1091
    source "$dir/env"
    bin=$(bash "$here/find-tool.sh" policy-server)
    [ -n "$bin" ] || die "no policy-server (\$POLICY_SERVER, PATH, ../shared/tools)"
    [ -f "$module" ] || die "no module $module (make annotated-policy.wasm)"
    ps_dir=$dir/policy-server
    [ -f "$ps_dir/pid" ] && down "$dir"
    mkdir -p "$ps_dir/downloads"

    policies >"$ps_dir/policies.yml"

    # RBAC of deploy/ (or the override): namespace first, then everything but the PolicyServer.
    kubectl create namespace "$SA_NAMESPACE" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    if [ -n "$rbac" ]; then
        kubectl apply -f "$rbac" >/dev/null
    else
        deploy_stream | select_docs "" ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding |
            kubectl apply -f - >/dev/null
    fi
    token=$(kubectl create token "$SA_NAME" -n "$SA_NAMESPACE" --duration 2h)
    cat >"$ps_dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster: { server: "${apiserver:-$APISERVER_URL}", certificate-authority: "$APISERVER_CA" }
users:
  - name: $SA_NAME
    user: { token: "$token" }
contexts:
  - name: test
    context: { cluster: test, user: $SA_NAME }
current-context: test
EOF

    [ -f "$dir/pki/policy-server.crt" ] || bash "$here/serving-cert.sh" "$dir/pki" policy-server 127.0.0.1 localhost
    local trust=()
    local tc attempt
    tc="$(dirname "$bin")/offline-trust-config.json"
    [ -f "$tc" ] && trust=(--sigstore-trust-config "$tc")
    # A port found free can be taken before policy-server binds it (the API server's
    # connections to etcd draw local ports from the same range): on "Address already in
    # use" start again on new ports, up to three times.
    for attempt in 1 2 3; do
        read -r port ready_port < <(free_ports 2)
        : >"$ps_dir/policy-server.log"
        start_policy_server && break
        grep -q "Address already in use" "$ps_dir/policy-server.log" && [ "$attempt" -lt 3 ] || {
            tail -20 "$ps_dir/policy-server.log" >&2
            die "policy-server exited before it was ready (log: $ps_dir/policy-server.log)"
        }
        echo "policy-server.sh: port $port or $ready_port was taken; starting again on new ports" >&2
    done

    if [ "$webhook" = 1 ]; then
        webhook_config "$url" "$dir/pki/ca.crt" >"$ps_dir/webhook.yaml"
        kubectl apply -f "$ps_dir/webhook.yaml" >/dev/null
        # The API server picks a new webhook configuration up within a second or so, and admits
        # writes without it until then: when the apps.cozystack.io kinds are served, wait
        # (bounded) until a server-side dry run of a Tenant reaches this policy-server.
        if kubectl get crd tenants.apps.cozystack.io >/dev/null 2>&1; then
            deadline=$((SECONDS + 30))
            until grep -q "/validate/$POLICY_ID" "$ps_dir/policy-server.log"; do
                [ $SECONDS -lt $deadline ] || die "the API server does not call the webhook after 30s"
                printf '%s' '{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"Tenant","metadata":{"name":"webhook-probe","namespace":"default"},"spec":{}}' |
                    kubectl create --dry-run=server -f - >/dev/null 2>&1 || true
                sleep 0.2
            done
        fi
    fi
    echo "$url"
}

restart() {
    local dir=$1 ps_dir bin port ready_port pid url
    shift
    parse_options "$@"
    dir=$(cd "$dir" && pwd)
    ps_dir=$dir/policy-server
    [ -f "$ps_dir/ready-port" ] || die "no $ps_dir/ready-port: run up first"
    bin=$(bash "$here/find-tool.sh" policy-server)
    port=$(cat "$ps_dir/port")
    ready_port=$(cat "$ps_dir/ready-port")
    local trust=() tc
    tc="$(dirname "$bin")/offline-trust-config.json"
    [ -f "$tc" ] && trust=(--sigstore-trust-config "$tc")
    echo "--- policy-server.sh restart" >>"$ps_dir/policy-server.log"
    start_policy_server || die "policy-server exited before it was ready (log: $ps_dir/policy-server.log)"
    echo "$url"
}

down() {
    local dir=$1 ps_dir pid
    ps_dir=$dir/policy-server
    if [ -f "$dir/env" ] && [ -f "$ps_dir/webhook.yaml" ]; then
        # shellcheck disable=SC1091
        (source "$dir/env" && kubectl delete validatingwebhookconfiguration "$WEBHOOK_NAME" \
            --ignore-not-found --timeout 10s >/dev/null 2>&1) || true
        rm -f "$ps_dir/webhook.yaml"
    fi
    [ -f "$ps_dir/pid" ] || return 0
    pid=$(cat "$ps_dir/pid")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$ps_dir/pid"
}

case "${1:-}" in
up)
    shift
    up "${1:?usage: policy-server.sh up DIR [OPTIONS]}" "${@:2}"
    ;;
down) down "${2:?usage: policy-server.sh down DIR}" ;;
restart)
    shift
    restart "${1:?usage: policy-server.sh restart DIR [OPTIONS]}" "${@:2}"
    ;;
policies)
    shift
    parse_options "$@"
    policies
    ;;
*)
    echo "usage: policy-server.sh up DIR [OPTIONS] | down DIR | policies [OPTIONS]" >&2
    exit 2
    ;;
esac
