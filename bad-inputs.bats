#!/usr/bin/env bats
# The bad-input table (test_data/bad-inputs/expected.tsv) through the compiled policy: each
# AdmissionReview is run with the kwctl stand-in against test_data/bad-inputs/cluster.yaml and
# default settings, and the answer is checked against its row. tests/it/bad_inputs.rs runs the
# same table natively and checks that every row has a test here.
#
#   KWCTL   the runner (default: kwctl; the stand-in is tools/replay-runner, built with
#           make replay-runner)
#   POLICY  the policy module (default: target/wasm32-wasip1/release/tenant_reservation_policy.wasm)

bats_require_minimum_version 1.5.0

setup_file() {
    cd "$BATS_TEST_DIRNAME" || return 1
    export KWCTL="${KWCTL:-kwctl}"
    export POLICY="${POLICY:-target/wasm32-wasip1/release/tenant_reservation_policy.wasm}"
    export CASES="$BATS_TEST_DIRNAME/test_data/bad-inputs"
    command -v jq >/dev/null || { echo "jq is required" >&3; return 1; }
    command -v "$KWCTL" >/dev/null || { echo "no runner: set KWCTL (tools/replay-runner)" >&3; return 1; }
    [ -f "$POLICY" ] || { echo "no policy at $POLICY: cargo build --release --target wasm32-wasip1" >&3; return 1; }
}

setup() {
    cd "$BATS_TEST_DIRNAME" || return 1
}

# Column $2 of the row for case $1 in expected.tsv.
field() {
    awk -F'\t' -v name="$1" -v col="$2" '!/^#/ && $1 == name { print $col; found = 1 } END { exit !found }' \
        "$CASES/expected.tsv"
}

# Runs the policy on request file $1.
run_policy() {
    run --separate-stderr "$KWCTL" run --request-path "$1" --allow-context-aware \
        --cluster-state "$CASES/cluster.yaml" "$POLICY"
}

explain() {
    echo "status: $status"
    echo "stdout: ${output:0:2000}"
    echo "stderr: ${stderr:0:2000}"
}

# Checks the answer in $output against outcome $1 and text $2.
check_answer() {
    local outcome=$1 text=$2 allowed message warnings
    [ "$status" -eq 0 ] || { explain; return 1; }
    allowed=$(jq -r '.allowed' <<<"$output")
    message=$(jq -r '.status.message // ""' <<<"$output")
    warnings=$(jq -r '(.warnings // []) | join("\n")' <<<"$output")
    case "$outcome" in
        deny)
            [ "$allowed" = false ] && [[ "$message" == *"$text"* ]] ||
                { echo "expected a rejection containing: $text"; explain; return 1; } ;;
        allow)
            [ "$allowed" = true ] && [ -z "$warnings" ] ||
                { echo "expected an acceptance with no warning"; explain; return 1; } ;;
        warn)
            [ "$allowed" = true ] && [[ "$warnings" == *"$text"* ]] ||
                { echo "expected an acceptance with a warning containing: $text"; explain; return 1; } ;;
        *)
            echo "expected.tsv: unknown outcome $outcome"; return 1 ;;
    esac
}

check_case() {
    local name=$1 outcome text kwctl note
    outcome=$(field "$name" 2) || { echo "no row for $name in expected.tsv"; return 1; }
    text=$(field "$name" 3)
    kwctl=$(field "$name" 4)
    note=$(field "$name" 5)
    if [[ "$kwctl" == "refused: "* ]]; then
        run_policy "$CASES/$name.json"
        [ "$status" -ne 0 ] && [[ "$stderr" == *"${kwctl#refused: }"* ]] ||
            { echo "expected the runner to refuse the file: ${kwctl#refused: }"; explain; return 1; }
        return 0
    fi
    if [[ "$note" == bug:* ]]; then
        skip "$note"
    fi
    run_policy "$CASES/$name.json"
    check_answer "$outcome" "$text"
}

