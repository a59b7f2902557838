#!/usr/bin/env bats
# `kubectl cozystack-reservations` against a real API server (scripts/cluster/control-plane.sh,
# the real CRDs, Cozystack's apps stood in for by scripts/cluster/cozystack-apps.sh), run the
# way users run it: through kubectl, which finds the plugin on PATH.
#
#   make plugin-test        (builds the plugin first)
#
# One control plane per run of this file; the tenants are made once in setup_file (no policy
# runs here: the plugin only reads).
#   tenant-foo: cpu 4, memory 8Gi; vm1, vm2 u1.medium (1 CPU, 4Gi each), vm3 u1.small
#               (1 CPU, 2Gi): memory 10Gi, over budget by 2Gi.
#   tenant-bar: cpu 8, memory 16Gi; vm1 u1.medium: fits.

bats_require_minimum_version 1.5.0

load scripts/cluster/bats-cluster.bash

setup_file() {
    cluster_up make_tenants >/dev/null
}

teardown_file() {
    cd "$BATS_TEST_DIRNAME"
    [ -f "$CLUSTER_DIR/proxy.pid" ] && kill "$(cat "$CLUSTER_DIR/proxy.pid")" 2>/dev/null
    bash scripts/cluster/control-plane.sh down "$CLUSTER_DIR" || true
}

setup() {
    cd "$BATS_TEST_DIRNAME"
    # shellcheck disable=SC1091
    source "$CLUSTER_DIR/env"
    PATH="${PLUGIN_DIR:?make plugin-test sets PLUGIN_DIR}:$PATH"
}

app() { # app KIND NAMESPACE NAME SPEC_JSON: stored as Cozystack stores it
    bash scripts/cluster/cozystack-apps.sh write "$CLUSTER_DIR" create -f - \
        <<<"{\"apiVersion\":\"apps.cozystack.io/v1alpha1\",\"kind\":\"$1\",\"metadata\":{\"name\":\"$3\",\"namespace\":\"$2\"},\"spec\":$4}"
}

make_tenants() {
    # shellcheck disable=SC1091
    source "$CLUSTER_DIR/env"
    app Tenant tenant-root foo '{"resourceQuotas":{"cpu":"4","memory":"8Gi","storage":"50Gi"}}'
    app Tenant tenant-root bar '{"resourceQuotas":{"cpu":"8","memory":"16Gi","storage":"50Gi"}}'
    app VMInstance tenant-foo vm1 '{"instanceType":"u1.medium"}'
    app VMInstance tenant-foo vm2 '{"instanceType":"u1.medium"}'
    app VMInstance tenant-foo vm3 '{"instanceType":"u1.small"}'
    app VMInstance tenant-bar vm1 '{"instanceType":"u1.medium"}'
}

# The shipped ClusterAdmissionPolicy with the settings of FILE (YAML) merged in.
deploy_policy_with() {
    python3 - deploy/clusteradmissionpolicy.yaml "$1" <<'PY' | kubectl apply -f - >/dev/null
import json, sys, yaml
cap = yaml.safe_load(open(sys.argv[1]))
cap["spec"]["settings"].update(yaml.safe_load(open(sys.argv[2])) or {})
print(json.dumps(cap))
PY
}

