#!/usr/bin/env bash
# The real engine against the replay-runner on the same cluster state and the same writes:
#
#   scripts/cluster/compare-replay.sh      (needs annotated-policy.wasm and tools' replay-runner)
#
# One control plane, the apps stand-in, the real policy-server in protect mode from deploy/.
# A tenant tree is written through the webhook (a Tenant with etcd, a VM, a disk). Then each
# candidate write below is sent twice: to the real engine as `kubectl create|apply
# --dry-run=server` (admission runs, nothing is stored), and to tools/replay-runner with the
# AdmissionReview the API server would send, the CAP's settings and the cluster as the engine
# sees it dumped to a --cluster-state file. Prints, per write, both verdicts and messages and
# whether they agree; exits 1 when any differs.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

runner=${REPLAY_RUNNER:-$repo/tools/target/release/replay-runner}
[ -x "$runner" ] || { echo "compare-replay: no $runner (make replay-runner)" >&2; exit 2; }
[ -f annotated-policy.wasm ] || { echo "compare-replay: no annotated-policy.wasm (make annotated-policy.wasm)" >&2; exit 2; }

# shellcheck source=scripts/cluster/scratch-cluster.bash
source "$here/scratch-cluster.bash"
scratch_cluster compare-replay
bash "$here/policy-server.sh" up "$dir" --mode protect >/dev/null

app() { # app KIND NAMESPACE NAME SPEC_JSON
    printf '{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"%s","metadata":{"name":"%s","namespace":"%s"},"spec":%s}\n' "$1" "$3" "$2" "$4"
}
plural() { kubectl get applicationdefinitions -o json | jq -r --arg k "$1" '.items[] | select(.spec.application.kind == $k) | .spec.application.plural'; }
store() { # store KIND NAMESPACE NAME SPEC_JSON: an admitted write and its release
    app "$@" >"$dir/obj.json"
    bash "$here/cozystack-apps.sh" write "$dir" create -f "$dir/obj.json" >/dev/null
}

# The state both are asked about.
store Tenant tenant-root cmp '{"etcd":true,"resourceQuotas":{"cpu":"8","memory":"16Gi","storage":"100Gi"}}'
store VMInstance tenant-cmp web '{"instanceType":"u1.medium"}'
store VMDisk tenant-cmp web-system '{"source":{"image":{"name":"ubuntu"}},"storage":"20Gi"}'

# CAP settings, as policy-server.sh gives them to policy-server.
bash "$here/policy-server.sh" policies | jq '.[] | .settings' >"$dir/settings.json"

# The cluster as the engine sees it (the resources of contextAwareResources).
sleep 1
for r in applicationdefinitions.cozystack.io helmreleases.helm.toolkit.fluxcd.io virtualmachineclusterinstancetypes.instancetype.kubevirt.io; do
    kubectl get "$r" -A -o json | jq -c '.items[]'
done | python3 -c 'import json, sys, yaml
docs = [json.loads(l) for l in sys.stdin if l.strip()]
print(yaml.safe_dump_all(docs, sort_keys=False))' >"$dir/cluster.yaml"

differ=0
# case VERB KIND NAMESPACE NAME SPEC_JSON
case_() {
    local verb=$1 kind=$2 ns=$3 name=$4 spec=$5 engine engine_ok runner_out runner_ok old="null" op=CREATE pl
    app "$kind" "$ns" "$name" "$spec" >"$dir/obj.json"
    pl=$(plural "$kind")
    if [ "$verb" = apply ]; then
        op=UPDATE
        old=$(kubectl get "$pl.apps.cozystack.io" -n "$ns" "$name" -o json)
    fi
    if engine=$(kubectl "$verb" --dry-run=server -f "$dir/obj.json" 2>&1); then engine_ok=true; else engine_ok=false; fi
    engine=$(sed -n 's/.*denied the request: //p' <<<"$engine" | head -1)
    jq -n --slurpfile obj "$dir/obj.json" --argjson old "$old" --arg op "$op" --arg pl "$pl" '{
        apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
        request: {uid: "compare", operation: $op, dryRun: true,
            kind: {group: "apps.cozystack.io", version: "v1alpha1", kind: $obj[0].kind},
            resource: {group: "apps.cozystack.io", version: "v1alpha1", resource: $pl},
            requestKind: {group: "apps.cozystack.io", version: "v1alpha1", kind: $obj[0].kind},
            requestResource: {group: "apps.cozystack.io", version: "v1alpha1", resource: $pl},
            name: $obj[0].metadata.name, namespace: $obj[0].metadata.namespace,
            userInfo: {username: "admin", groups: ["system:masters", "system:authenticated"]},
            object: $obj[0], oldObject: $old}}' >"$dir/request.json"
    runner_out=$("$runner" run --request-path "$dir/request.json" --settings-path "$dir/settings.json" \
        --cluster-state "$dir/cluster.yaml" --allow-context-aware annotated-policy.wasm 2>/dev/null | tail -1)
    runner_ok=$(jq -r '.allowed' <<<"$runner_out")
    local runner_msg
    runner_msg=$(jq -r '.status.message // ""' <<<"$runner_out")
    local same=same
    if [ "$engine_ok" != "$runner_ok" ] || [ "$engine" != "$runner_msg" ]; then
        same=DIFFERENT
        differ=1
    fi
    printf '%s %s %s/%s: %s\n  engine:        allowed=%s %s\n  replay-runner: allowed=%s %s\n' \
        "$same" "$op" "$ns" "$name" "$kind" "$engine_ok" "$engine" "$runner_ok" "$runner_msg"
}

case_ create VMInstance tenant-cmp small '{"instanceType":"u1.small"}'
case_ create VMInstance tenant-cmp big '{"instanceType":"u1.2xlarge"}'
case_ create VMInstance tenant-cmp raw '{"instanceType":"","resources":{"cpu":"2","sockets":"2","memory":"14Gi"}}'
case_ create VMDisk tenant-cmp data '{"source":{},"storage":"200Gi"}'
case_ create Postgres tenant-cmp db '{"replicas":3,"resourcesPreset":"xlarge","size":"10Gi"}'
case_ create Tenant tenant-cmp child '{"resourceQuotas":{"cpu":"4","memory":"32Gi","storage":"10Gi"}}'
case_ create Tenant tenant-root mods '{"etcd":true,"monitoring":true,"resourceQuotas":{"cpu":"1","memory":"1Gi","storage":"1Gi"}}'
case_ apply VMInstance tenant-cmp web '{"instanceType":"u1.2xlarge"}'
case_ apply VMInstance tenant-cmp web '{"instanceType":"u1.small"}'
exit "$differ"