# An AdmissionReview creating a $1 in tenant-foo whose spec is $2, the bytes on stdin, then $3
# (a generated values object, too large to keep in the repository).
review_with_spec() {
    local kind=$1 spec_start=$2 spec_end=$3
    printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","kind":{"group":"apps.cozystack.io","version":"v1alpha1","kind":"%s"},"resource":{"group":"apps.cozystack.io","version":"v1alpha1","resource":"%ss"},"name":"big","namespace":"tenant-foo","operation":"CREATE","userInfo":{"username":"tenant-user","groups":["system:authenticated"]},"object":{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"%s","metadata":{"name":"big","namespace":"tenant-foo"},"spec":%s' \
        "$kind" "${kind,,}" "$kind" "$spec_start"
    cat
    printf '%s}}}\n' "$spec_end"
}

five_megabytes() {
    head -c 5242880 /dev/zero | tr '\0' x
}

@test "values-5mb: a 5 MB values object is decided (generated)" {
    five_megabytes | review_with_spec VMDisk '{"storage":"10Gi","blob":"' '"}' >"$BATS_TEST_TMPDIR/fits.json"
    [ "$(wc -c <"$BATS_TEST_TMPDIR/fits.json" | tr -d ' ')" -gt 5000000 ]
    run_policy "$BATS_TEST_TMPDIR/fits.json"
    check_answer allow ""
    five_megabytes | review_with_spec VMDisk '{"storage":"1Ti","blob":"' '"}' >"$BATS_TEST_TMPDIR/over.json"
    run_policy "$BATS_TEST_TMPDIR/over.json"
    check_answer deny "VMDisk tenant-foo/big: storage 1Ti exceeds pool tenant-foo by 944Gi: budget 100Gi"
}

@test "values-200k-keys: a values object with 200000 keys is decided (generated)" {
    seq -f '"key%06g":1,' 0 199999 | tr -d '\n' |
        review_with_spec VMDisk '{' '"storage":"2Gi"}' >"$BATS_TEST_TMPDIR/keys.json"
    run_policy "$BATS_TEST_TMPDIR/keys.json"
    check_answer allow ""
}

@test "replicas-string" {
    check_case replicas-string
}

@test "replicas-float" {
    check_case replicas-float
}

@test "replicas-whole-float" {
    check_case replicas-whole-float
}

@test "replicas-negative" {
    check_case replicas-negative
}

@test "replicas-boolean" {
    check_case replicas-boolean
}

@test "replicas-list" {
    check_case replicas-list
}

@test "replicas-u64-max" {
    check_case replicas-u64-max
}

@test "replicas-beyond-u64" {
    check_case replicas-beyond-u64
}

@test "replicas-null-takes-default" {
    check_case replicas-null-takes-default
}

@test "replicas-zero" {
    check_case replicas-zero
}

@test "max-replicas-string" {
    check_case max-replicas-string
}

@test "storage-list" {
    check_case storage-list
}

@test "storage-object" {
    check_case storage-object
}

@test "storage-boolean" {
    check_case storage-boolean
}

@test "resources-string" {
    check_case resources-string
}

@test "resources-cpu-object" {
    check_case resources-cpu-object
}

@test "instance-type-number" {
    check_case instance-type-number
}

@test "instance-type-unknown" {
    check_case instance-type-unknown
}

@test "preset-unknown" {
    check_case preset-unknown
}

@test "preset-list" {
    check_case preset-list
}

@test "gpus-object" {
    check_case gpus-object
}

@test "gpus-entry-string" {
    check_case gpus-entry-string
}

@test "gpu-count-negative" {
    check_case gpu-count-negative
}

@test "gpu-count-string" {
    check_case gpu-count-string
}

@test "gpu-class-invalid" {
    check_case gpu-class-invalid
}

@test "enabled-by-string" {
    check_case enabled-by-string
}

@test "enabled-by-parent-string" {
    check_case enabled-by-parent-string
}

@test "node-groups-string" {
    check_case node-groups-string
}

@test "node-groups-list-of-strings" {
    check_case node-groups-list-of-strings
}

@test "node-group-null-takes-defaults" {
    check_case node-group-null-takes-defaults
}

@test "quantity-two-dots" {
    check_case quantity-two-dots
}

@test "quantity-1e400" {
    check_case quantity-1e400
}

@test "quantity-minus-one" {
    check_case quantity-minus-one
}

@test "quantity-negative-number" {
    check_case quantity-negative-number
}

@test "quantity-suffix-only" {
    check_case quantity-suffix-only
}

@test "quantity-unicode-digits" {
    check_case quantity-unicode-digits
}

@test "quantity-inner-space" {
    check_case quantity-inner-space
}