@test "through kubectl: the deployed ClusterAdmissionPolicy's settings, else the shipped ones, and the output says which; a kind its rules leave out is named" {
    kubectl delete clusteradmissionpolicies --all >/dev/null
    run --separate-stderr kubectl cozystack-reservations
    [ "$status" -eq 0 ]
    [[ "$stderr" == *'settings: the settings shipped with this plugin (deploy/clusteradmissionpolicy.yaml): no ClusterAdmissionPolicy in the cluster runs this policy'* ]]
    grep -Eq '^tenant-foo +memory +8Gi +0 +10Gi \(3\) +0 +over budget by 2Gi +VMInstance tenant-foo/vm1 4Gi$' <<<"$output"
    grep -Eq '^tenant-bar +memory +16Gi +0 +4Gi \(1\) +12Gi +ok +VMInstance tenant-bar/vm1 4Gi$' <<<"$output"

    # Deployed with other settings: the plugin judges as the deployed policy does.
    deploy_policy_with examples/plugin/vm-overhead.yaml
    run --separate-stderr kubectl cozystack-reservations -n tenant-bar
    [ "$status" -eq 0 ]
    [[ "$stderr" == 'settings: the deployed ClusterAdmissionPolicy tenant-reservation' ]]
    grep -Eq '^tenant-bar +memory +16Gi +0 +4352Mi \(1\) +12032Mi +ok' <<<"$output"
    ! grep -q tenant-foo <<<"$output"

    # A definition the deployed policy's rules leave out is named, with what to do.
    kubectl apply -f - >/dev/null <<'YAML'
apiVersion: cozystack.io/v1alpha1
kind: ApplicationDefinition
metadata:
  name: streams
spec:
  application:
    kind: Stream
    singular: stream
    plural: streams
    openAPISchema: '{"type":"object"}'
  release:
    prefix: stream-
    chartRef:
      kind: ExternalArtifact
      name: cozystack-stream
      namespace: cozy-system
YAML
    run --separate-stderr kubectl cozystack-reservations -n tenant-bar -o json
    kubectl delete applicationdefinition streams >/dev/null
    [ "$status" -eq 0 ]
    [[ "$stderr" == *"warning: ApplicationDefinition streams: the rules of ClusterAdmissionPolicy tenant-reservation do not name streams, so its writes are admitted unchecked; add streams to spec.rules[0].resources and to the audit scanner's ClusterRole (scripts/generate-rules.sh prints both lists)"* ]]
    [ "$(jq -r '.warnings | map(select(startswith("ApplicationDefinition streams:"))) | length' <<<"$output")" -eq 1 ]
    kubectl delete clusteradmissionpolicies --all >/dev/null
}

@test "-o yaml, -o json and -o wide; -n keeps the pool that holds the namespace, and names one that none holds" {
    run --separate-stderr kubectl cozystack-reservations -n tenant-foo -o yaml
    [ "$status" -eq 0 ]
    python3 -c 'import sys, yaml
d = yaml.safe_load(sys.stdin)
assert {l["pool"] for l in d["pools"]} == {"tenant-foo"}, d
assert d["settings"].startswith("the settings shipped with this plugin"), d
mem = [l for l in d["pools"] if l["key"] == "memory"][0]
assert (mem["reserved"], mem["overBudget"], mem["reservedBy"]) == ("10Gi", "2Gi", 3), mem' <<<"$output"
    run --separate-stderr kubectl cozystack-reservations -A -o json
    [ "$status" -eq 0 ]
    [ "$(jq -r '[.pools[].pool] | unique | join(",")' <<<"$output")" = "tenant-bar,tenant-foo" ]
    run --separate-stderr kubectl cozystack-reservations -o wide
    [ "$status" -eq 0 ]
    grep -Eq '^POOL +KEY +BUDGET +CARVED \(BY\) +RESERVED \(BY\) +AVAILABLE +STATUS +NAMESPACES +LARGEST HOLDERS$' <<<"$output"
    run --separate-stderr kubectl cozystack-reservations -n tenant-nowhere
    [ "$status" -eq 2 ]
    [[ "$stderr" == *'error: no pool holds namespace tenant-nowhere'* ]]
}

@test "--fail-over-budget: exit 3 naming the pool over budget; 0 where every pool shown fits" {
    run --separate-stderr kubectl cozystack-reservations --fail-over-budget
    [ "$status" -eq 3 ]
    [[ "$stderr" == *'over budget: tenant-foo memory'* ]]
    run --separate-stderr kubectl cozystack-reservations --fail-over-budget -n tenant-bar
    [ "$status" -eq 0 ]
}

@test "--compare: the same cluster under other settings, pool by pool and application by application" {
    run --separate-stderr kubectl cozystack-reservations --compare examples/plugin/vm-overhead.yaml -n tenant-foo
    [ "$status" -eq 0 ]
    [[ "$output" == *'now:  the settings shipped with this plugin'*'then: the settings file examples/plugin/vm-overhead.yaml'* ]]
    grep -Eq '^tenant-foo +memory +8Gi +10Gi → 11008Mi +0 +over budget by 2Gi +over budget by 2816Mi$' <<<"$output"
    grep -q '^    VMInstance tenant-foo/vm3: 2Gi → 2304Mi$' <<<"$output"
    grep -q '^2 of 3 pool keys change; 6 application charges change$' <<<"$output"

    # Another version's ledger, as that version wrote it, is what runs now.
    kubectl cozystack-reservations --settings examples/plugin/vm-overhead.yaml -o json --holders all >"$BATS_TEST_TMPDIR/before.json"
    run --separate-stderr kubectl cozystack-reservations --compare "$BATS_TEST_TMPDIR/before.json" -o json
    [ "$status" -eq 0 ]
    [ "$(jq -r '.pools[] | select(.pool == "tenant-bar" and .key == "cpu") | .changes[0] | "\(.application) \(.now) \(.then)"' <<<"$output")" = "VMInstance tenant-bar/vm1 1100m 1" ]
}

