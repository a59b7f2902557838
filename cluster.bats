#!/usr/bin/env bats
# The policy in the real engine: kube-apiserver (scripts/cluster/control-plane.sh), the real
# CRDs, Cozystack's apps API stood in for (scripts/cluster/cozystack-apps.sh) and the real
# policy-server configured from deploy/ as the Kubewarden controller configures it, called by
# the API server through the ValidatingWebhookConfiguration built from the policy's rules
# (scripts/cluster/policy-server.sh). Every write goes through kubectl; every assertion is on
# the verdict and the message kubectl shows.
#
#   make cluster-test        (builds annotated-policy.wasm first)
#
# One control plane per run of this file (setup_file); each test makes its own tenant.

load scripts/cluster/bats-cluster.bash

setup_file() {
    cluster_up bash scripts/cluster/policy-server.sh up "$BATS_FILE_TMPDIR/cluster" --mode protect >/dev/null
}

teardown_file() {
    cd "$BATS_TEST_DIRNAME"
    if [ -s "$CLUSTER_DIR/stalls" ]; then
        echo "# engine stalls (each write sent again): $(wc -l <"$CLUSTER_DIR/stalls")" >&3
    fi
    bash scripts/cluster/policy-server.sh down "$CLUSTER_DIR" || true
    bash scripts/cluster/control-plane.sh down "$CLUSTER_DIR" || true
}

setup() {
    cd "$BATS_TEST_DIRNAME"
    # shellcheck disable=SC1091
    source "$CLUSTER_DIR/env"
}

# write VERB KIND PLURAL NAMESPACE NAME SPEC_JSON: `kubectl VERB` of the application (create or
# apply); when the API server admits it, stores its HelmRelease as Cozystack does before the
# next write. Sets $status and $output (kubectl's).
#
# The engine stalls now and then: a reflector's initial LIST hangs until kube-rs's 290 s watch
# timeout (../shared/README.md: about one live kwctl run in 75), a blocked host call is not
# interrupted, and the API server gives up at the webhook's timeoutSeconds. Such a write is sent
# once more (the reflectors that did sync are warm by then), and the stall is reported on fd 3
# with the reflectors policy-server created for it, so that it stays visible. Tests that expect
# the webhook to time out set STALL_RETRY=0.
write() {
    local verb=$1 kind=$2 plural=$3 ns=$4 name=$5 spec=$6
    local object="{\"apiVersion\":\"apps.cozystack.io/v1alpha1\",\"kind\":\"$kind\",\"metadata\":{\"name\":\"$name\",\"namespace\":\"$ns\"},\"spec\":$spec}"
    local log=$CLUSTER_DIR/policy-server/policy-server.log from
    from=$(wc -l <"$log")
    run kubectl "$verb" -f - <<<"$object"
    if [ "$status" -ne 0 ] && [[ "$output" == *'context deadline exceeded'* ]] && [ "${STALL_RETRY:-1}" = 1 ]; then
        {
            echo "# engine stall on kubectl $verb $kind $ns/$name: $output"
            tail -n +"$((from + 1))" "$log" | sed 's/\x1b\[[0-9;]*m//g' | grep -E 'creating new reflector|WARN|ERROR' | sed 's/^/#   /' | cut -c1-400
        } >&3
        echo "$kind $ns/$name" >>"$CLUSTER_DIR/stalls"
        run kubectl "$verb" -f - <<<"$object"
    fi
    echo "kubectl $verb $kind $ns/$name $spec -> $status: $output"
    if [ "$status" -eq 0 ]; then
        bash scripts/cluster/cozystack-apps.sh release "$CLUSTER_DIR" "$plural" "$ns" "$name"
    fi
}

# tenant NAME QUOTAS_JSON: Tenant NAME in tenant-root (owning tenant-NAME), admitted.
tenant() {
    write create Tenant tenants tenant-root "$1" "{\"resourceQuotas\":$2}"
    [ "$status" -eq 0 ]
}

