#!/usr/bin/env bats
# Faults in the real engine (docs/threat-model.md, "Faults"): the policy behind kube-apiserver
# and the real policy-server as cluster.bats runs them, with a fault injected while writes are
# in flight: policy-server killed, kube-apiserver restarted, etcd stopped, the ServiceAccount's
# permission removed, the API server slowed for policy-server's lists, a stored release the
# policy cannot read. Each test asserts verdicts and final states, never times:
#   - nothing is admitted that a healthy engine refuses (a write larger than the whole budget
#     is refused whatever else happens; a pool every write fits in ends within its budget);
#   - every refusal says why (the policy's figures, the webhook's failure, or the API server's
#     error), as kubectl shows it;
#   - writes pass again once the fault is gone.
# Times (until writes pass again) are printed on fd 3 and appended to $FAULT_FIGURES if set.
#
#   make fault-test          (builds annotated-policy.wasm and the ledger first)
#
# The final state of each pool is checked by the ledger (tools/ledger, `tenant-reservation
# ledger --fail-over-budget`, $LEDGER), which reads the live cluster as an operator would.
#
# One control plane per run of this file; each test makes its own tenants. Releases are
# stored by the stand-in's watcher (cozystack-apps.sh watcher), so every write is a plain
# `kubectl create`, concurrent ones included.

load scripts/cluster/bats-cluster.bash
load scripts/cluster/writes.bash

setup_file() {
    export LEDGER=${LEDGER:-$BATS_TEST_DIRNAME/tools/target/release/tenant-reservation}
    [ -x "$LEDGER" ] || { echo "no ledger at $LEDGER (make fault-test builds it)" >&3; return 1; }
    cluster_up start_engine
}

start_engine() {
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect >/dev/null &&
        bash scripts/cluster/cozystack-apps.sh watcher "$CLUSTER_DIR" start 3>&-
}

teardown_file() {
    cd "$BATS_TEST_DIRNAME" || return 1
    [ -f "$CLUSTER_DIR/delay-proxy.pid" ] && kill "$(cat "$CLUSTER_DIR/delay-proxy.pid")" 2>/dev/null
    bash scripts/cluster/cozystack-apps.sh watcher "$CLUSTER_DIR" stop || true
    bash scripts/cluster/policy-server.sh down "$CLUSTER_DIR" || true
    bash scripts/cluster/control-plane.sh down "$CLUSTER_DIR" || true
}

setup() {
    cd "$BATS_TEST_DIRNAME" || return 1
    # shellcheck disable=SC1091
    source "$CLUSTER_DIR/env"
}

figure() { # figure TEXT: a measured figure, on fd 3 and in $FAULT_FIGURES
    echo "# $BATS_TEST_DESCRIPTION: $*" >&3
    [ -z "${FAULT_FIGURES:-}" ] || echo "$BATS_TEST_DESCRIPTION: $*" >>"$FAULT_FIGURES"
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }


vm() { # vm NAMESPACE NAME INSTANCETYPE [KUBECTL ARGS]: kubectl create; sets $status, $output
    local ns=$1 name=$2 type=$3
    shift 3
    run kubectl create --request-timeout 60s "$@" -f - <<<"$(app VMInstance "$ns" "$name" "{\"instanceType\":\"$type\"}")"
    echo "kubectl create VMInstance $ns/$name $type $* -> $status: $output"
}