@test "RBAC: a user who may not list is told what is missing, where; examples/plugin/rbac.yaml is enough; impersonation as kubectl does it" {
    run --separate-stderr kubectl cozystack-reservations --as alice
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"settings: the settings shipped with this plugin (deploy/clusteradmissionpolicy.yaml): cannot list clusteradmissionpolicies.policies.kubewarden.io: 403: "* ]]
    [[ "$stderr" == *"error: "*"$APISERVER_URL: the user may not list "*"403 Forbidden: "*'User "alice" cannot list resource'* ]]
    [[ "$stderr" == *'examples/plugin/rbac.yaml grants it'* ]]

    kubectl apply -f examples/plugin/rbac.yaml >/dev/null
    run --separate-stderr kubectl cozystack-reservations -o json
    local as_admin=$output
    run --separate-stderr kubectl cozystack-reservations -o json --as alice --as-group cozystack-reservations-readers
    [ "$status" -eq 0 ]
    [ "$output" = "$as_admin" ]
    # kubectl agrees on what alice may do.
    [ "$(kubectl auth can-i list helmreleases.helm.toolkit.fluxcd.io -A --as alice --as-group cozystack-reservations-readers)" = yes ]

    run --separate-stderr kubectl cozystack-reservations --as-group cozystack-reservations-readers
    [ "$status" -eq 2 ]
    [[ "$stderr" == *'--as-group needs --as'* ]]
    kubectl delete -f examples/plugin/rbac.yaml >/dev/null
}

@test "a tenant's view: with what Cozystack's tenant roles read, the policy's figures for the tenant's pools, and what it cannot see" {
    app Tenant tenant-root qux '{"resourceQuotas":{"cpu":"4","memory":"8Gi","storage":"20Gi"}}'
    app Tenant tenant-qux dev '{"resourceQuotas":{"cpu":"1","memory":"2Gi","storage":"5Gi"}}'
    app Tenant tenant-qux open '{}'
    app VMInstance tenant-qux vm1 '{"instanceType":"u1.medium"}'
    app VMInstance tenant-qux-dev vm1 '{"instanceType":"u1.small"}'
    app VMInstance tenant-qux-open vm1 '{"instanceType":"u1.small"}'
    kubectl apply -f scripts/cluster/cozystack-tenant-roles.yaml >/dev/null
    # As the tenant chart binds it: qux's viewers in qux and below; dev's in dev only.
    local ns
    for ns in tenant-qux tenant-qux-dev tenant-qux-open; do
        kubectl create rolebinding cozy:tenant:view -n "$ns" --clusterrole cozy:tenant:view --group tenant-qux-view >/dev/null
    done
    kubectl create rolebinding cozy:tenant:view:dev -n tenant-qux-dev --clusterrole cozy:tenant:view --group tenant-qux-dev-view >/dev/null
    [ "$(kubectl auth can-i list helmreleases.helm.toolkit.fluxcd.io -n tenant-qux --as carol --as-group tenant-qux-view)" = no ]

    run --separate-stderr kubectl cozystack-reservations -n tenant-qux -o json --holders all
    [ "$status" -eq 0 ]
    local as_admin=$output
    run --separate-stderr kubectl cozystack-reservations -n tenant-qux -o json --holders all --as carol --as-group tenant-qux-view
    [ "$status" -eq 0 ]
    [[ "$stderr" == *"view: the user may not list helmreleases cluster-wide"*"view: tenant tenant-qux, as its Cozystack roles read it"* ]]
    [[ "$stderr" == *'note: tenant-qux declares cpu, memory, storage; any other key counts in an ancestor'* ]]
    # The same pools, figure for figure, holder for holder, as the cluster's view.
    [ "$(jq -cS .pools <<<"$output")" = "$(jq -cS .pools <<<"$as_admin")" ]
    [ "$(jq -r .view.tenant <<<"$output")" = tenant-qux ]
    # memory: 8Gi, 2Gi carved out by dev, vm1 (4Gi) and open's vm1 (2Gi) reserved.
    [ "$(jq -r '.pools[] | select(.key == "memory") | "\(.carved) \(.reserved) \(.available)"' <<<"$output")" = "2Gi 6Gi 0" ]

    # A sub-tenant's own view, and a viewer of the sub-tenant only.
    run --separate-stderr kubectl cozystack-reservations -n tenant-qux-dev --as dave --as-group tenant-qux-dev-view
    [ "$status" -eq 0 ]
    grep -Eq '^tenant-qux-dev +memory +2Gi +0 +2Gi \(1\) +0 +ok +VMInstance tenant-qux-dev/vm1 2Gi$' <<<"$output"
    run --separate-stderr kubectl cozystack-reservations -n tenant-qux --as dave --as-group tenant-qux-dev-view
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"error: $APISERVER_URL: the user may not get resourcequotas in tenant-qux: 403"*"needs Cozystack's cozy:tenant:view"* ]]

    # A tenant that declares no quota has no pool of its own: nothing to show, and why.
    run --separate-stderr kubectl cozystack-reservations -n tenant-qux-open --as carol --as-group tenant-qux-view
    [ "$status" -eq 0 ]
    [[ "$stderr" == *"note: tenant-qux-open declares no quota (no ResourceQuota tenant-quota): its applications count in an ancestor's pool"* ]]
    ! grep -q '^tenant-' <<<"$output"

    # A whole-cluster question from a tenant's view is refused, saying why.
    run --separate-stderr kubectl cozystack-reservations -n tenant-qux --as carol --as-group tenant-qux-view --compare examples/plugin/vm-overhead.yaml
    [ "$status" -eq 2 ]
    [[ "$stderr" == *'--what-if and --compare judge the whole cluster'* ]]
}