vm() { # vm VERB NAMESPACE NAME INSTANCETYPE
    write "$1" VMInstance vminstances "$2" "$3" "{\"instanceType\":\"$4\"}"
}

denied() { # the output is the webhook's refusal, with the given text
    [ "$status" -ne 0 ]
    [[ "$output" == *'admission webhook "clusterwide-tenant-reservation.kubewarden.admission" denied the request: '* ]]
    [[ "$output" == *"$1"* ]]
}

@test "a write that fits the pool is admitted and stored" {
    tenant fits '{"cpu":"16","memory":"32Gi","storage":"100Gi"}'
    vm create tenant-fits vm1 u1.medium
    [ "$status" -eq 0 ]
    kubectl get helmrelease -n tenant-fits vm-instance-vm1 -o json |
        jq -e '.spec.values.instanceType == "u1.medium" and .metadata.labels["apps.cozystack.io/application.kind"] == "VMInstance"'
}

@test "a write that does not fit is refused with the figures the user sees" {
    tenant over '{"cpu":"16","memory":"32Gi","storage":"100Gi"}'
    vm create tenant-over web u1.medium
    [ "$status" -eq 0 ]
    vm create tenant-over db1 u1.2xlarge
    denied 'VMInstance tenant-over/db1: memory 32Gi exceeds pool tenant-over by 4Gi: budget 32Gi, reserved 4Gi by 1 application (largest: VMInstance tenant-over/web 4Gi), available 28Gi'
    run kubectl get vminstances -n tenant-over db1
    [ "$status" -ne 0 ]
}

@test "UPDATE: growth past the budget is refused, shrinking passes" {
    tenant resize '{"cpu":"8","memory":"16Gi","storage":"100Gi"}'
    vm create tenant-resize vm1 u1.large
    [ "$status" -eq 0 ]
    vm apply tenant-resize vm1 u1.2xlarge
    denied 'VMInstance tenant-resize/vm1: '
    denied 'exceeds pool tenant-resize'
    [ "$(kubectl get vminstances -n tenant-resize vm1 -o jsonpath='{.spec.instanceType}')" = u1.large ]
    vm apply tenant-resize vm1 u1.small
    [ "$status" -eq 0 ]
    [ "$(kubectl get helmrelease -n tenant-resize vm-instance-vm1 -o jsonpath='{.spec.values.instanceType}')" = u1.small ]
}

@test "Tenant writes: a child Tenant is charged its quota in the parent's pool" {
    tenant parent '{"cpu":"8","memory":"16Gi","storage":"100Gi"}'
    write create Tenant tenants tenant-parent big '{"resourceQuotas":{"cpu":"4","memory":"32Gi","storage":"10Gi"}}'
    denied 'Tenant tenant-parent/big: memory 32Gi exceeds pool tenant-parent by 16Gi: budget 16Gi'
    write create Tenant tenants tenant-parent small '{"resourceQuotas":{"cpu":"4","memory":"8Gi","storage":"10Gi"}}'
    [ "$status" -eq 0 ]
    kubectl get namespace tenant-parent-small
    # The child's quota is now taken from the parent: 8Gi left, a 16Gi VM does not fit.
    vm create tenant-parent vm1 u1.2xlarge
    denied 'VMInstance tenant-parent/vm1: cpu 8 exceeds pool tenant-parent by 4: budget 8, 4 carved out by 1 sub-tenant, reserved 0 by 0 applications, available 4; memory 32Gi exceeds pool tenant-parent by 24Gi: budget 16Gi, 8Gi carved out by 1 sub-tenant, reserved 0 by 0 applications, available 8Gi'
}