# tenant NAME MEMORY: Tenant NAME in tenant-root (cpu and storage ample), admitted, and its
# namespace stored by the watcher.
tenant() {
    run kubectl create -f - <<<"$(app Tenant tenant-root "$1" "{\"resourceQuotas\":{\"cpu\":\"100\",\"memory\":\"$2\",\"storage\":\"1Ti\"}}")"
    echo "tenant $1 $2 -> $status: $output"
    [ "$status" -eq 0 ]
    for _ in $(seq 100); do kubectl get namespace "tenant-$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}

denied() { # the output is the policy's refusal, with the given text
    [ "$status" -ne 0 ]
    [[ "$output" == *'admission webhook "clusterwide-tenant-reservation.kubewarden.admission" denied the request: '* ]]
    [[ "$output" == *"$1"* ]]
}

# prepare RUN NAMESPACE PREFIX INSTANCETYPE COUNT: COUNT writes waiting in RUN for `go RUN`.
prepare() {
    local run=$1 ns=$2 prefix=$3 type=$4 count=$5 i
    mkdir -p "$run"
    for i in $(seq "$count"); do
        app VMInstance "$ns" "$prefix$i" "{\"instanceType\":\"$type\"}" >"$run/$ns.$prefix$i.json"
        (
            while [ ! -e "$run/go" ]; do sleep 0.005; done
            if kubectl create --request-timeout 60s -f "$run/$ns.$prefix$i.json" >"$run/$ns.$prefix$i.out" 2>&1; then
                echo admitted >"$run/$ns.$prefix$i.rc"
            else
                echo refused >"$run/$ns.$prefix$i.rc"
            fi
        ) 3>&- &
        echo $! >>"$run/pids"
    done
}

go() { touch "$1/go"; }

# go_until RUN PATTERN N TRIES: releases the writes of RUN, then waits until policy-server's log
# holds N more lines with PATTERN, or TRIES × 50 ms.
go_until() {
    local log=$CLUSTER_DIR/policy-server/policy-server.log from
    from=$(grep -c "$2" "$log" || true)
    go "$1"
    for _ in $(seq "$4"); do
        [ "$(grep -c "$2" "$log")" -lt $((from + $3)) ] || break
        sleep 0.05
    done
}

finish() { # finish RUN: waits for every write of RUN
    local p
    while read -r p; do
        while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
    done <"$1/pids"
}

# settle NAMESPACE...: until the watcher has stored a release for every stored VMInstance.
settle() {
    local ns apps releases
    for ns in "$@"; do
        for _ in $(seq 300); do
            apps=$(kubectl get vminstances -n "$ns" -o name | wc -l)
            releases=$(kubectl get helmreleases -n "$ns" -l apps.cozystack.io/application.kind=VMInstance -o name | wc -l)
            [ "$apps" -eq "$releases" ] && break
            sleep 0.1
        done
        [ "$apps" -eq "$releases" ] || { echo "settle: $ns holds $apps VMInstances, $releases releases"; return 1; }
    done
}

# reserved NAMESPACE: the memory (Gi) the stored VMInstance releases of NAMESPACE reserve, from
# the instance types in the cluster (the final state, read without the policy), rounded up.
reserved() {
    kubectl get virtualmachineclusterinstancetypes -o json >"$BATS_TEST_TMPDIR/types.json"
    kubectl get helmreleases -n "$1" -l apps.cozystack.io/application.kind=VMInstance -o json >"$BATS_TEST_TMPDIR/releases.json"
    jq -n --slurpfile t "$BATS_TEST_TMPDIR/types.json" --slurpfile r "$BATS_TEST_TMPDIR/releases.json" \
        'def gi: if endswith("Gi") then rtrimstr("Gi") | tonumber elif endswith("Mi") then (rtrimstr("Mi") | tonumber) / 1024 else error("size " + .) end;
        $t[0] as $types | $r[0] as $releases
        | ($types.items | map({key: .metadata.name, value: (.spec.memory.guest | gi)}) | from_entries) as $size
        | [$releases.items[] | $size[.spec.values.instanceType]] | add // 0 | ceil'
}

held() { # held NAMESPACE: "reserved XGi by N application" as the policy words the stored pool
    local r n
    r=$(reserved "$1")
    n=$(stored_types "$1" | wc -l)
    [ "$r" = 0 ] && echo "reserved 0 by $n application" || echo "reserved ${r}Gi by $n application"
}

stored_types() { # stored_types NAMESPACE: the instance types of its stored VMInstances, one a line
    kubectl get vminstances -n "$1" -o json | jq -r '.items[].spec.instanceType'
}

none_stored() { # none_stored NAMESPACE INSTANCETYPE: fails when a VMInstance of that type is stored
    local n
    n=$(stored_types "$1" | grep -cx "$2" || true)
    echo "$1: $n stored VMInstances of $2"
    [ "$n" -eq 0 ]
}

# ledger_ok NAMESPACE...: the ledger finds the pool of each NAMESPACE within its budget (exit 0;
# 3 is a pool over budget, 2 a cluster it cannot read), from the cluster's final state.
ledger_ok() {
    local ns
    for ns in "$@"; do
        run "$LEDGER" ledger --fail-over-budget --settings deploy/clusteradmissionpolicy.yaml -n "$ns"
        echo "ledger -n $ns -> $status: $output"
        [ "$status" -eq 0 ]
    done
}

# recover NAMESPACE [DEADLINE]: seconds until a server-side dry run of a u1.nano VMInstance in
# NAMESPACE is admitted (the webhook answers; dry runs go through admission and store nothing).
recover() {
    local ns=$1 deadline=$((SECONDS + ${2:-180})) start
    start=$(now)
    until kubectl create --dry-run=server --request-timeout 15s -f - >/dev/null 2>&1 <<<"$(app VMInstance "$ns" probe '{"instanceType":"u1.nano"}')"; do
        [ $SECONDS -lt $deadline ] || { echo "never"; return 1; }
        sleep 0.2
    done
    since "$start"
}

@test "policy-server killed (SIGKILL) during 32 concurrent writes and started again" {
    tenant ksmall 8Gi
    tenant klarge 64Gi
    # Warm both pools' lists: the kill lands in evaluations, not in cold LISTs.
    recover tenant-ksmall >/dev/null
    recover tenant-klarge >/dev/null
    local run=$BATS_TEST_TMPDIR/run t0
    # 32 writes: into the small pool 8 u1.small (4 fit) and 8 u1.8xlarge (128Gi: never fit);
    # into the large one 8 u1.small (all fit) and 8 u1.8xlarge (never fit).
    prepare "$run" tenant-ksmall fit u1.small 8
    prepare "$run" tenant-ksmall big u1.8xlarge 8
    prepare "$run" tenant-klarge fit u1.small 8
    prepare "$run" tenant-klarge big u1.8xlarge 8
    sleep 0.5
    # Killed once FAULT_KILL_AFTER (8) of the 32 were answered: mid-burst.
    go_until "$run" 'finished processing request' "${FAULT_KILL_AFTER:-8}" 400
    kill -9 "$(cat "$CLUSTER_DIR/policy-server/pid")"
    t0=$(now)
    finish "$run"
    run tally "$run"
    echo "$output"
    local verdicts=$output
    [ "$status" -eq 0 ]
    bash scripts/cluster/policy-server.sh restart "$CLUSTER_DIR" 3>&- >/dev/null
    local restarted
    restarted=$(since "$t0")
    local rec
    rec=$(recover tenant-klarge)
    figure "verdicts of the 32: $verdicts; policy-server ready ${restarted}s after the kill, a write passes $rec s after that"
    settle tenant-ksmall tenant-klarge
    # Nothing that never fits was admitted.
    none_stored tenant-ksmall u1.8xlarge
    none_stored tenant-klarge u1.8xlarge
    # The large pool holds every fitting write and stays within its budget, as a serial run.
    [ "$(reserved tenant-klarge)" -le 64 ]
    local small
    small=$(reserved tenant-ksmall)
    local over="within budget"
    [ "$small" -le 8 ] || over="over budget by $((small - 8))Gi: the concurrency limit of docs/threat-model.md"
    figure "small pool (8Gi): ${small}Gi reserved by $(stored_types tenant-ksmall | wc -l) u1.small ($over); large pool (64Gi): $(reserved tenant-klarge)Gi"
    ledger_ok tenant-klarge
    # The small pool takes 16 concurrent writes where 4 fit: a healthy engine can overshoot it
    # too ("Two concurrent writes can both pass"), so the ledger may find it over budget, and
    # then says so by name; any other failure of the ledger fails the test.
    run "$LEDGER" ledger --fail-over-budget --settings deploy/clusteradmissionpolicy.yaml -n tenant-ksmall
    echo "ledger -n tenant-ksmall -> $status: $output"
    [ "$status" -eq 0 ] || { [ "$status" -eq 3 ] && [ "$small" -gt 8 ] && [[ "$output" == *'tenant-ksmall'* ]]; }
    # The restarted policy-server reads the pools afresh: its figures are the stored ones.
    vm tenant-klarge after u1.8xlarge
    denied "VMInstance tenant-klarge/after: memory 128Gi exceeds pool tenant-klarge"
    denied "$(held tenant-klarge)"
    vm tenant-klarge after u1.small
    [ "$status" -eq 0 ]
}

@test "kube-apiserver restarted between writes: refused while down, the pools read afresh after" {
    tenant arest 16Gi
    vm tenant-arest vm1 u1.small
    [ "$status" -eq 0 ]
    settle tenant-arest
    local t0 down ready rec
    t0=$(now)
    bash scripts/cluster/control-plane.sh stop "$CLUSTER_DIR" kube-apiserver
    vm tenant-arest vm2 u1.small
    [ "$status" -ne 0 ]
    down=$(cause "$output")
    [[ "$down" == 'API server: '* ]]
    bash scripts/cluster/control-plane.sh start "$CLUSTER_DIR" kube-apiserver 3>&-
    ready=$(since "$t0")
    rec=$(recover tenant-arest)
    figure "while down: $down; API server ready ${ready}s after the stop; a write passes ${rec}s after that"
    # policy-server's reflectors listed again: the stored vm1 is counted.
    vm tenant-arest big u1.2xlarge
    denied 'VMInstance tenant-arest/big: memory 32Gi exceeds pool tenant-arest by 18Gi: budget 16Gi, reserved 2Gi by 1 application'
    vm tenant-arest vm2 u1.small
    [ "$status" -eq 0 ]
    settle tenant-arest
    [ "$(reserved tenant-arest)" -le 16 ]
    ledger_ok tenant-arest
}

@test "kube-apiserver killed while cold writes wait on their lists, started again" {
    tenant bcold 8Gi
    local run=$BATS_TEST_TMPDIR/run t0 ready rec
    # Cold: nothing in tenant-bcold was evaluated yet, so each write waits on new reflectors.
    prepare "$run" tenant-bcold fit u1.small 4
    prepare "$run" tenant-bcold big u1.4xlarge 4
    sleep 0.5
    # Killed once policy-server starts a reflector for them (an evaluation waits on it), or
    # after 10 s.
    go_until "$run" 'creating new reflector' 1 200
    t0=$(now)
    bash scripts/cluster/control-plane.sh stop "$CLUSTER_DIR" kube-apiserver KILL
    finish "$run"
    run tally "$run"
    echo "$output"
    local verdicts=$output
    [ "$status" -eq 0 ]
    bash scripts/cluster/control-plane.sh start "$CLUSTER_DIR" kube-apiserver 3>&-
    ready=$(since "$t0")
    local back
    back=$(now)
    rec=$(recover tenant-bcold)
    figure "verdicts of the 8: $verdicts; API server ready ${ready}s after the kill; a write into the cold pool passes ${rec}s after that"
    settle tenant-bcold
    none_stored tenant-bcold u1.4xlarge
    [ "$(reserved tenant-bcold)" -le 8 ]
    # A release stored while policy-server's watch was broken reaches its view only once the
    # watch is open again: until then the policy checks the pool as it was (dry runs, which
    # store nothing, until its figures are the stored ones).
    local held_now
    held_now=$(held tenant-bcold)
    for _ in $(seq 300); do
        vm tenant-bcold after u1.4xlarge --dry-run=server
        [[ "$output" != *"$held_now"* ]] || break
        sleep 0.2
    done
    figure "the policy's figures for the pool are the stored ones ($held_now) $(since "$back")s after the API server was ready"
    denied "VMInstance tenant-bcold/after: memory 64Gi exceeds pool tenant-bcold"
    denied "$held_now"
    ledger_ok tenant-bcold
}

@test "the ServiceAccount's permission removed mid-run, then restored" {
    tenant rwarm 16Gi
    vm tenant-rwarm vm1 u1.small
    [ "$status" -eq 0 ]
    tenant rcold 16Gi
    kubectl delete clusterrolebinding tenant-reservation-policy-server
    # policy-server keeps a check's answer for 5 s: past them, every write asks again.
    sleep 5.5
    # A pool whose lists are open (its watches outlive the permission) and one read for the
    # first time: both refused at once by the policy's check (deploy/ sets policyServerUser),
    # naming the permission, where the cold one used to wait out the webhook's 10 s.
    local t0 warm cold warm_s cold_s
    t0=$(now)
    vm tenant-rwarm vm2 u1.small
    warm_s=$(since "$t0")
    warm=$([ "$status" -eq 0 ] && echo admitted || cause "$output")
    denied "cannot check whether policy-server's user system:serviceaccount:kubewarden:tenant-reservation-policy-server may list"
    [[ "$output" != *"Stack backtrace"* ]]
    [[ "$output" == *'subjectaccessreviews'* ]]
    t0=$(now)
    vm tenant-rcold vm1 u1.small
    cold_s=$(since "$t0")
    cold=$([ "$status" -eq 0 ] && echo admitted || cause "$output")
    denied "policy-server's user system:serviceaccount:kubewarden:tenant-reservation-policy-server may list"
    figure "the cold pool's refusal: ${output##*denied the request: }"
    local rec
    t0=$(now)
    python3 -c 'import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ClusterRoleBinding": print(json.dumps(d))' deploy/policyserver.yaml | kubectl apply -f - >/dev/null
    rec=$(recover tenant-rcold)
    figure "without the binding: warm pool ${warm_s}s: $warm; cold pool ${cold_s}s: $cold; after restoring it a cold-pool write passes in ${rec}s ($(since "$t0")s)"
    # Refused by the policy, not by a timeout: each within a few seconds.
    awk -v w="$warm_s" -v c="$cold_s" 'BEGIN { exit !(w < 5 && c < 5) }'
    vm tenant-rcold vm1 u1.small
    [ "$status" -eq 0 ]
    vm tenant-rcold big u1.2xlarge
    denied 'VMInstance tenant-rcold/big: memory 32Gi exceeds pool tenant-rcold by 18Gi'
    settle tenant-rwarm tenant-rcold
    [ "$(reserved tenant-rwarm)" -le 16 ]
    [ "$(reserved tenant-rcold)" -le 16 ]
    ledger_ok tenant-rwarm tenant-rcold
}

@test "etcd stopped, then started again" {
    tenant etcd 16Gi
    vm tenant-etcd vm1 u1.small
    [ "$status" -eq 0 ]
    settle tenant-etcd
    local t0 down ready start i=0
    t0=$(now)
    bash scripts/cluster/control-plane.sh stop "$CLUSTER_DIR" etcd
    run kubectl create --request-timeout 20s -f - <<<"$(app VMInstance tenant-etcd vm2 '{"instanceType":"u1.small"}')"
    echo "$output"
    [ "$status" -ne 0 ]
    down="$(cause "$output"): $(tr '\n' ' ' <<<"$output" | cut -c1-160)"
    echo "$down"
    [[ "$down" != 'NO CAUSE'* ]]
    # A write larger than the budget is refused by the policy even now (its lists are cached).
    vm tenant-etcd big u1.4xlarge --request-timeout 20s
    local bigdown
    bigdown=$([ "$status" -eq 0 ] && echo ADMITTED || cause "$output")
    bash scripts/cluster/control-plane.sh start "$CLUSTER_DIR" etcd 3>&-
    ready=$(since "$t0")
    # Real writes (a dry run needs no etcd): until one is stored.
    start=$(now)
    until kubectl create --request-timeout 10s -f - >/dev/null 2>&1 <<<"$(app VMInstance tenant-etcd "back$i" '{"instanceType":"u1.nano"}')"; do
        i=$((i + 1))
        [ "$i" -lt 60 ] || break
        sleep 0.5
    done
    figure "while stopped: $down (a write past the budget: $bigdown); etcd up ${ready}s after the stop; a write stored $(since "$start")s after that ($i failed tries)"
    [ "$i" -lt 60 ]
    [ "$bigdown" != ADMITTED ]
    settle tenant-etcd
    none_stored tenant-etcd u1.4xlarge
    [ "$(reserved tenant-etcd)" -le 16 ]
    vm tenant-etcd big u1.4xlarge
    denied 'VMInstance tenant-etcd/big: memory 64Gi exceeds pool tenant-etcd'
    ledger_ok tenant-etcd
}

@test "the API server slow for policy-server's lists (100 ms, 1 s, 10 s a response)" {
    local delay=$CLUSTER_DIR/delay port d t
    echo 0 >"$delay"
    python3 -u scripts/cluster/delay-proxy.py "${APISERVER_URL##*:}" "$delay" >"$CLUSTER_DIR/delay-proxy.port" 3>&- &
    echo $! >"$CLUSTER_DIR/delay-proxy.pid"
    for _ in $(seq 50); do [ -s "$CLUSTER_DIR/delay-proxy.port" ] && break; sleep 0.1; done
    port=$(cat "$CLUSTER_DIR/delay-proxy.port")
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect --apiserver "https://127.0.0.1:$port" 3>&- >/dev/null
    local results=() cold big warm start
    for d in 0.1 1 10; do
        t=s${d//./}
        tenant "$t" 16Gi
        echo "$d" >"$delay"
        start=$(now)
        vm "tenant-$t" vm1 u1.small
        cold="$([ "$status" -eq 0 ] && echo admitted || cause "$output") in $(since "$start")s"
        vm "tenant-$t" big u1.4xlarge
        big=$([ "$status" -eq 0 ] && echo ADMITTED || cause "$output")
        start=$(now)
        vm "tenant-$t" vm2 u1.small
        warm="$([ "$status" -eq 0 ] && echo admitted || cause "$output") in $(since "$start")s"
        echo 0 >"$delay"
        results+=("$d s: cold write $cold; too large: $big; next write $warm")
        figure "delay $d s: cold write $cold; too large: $big; next write $warm"
        [ "$big" != ADMITTED ]
        [[ "$cold" != 'NO CAUSE'* ]] && [[ "$warm" != 'NO CAUSE'* ]]
    done
    local rec
    rec=$(recover tenant-s10)
    figure "delay back to 0: a write into the 10 s pool passes in ${rec}s"
    kill "$(cat "$CLUSTER_DIR/delay-proxy.pid")"
    rm -f "$CLUSTER_DIR/delay-proxy.pid"
    bash scripts/cluster/policy-server.sh up "$CLUSTER_DIR" --mode protect 3>&- >/dev/null
    for t in s01 s1 s10; do
        settle "tenant-$t"
        none_stored "tenant-$t" u1.4xlarge
        [ "$(reserved "tenant-$t")" -le 16 ]
        ledger_ok "tenant-$t"
    done
}

@test "a stored release the policy cannot read appears mid-run: that pool's growth is refused naming it" {
    tenant ghost 16Gi
    tenant other 16Gi
    vm tenant-ghost vm1 u1.small
    [ "$status" -eq 0 ]
    settle tenant-ghost
    # A release whose instance type does not exist (deleted, or written past the policy).
    kubectl get helmrelease -n tenant-ghost vm-instance-vm1 -o json |
        jq '{apiVersion, kind, metadata: {name: "vm-instance-ghost", namespace: .metadata.namespace, labels: (.metadata.labels + {"apps.cozystack.io/application.name": "ghost"})}, spec: (.spec | .values.instanceType = "u1.gone")}' |
        kubectl create -f -
    local start
    start=$(now)
    # Dry runs until the policy-server's watch delivers it (they store nothing).
    for _ in $(seq 50); do
        vm tenant-ghost vm2 u1.small --dry-run=server
        [ "$status" -eq 0 ] || break
        sleep 0.2
    done
    figure "refused $(since "$start")s after the release appeared: $(cause "$output")"
    denied 'VMInstance tenant-ghost/vm2: pool tenant-ghost cannot be checked, 1 other object cannot be evaluated (siblingFailure: deny): VMInstance tenant-ghost/ghost: spec.instanceType: instance type "u1.gone" does not exist'
    # Other pools are unaffected; a shrink in this one passes.
    vm tenant-other vm1 u1.small
    [ "$status" -eq 0 ]
    kubectl delete helmrelease -n tenant-ghost vm-instance-ghost
    start=$(now)
    local rec
    rec=$(recover tenant-ghost)
    figure "after deleting it, writes pass in ${rec}s"
    ledger_ok tenant-ghost tenant-other
}