@test "pagination: --chunk-size 1 reads every LIST a page at a time and draws the same ledger" {
    lists() { # LIST requests of HelmReleases the API server has served so far
        kubectl get --raw /metrics | awk '/^apiserver_request_total\{/ && /resource="helmreleases"/ && /verb="LIST"/ {n += $NF} END {print n + 0}'
    }
    local releases before after
    releases=$(kubectl get helmreleases -A -o name | wc -l)
    run --separate-stderr kubectl cozystack-reservations -o json --chunk-size 0
    local whole=$output
    before=$(lists)
    run --separate-stderr kubectl cozystack-reservations -o json --chunk-size 1
    [ "$status" -eq 0 ]
    after=$(lists)
    [ "$output" = "$whole" ]
    # One page per HelmRelease (and one for the end), at least.
    [ "$((after - before))" -ge "$releases" ]
}

@test "proxies as kubectl takes them: a kubeconfig's proxy-url is used; HTTPS_PROXY never for a loopback server; a dead proxy is an error naming the server" {
    local log=$BATS_TEST_TMPDIR/proxy.log port
    : >"$log"
    python3 scripts/cluster/connect-proxy.py "$log" >"$BATS_TEST_TMPDIR/proxy.port" &
    echo $! >"$CLUSTER_DIR/proxy.pid"
    for _ in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/proxy.port" ] && break; sleep 0.1; done
    port=$(cat "$BATS_TEST_TMPDIR/proxy.port")
    local through=$BATS_TEST_TMPDIR/through-proxy.kubeconfig
    kubectl config view --raw --minify | python3 -c 'import sys, yaml
c = yaml.safe_load(sys.stdin)
c["clusters"][0]["cluster"]["proxy-url"] = sys.argv[1]
print(yaml.safe_dump(c))' "http://127.0.0.1:$port" >"$through"

    run --separate-stderr kubectl cozystack-reservations --kubeconfig "$through" -o json
    [ "$status" -eq 0 ]
    grep -q "^CONNECT ${APISERVER_URL#https://}$" "$log"
    # kubectl goes the same way.
    : >"$log"
    kubectl --kubeconfig "$through" get namespaces tenant-foo >/dev/null
    grep -q "^CONNECT ${APISERVER_URL#https://}$" "$log"

    # HTTPS_PROXY set to nothing that answers: a loopback server is reached directly, by both.
    HTTPS_PROXY=http://127.0.0.1:9 run --separate-stderr kubectl cozystack-reservations -o json
    [ "$status" -eq 0 ]
    HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1 kubectl get namespaces tenant-foo >/dev/null

    # A proxy-url that does not answer: an error that names the server.
    kill "$(cat "$CLUSTER_DIR/proxy.pid")"
    run --separate-stderr kubectl cozystack-reservations --kubeconfig "$through" --request-timeout 5s
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"error: $APISERVER_URL: cannot list clusteradmissionpolicies.policies.kubewarden.io: "* ]]
}