@test "quantity-hex" {
    check_case quantity-hex
}

@test "quantity-too-long" {
    check_case quantity-too-long
}

@test "quantity-number-1e300" {
    check_case quantity-number-1e300
}

@test "quantity-cpu-malformed" {
    check_case quantity-cpu-malformed
}

@test "quantity-sub-milli-is-valid" {
    check_case quantity-sub-milli-is-valid
}

@test "quantity-leading-plus-is-valid" {
    check_case quantity-leading-plus-is-valid
}

@test "quantity-number-float-is-valid" {
    check_case quantity-number-float-is-valid
}

@test "quantity-exponent-is-valid" {
    check_case quantity-exponent-is-valid
}

@test "quantity-sub-nano-rounds-up" {
    check_case quantity-sub-nano-rounds-up
}

@test "quantity-empty-string-charges-nothing" {
    check_case quantity-empty-string-charges-nothing
}

@test "overflow-replicas-times-size" {
    check_case overflow-replicas-times-size
}

@test "overflow-node-groups-sum" {
    check_case overflow-node-groups-sum
}

@test "overflow-components-sum" {
    check_case overflow-components-sum
}

@test "overflow-gpu-count-times-replicas" {
    check_case overflow-gpu-count-times-replicas
}

@test "huge-but-exact-is-refused-by-budget" {
    check_case huge-but-exact-is-refused-by-budget
}

@test "values-nested-200-deep" {
    check_case values-nested-200-deep
}

@test "values-nested-100-deep" {
    check_case values-nested-100-deep
}

@test "old-values-nested-200-deep" {
    check_case old-values-nested-200-deep
}

@test "spec-missing-charged-at-defaults" {
    check_case spec-missing-charged-at-defaults
}

@test "spec-null-charged-at-defaults" {
    check_case spec-null-charged-at-defaults
}

@test "spec-list" {
    check_case spec-list
}

@test "spec-string" {
    check_case spec-string
}

@test "object-null" {
    check_case object-null
}

@test "object-missing" {
    check_case object-missing
}

@test "update-object-missing" {
    check_case update-object-missing
}

@test "update-old-object-missing" {
    check_case update-old-object-missing
}

@test "update-old-spec-string" {
    check_case update-old-spec-string
}

@test "update-old-unevaluable-checks-whole-new" {
    check_case update-old-unevaluable-checks-whole-new
}

@test "operation-unknown" {
    check_case operation-unknown
}

@test "operation-missing" {
    check_case operation-missing
}

@test "operation-lowercase" {
    check_case operation-lowercase
}

@test "delete-accepted" {
    check_case delete-accepted
}

@test "connect-accepted" {
    check_case connect-accepted
}

@test "delete-old-object-nested-200-deep" {
    check_case delete-old-object-nested-200-deep
}

@test "status-subresource-accepted" {
    check_case status-subresource-accepted
}

@test "other-group-accepted-with-warning" {
    check_case other-group-accepted-with-warning
}

@test "namespace-missing" {
    check_case namespace-missing
}

@test "kind-unknown" {
    check_case kind-unknown
}

@test "kind-without-reservation" {
    check_case kind-without-reservation
}

@test "definition-schema-invalid-json" {
    check_case definition-schema-invalid-json
}

@test "sibling-unevaluable-denies" {
    check_case sibling-unevaluable-denies
}

@test "sibling-not-read-when-no-bounded-key-grows" {
    check_case sibling-not-read-when-no-bounded-key-grows
}

@test "outside-any-pool-not-evaluated" {
    check_case outside-any-pool-not-evaluated
}

@test "mongodb-sharded-shards-charged" {
    check_case mongodb-sharded-shards-charged
}

@test "tenant-quota-malformed" {
    check_case tenant-quota-malformed
}

@test "tenant-quota-not-a-map" {
    check_case tenant-quota-not-a-map
}

@test "tenant-quota-boolean" {
    check_case tenant-quota-boolean
}

@test "tenant-quota-gpu-domain-key" {
    check_case tenant-quota-gpu-domain-key
}

@test "tenant-quota-over-parent" {
    check_case tenant-quota-over-parent
}

@test "tenant-bound-below-subtree-usage" {
    check_case tenant-bound-below-subtree-usage
}

@test "available-at-i128-min" {
    check_case available-at-i128-min
}