@test "Tenant modules: a quota that does not cover the modules the Tenant switches on is refused" {
    write create Tenant tenants tenant-root mods '{"etcd":true,"resourceQuotas":{"cpu":"1","memory":"1Gi","storage":"1Gi"}}'
    denied 'Tenant tenant-root/mods: cpu 1 does not cover what its namespaces will hold'
    denied 'by the modules it switches on (Etcd tenant-mods/etcd)'
    write create Tenant tenants tenant-root mods '{"etcd":true,"resourceQuotas":{"cpu":"8","memory":"8Gi","storage":"50Gi"}}'
    [ "$status" -eq 0 ]
    kubectl get helmrelease -n tenant-mods etcd info
    # Switching the module on in a quota that cannot hold it: refused on UPDATE too.
    write create Tenant tenants tenant-root nomods '{"resourceQuotas":{"cpu":"1","memory":"1Gi","storage":"1Gi"}}'
    [ "$status" -eq 0 ]
    write apply Tenant tenants tenant-root nomods '{"etcd":true,"resourceQuotas":{"cpu":"1","memory":"1Gi","storage":"1Gi"}}'
    denied 'Tenant tenant-root/nomods: cpu 1 does not cover'
}

@test "pending modules: a stored Tenant's modules count in the pool before their releases exist" {
    tenant pend '{"cpu":"4","memory":"16Gi","storage":"100Gi"}'
    write create Tenant tenants tenant-pend c '{"etcd":true}'
    [ "$status" -eq 0 ]
    # helm-controller has not created the module release (the tenant chart's render failed,
    # say, while a module's package is missing): the Tenant is stored, its Etcd is not.
    kubectl delete helmrelease -n tenant-pend-c etcd
    vm create tenant-pend vm1 u1.large
    denied 'VMInstance tenant-pend/vm1: cpu 2 exceeds pool tenant-pend by 1: budget 4, reserved 3 by 1 application (largest: Etcd tenant-pend-c/etcd (pending release) 3), available 1'
    vm create tenant-pend vm1 u1.medium
    [ "$status" -eq 0 ]
}

@test "monitor mode admits what protect refuses and logs it; protect then refuses it" {
    tenant monitor '{"cpu":"4","memory":"8Gi","storage":"100Gi"}'
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode monitor >/dev/null
    vm create tenant-monitor big u1.2xlarge
    [ "$status" -eq 0 ]
    # policy-server logs the answer it did not enforce.
    sed 's/\x1b\[[0-9;]*m//g' "$CLUSTER_DIR/policy-server/policy-server.log" |
        grep 'policy evaluation (monitor mode)' | grep 'allowed: false' |
        grep 'VMInstance tenant-monitor/big: cpu 8 exceeds pool tenant-monitor by 4' |
        grep -q 'memory 32Gi exceeds pool tenant-monitor by 24Gi'
    kubectl get helmrelease -n tenant-monitor vm-instance-big
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect >/dev/null
    vm create tenant-monitor big2 u1.2xlarge
    denied 'VMInstance tenant-monitor/big2: cpu 8 exceeds pool tenant-monitor'
}

@test "a policy-server ServiceAccount lacking a permission: the write is refused, naming it" {
    tenant rbac '{"cpu":"16","memory":"32Gi","storage":"100Gi"}'
    local rbac=$BATS_TEST_TMPDIR/rbac.yaml
    # deploy/'s RBAC without the instance types.
    python3 - deploy/policyserver.yaml >"$rbac" <<'PY'
import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if not d or d["kind"] == "PolicyServer":
        continue
    if d["kind"] == "ClusterRole":
        d["rules"] = [r for r in d["rules"] if "instancetype.kubevirt.io" not in r["apiGroups"]]
    print(json.dumps(d))
PY
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect --rbac "$rbac" >/dev/null
    STALL_RETRY=0 vm create tenant-rbac vm1 u1.medium
    local log
    log=$(sed 's/\x1b\[[0-9;]*m//g' "$CLUSTER_DIR/policy-server/policy-server.log")
    # Restore deploy/'s RBAC for what follows, whatever the verdict.
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect >/dev/null
    # Fail closed, and at once: the policy's check (deploy/ sets policyServerUser) names the
    # permission before its list, which the engine would retry until the webhook's 10 s ran out.
    denied "VMInstance tenant-rbac/vm1 cannot be evaluated: spec.instanceType: "
    denied "policy-server's user system:serviceaccount:kubewarden:tenant-reservation-policy-server may not list virtualmachineclusterinstancetypes.instancetype.kubevirt.io, so its lists cannot sync"
    run kubectl get vminstances -n tenant-rbac vm1
    [ "$status" -ne 0 ]
    # The list was never asked for, so the policy-server log has no forbidden LIST.
    run grep -c 'cannot list resource \\"virtualmachineclusterinstancetypes\\"' <<<"$log"
    [ "$output" = 0 ]
    # With deploy/'s RBAC back, the same write is admitted.
    vm create tenant-rbac vm1 u1.medium
    [ "$status" -eq 0 ]
}