@test "--request-timeout: a server that does not answer is an error naming it, once the time is up" {
    # A listener that accepts and never answers.
    python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)' >"$BATS_TEST_TMPDIR/silent.port" &
    local silent=$!
    for _ in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/silent.port" ] && break; sleep 0.1; done
    local port config=$BATS_TEST_TMPDIR/silent.kubeconfig
    port=$(cat "$BATS_TEST_TMPDIR/silent.port")
    kubectl config view --raw --minify | python3 -c 'import sys, yaml
c = yaml.safe_load(sys.stdin)
c["clusters"][0]["cluster"]["server"] = sys.argv[1]
print(yaml.safe_dump(c))' "https://127.0.0.1:$port" >"$config"
    local started=$SECONDS
    run --separate-stderr kubectl cozystack-reservations --kubeconfig "$config" --request-timeout 2s
    kill "$silent"
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"error: https://127.0.0.1:$port: cannot list clusteradmissionpolicies.policies.kubewarden.io: "* ]]
    # Bounded by the timeout, not by kube-rs's 295 s default.
    [ "$((SECONDS - started))" -lt 60 ]
}

@test "release: the archive krew installs and its manifest agree; the plugin runs from it through kubectl" {
    local dist=$BATS_TEST_TMPDIR/dist home=$BATS_TEST_TMPDIR/krew-bin
    bash scripts/plugin-package.sh "$PLUGIN_DIR/kubectl-cozystack_reservations" linux amd64 "$dist" >/dev/null
    bash scripts/krew-manifest.sh v1.2.3 "$dist" >"$dist/cozystack-reservations.yaml"
    # The manifest's entry is the archive: checksum, file names, selector.
    python3 - "$dist" <<'PY'
import hashlib, sys, tarfile, yaml
dist = sys.argv[1]
m = yaml.safe_load(open(f"{dist}/cozystack-reservations.yaml"))
assert (m["apiVersion"], m["kind"], m["metadata"]["name"], m["spec"]["version"]) == (
    "krew.googlecontainertools.github.com/v1alpha2", "Plugin", "cozystack-reservations", "v1.2.3"), m
[p] = m["spec"]["platforms"]
archive = p["uri"].rsplit("/", 1)[1]
assert p["uri"].startswith("https://github.com/cozystack/tenant-reservation-policy/releases/download/v1.2.3/"), p
assert p["selector"]["matchLabels"] == {"os": "linux", "arch": "amd64"}, p
assert hashlib.sha256(open(f"{dist}/{archive}", "rb").read()).hexdigest() == p["sha256"], p
names = tarfile.open(f"{dist}/{archive}").getnames()
assert sorted(names) == ["LICENSE", p["bin"]], names
assert all(f["from"] in names for f in p["files"]), p
PY
    # Installed as krew installs it (the archive's bin on PATH): kubectl finds it.
    mkdir -p "$home"
    tar -xzf "$dist"/kubectl-cozystack_reservations_linux_amd64.tar.gz -C "$home"
    PATH="$home:/usr/bin:/bin:$(dirname "$(command -v kubectl)")" run kubectl cozystack-reservations --version
    [ "$status" -eq 0 ]
    [[ "$output" == "kubectl cozystack-reservations "* ]]
    # A tampered archive is refused.
    echo x >>"$dist"/kubectl-cozystack_reservations_linux_amd64.tar.gz
    run bash scripts/krew-manifest.sh v1.2.3 "$dist"
    [ "$status" -eq 1 ]
    [[ "$output" == *'does not match its checksum'* ]]
}