@test "pool summaries: a fresh summary stands in for the other namespaces, a stale one is refused" {
    local ledger=${LEDGER:-$BATS_TEST_DIRNAME/tools/target/release/tenant-reservation}
    [ -x "$ledger" ] || skip "no ledger at $ledger (make cluster-test builds it)"
    tenant summ '{"cpu":"4","memory":"16Gi","storage":"100Gi"}'
    write create Tenant tenants tenant-summ dev '{}'
    [ "$status" -eq 0 ]
    vm create tenant-summ-dev vm1 u1.large
    [ "$status" -eq 0 ]
    # The summaries as the controller keeps them, computed once by the ledger (same code) and
    # stored as the controller stores them: the object, then its status.
    kubectl apply -f deploy/pool-summary/poolreservation-crd.yaml
    kubectl wait --for condition=established --timeout=30s crd/poolreservations.reservations.cozystack.io
    local summaries=$BATS_TEST_TMPDIR/summaries.json settings=$BATS_TEST_TMPDIR/settings.json
    "$ledger" ledger --settings deploy/clusteradmissionpolicy.yaml --summaries -o json >"$summaries"
    kubectl apply --server-side -f "$summaries"
    kubectl apply --server-side --subresource=status -f "$summaries"
    local renewed
    renewed=$(kubectl get poolreservation -n tenant-summ tenant-summ -o jsonpath='{.status.renewedAt}')
    # deploy/'s settings, every pool read from its summary, trusted 20 s.
    python3 - deploy/clusteradmissionpolicy.yaml >"$settings" <<'PY'
import json, sys, yaml
settings = yaml.safe_load(open(sys.argv[1]))["spec"]["settings"]
settings["poolSummary"] = {"mode": "required", "maxAgeSeconds": 20}
print(json.dumps(settings))
PY
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect --settings "$settings" >/dev/null
    # tenant-summ-dev's 2 cpu come from the summary; tenant-summ, written to, is listed.
    vm create tenant-summ vm2 u1.medium
    [ "$status" -eq 0 ]
    vm create tenant-summ big u1.large
    local log
    log=$(sed 's/\x1b\[[0-9;]*m//g' "$CLUSTER_DIR/policy-server/policy-server.log")
    denied 'VMInstance tenant-summ/big: cpu 2 exceeds pool tenant-summ by 1: budget 4, reserved 3 by 2 applications (largest: VMInstance tenant-summ-dev/vm1 2, VMInstance tenant-summ/vm2 1), available 1'
    # No list of tenant-summ-dev was made: policy-server has no reflector for it.
    run grep -c 'namespace.*tenant-summ-dev' <<<"$(grep 'creating new reflector' <<<"$log")"
    [ "$output" = 0 ]
    # Once the summary is older than 20 s (nothing renews it), a write is refused, naming it.
    local age=$(($(date +%s) - $(date -d "$renewed" +%s)))
    [ "$age" -gt 20 ] || sleep $((21 - age))
    vm create tenant-summ vm3 u1.small
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect >/dev/null
    denied 'VMInstance tenant-summ/vm3: pool tenant-summ cannot be checked (poolSummary.mode: required): PoolReservation tenant-summ renewed '
    denied ' ago, past the 20s a summary may be old (is its controller running?)'
}
