#!/usr/bin/env bats
# Signatures verified end to end, offline: the annotated module is pushed to a local registry
# (scripts/local-registry.sh) and signed there with a key pair made for the test, in cosign's
# format (tests/signing/cosign_sign.py: what `cosign sign --key` pushes). Then
#   - kwctl verify with the public key accepts it, and refuses the same module unsigned
#     (another digest) and signed by another key;
#   - policy-server started with a verification config naming that key loads the signed module
#     (ready) and refuses the unsigned one (exits, "cannot be verified").
# Keyless (Fulcio/Rekor) signatures, the release's, need Sigstore's services: not here.
# Needs a real kwctl and policy-server (scripts/cluster/find-tool.sh), python3 with cryptography,
# docker-registry (installed with apt-get when missing), annotated-policy.wasm and policy.wasm.
# The kwctl and policy-server of this project's machines have no network: they are given a
# local Sigstore trust config when $SIGSTORE_TRUST_CONFIG (or ../shared/tools/offline-trust-config.json
# beside the kwctl found) exists; a key-based verification uses none of it.

bats_require_minimum_version 1.5.0

setup_file() {
    cd "$BATS_TEST_DIRNAME"
    export KWCTL=$(bash scripts/cluster/find-tool.sh kwctl 2>/dev/null)
    export POLICY_SERVER=$(bash scripts/cluster/find-tool.sh policy-server 2>/dev/null)
    [ -n "$KWCTL" ] && [ -n "$POLICY_SERVER" ] || return 0
    python3 -c 'import cryptography' 2>/dev/null || { export NO_CRYPTOGRAPHY=1; return 0; }
    export TRUST=${SIGSTORE_TRUST_CONFIG:-$(dirname "$KWCTL")/offline-trust-config.json}
    export SIG=$BATS_FILE_TMPDIR
    export XDG_CACHE_HOME=$SIG/cache
    export PORT=$(bash scripts/local-registry.sh start "$SIG/registry")
    export SOURCES=$SIG/registry/sources.yaml REPO=policies/tenant-reservation
    export REG=127.0.0.1:$PORT
    python3 tests/signing/cosign_sign.py keygen "$SIG/key.pem" "$SIG/pub.pem"
    python3 tests/signing/cosign_sign.py keygen "$SIG/other.pem" "$SIG/other.pub"
    # The signed module, and the same policy under two other version annotations (two other
    # digests): one stays unsigned, one is signed by another key (test 3).
    "$KWCTL" push --sources-path "$SOURCES" annotated-policy.wasm "registry://$REG/$REPO:signed" >/dev/null 2>&1
    sed 's/^  io.kubewarden.policy.version: .*/  io.kubewarden.policy.version: 0.0.0-unsigned/' metadata.yml >"$SIG/metadata.yml"
    "$KWCTL" annotate -m "$SIG/metadata.yml" -o "$SIG/unsigned.wasm" policy.wasm 2>/dev/null
    "$KWCTL" push --sources-path "$SOURCES" "$SIG/unsigned.wasm" "registry://$REG/$REPO:unsigned" >/dev/null 2>&1
    sed 's/^  io.kubewarden.policy.version: .*/  io.kubewarden.policy.version: 0.0.0-other/' metadata.yml >"$SIG/metadata-other.yml"
    "$KWCTL" annotate -m "$SIG/metadata-other.yml" -o "$SIG/other.wasm" policy.wasm 2>/dev/null
    "$KWCTL" push --sources-path "$SOURCES" "$SIG/other.wasm" "registry://$REG/$REPO:other" >/dev/null 2>&1
    python3 tests/signing/cosign_sign.py sign "$SIG/key.pem" "$REG" "$REPO" "$(digest_of signed)" >/dev/null
}

teardown_file() {
    [ -n "${SIG:-}" ] && bash scripts/local-registry.sh stop "$SIG/registry" 2>/dev/null || true
}

setup() {
    cd "$BATS_TEST_DIRNAME"
    [ -n "$KWCTL" ] && [ -n "$POLICY_SERVER" ] || skip "no real kwctl and policy-server (scripts/cluster/find-tool.sh)"
    [ -z "${NO_CRYPTOGRAPHY:-}" ] || skip "python3 has no cryptography module (pip install cryptography)"
}

digest_of() { "$KWCTL" digest --sources-path "$SOURCES" "registry://$REG/$REPO:$1" 2>/dev/null | sed 's/.*@//'; }

verify() { # verify TAG KEY.pub
    local trust=()
    [ -f "$TRUST" ] && trust=(--sigstore-trust-config "$TRUST")
    run --separate-stderr "$KWCTL" verify --sources-path "$SOURCES" "${trust[@]}" -k "$2" "registry://$REG/$REPO:$1"
    # kwctl logs on stderr and prints its error on stdout or stderr: read both.
    stderr=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$output$stderr")
}

@test "kwctl verify: the signed module verifies with the test key, by tag and by digest" {
    verify signed "$SIG/pub.pem"
    [ "$status" -eq 0 ]
    [[ "$stderr" == *"Policy successfully verified"* ]]
    d=$(digest_of signed)
    [[ "$d" =~ ^sha256:[0-9a-f]{64}$ ]]
    local trust=()
    [ -f "$TRUST" ] && trust=(--sigstore-trust-config "$TRUST")
    run "$KWCTL" verify --sources-path "$SOURCES" "${trust[@]}" -k "$SIG/pub.pem" "registry://$REG/$REPO@$d"
    [ "$status" -eq 0 ]
}

@test "kwctl verify: an unsigned module is refused" {
    [ "$(digest_of unsigned)" != "$(digest_of signed)" ]
    verify unsigned "$SIG/pub.pem"
    [ "$status" -ne 0 ]
    grep -v "^ *[0-9]*: \|^ *at " <<<"$stderr" | head -n 5
    [[ "$stderr" == *"registry://$REG/$REPO:unsigned cannot be validated"* ]]
    [[ "$stderr" == *"no signatures found for image: $REG/$REPO:unsigned"* ]]
}

@test "kwctl verify: a module signed by another key is refused with ours, accepted with that key" {
    [ "$(digest_of other)" != "$(digest_of unsigned)" ]
    python3 tests/signing/cosign_sign.py sign "$SIG/other.pem" "$REG" "$REPO" "$(digest_of other)" >/dev/null
    verify other "$SIG/pub.pem"
    [ "$status" -ne 0 ]
    [[ "$stderr" == *"Image verification failed"* ]]
    verify other "$SIG/other.pub"
    [ "$status" -eq 0 ]
}

start_policy_server() { # start_policy_server TAG: starts it; sets $ps_pid, $ready_port, $ps_log
    local tag=$1 port
    read -r port ready_port < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
    {
        echo "apiVersion: v1"
        echo "allOf:"
        echo "  - kind: pubKey"
        echo "    owner: signatures.bats"
        echo "    key: |"
        sed 's/^/      /' "$SIG/pub.pem"
    } >"$SIG/verification.yml"
    printf 'tenant-reservation:\n  module: registry://%s/%s:%s\n  allowedToMutate: false\n  settings: {}\n' \
        "$REG" "$REPO" "$tag" >"$SIG/policies-$tag.yml"
    mkdir -p "$SIG/download-$tag"
    ps_log=$SIG/policy-server-$tag.log
    local trust=()
    [ -f "$TRUST" ] && trust=(--sigstore-trust-config "$TRUST")
    "$POLICY_SERVER" --policies "$SIG/policies-$tag.yml" --policies-download-dir "$SIG/download-$tag" \
        --verification-path "$SIG/verification.yml" "${trust[@]}" --sigstore-cache-dir "$SIG/sigstore-$tag" \
        --sources-path "$SOURCES" --ignore-kubernetes-connection-failure \
        --addr 127.0.0.1 --port "$port" --readiness-probe-port "$ready_port" >"$ps_log" 2>&1 &
    ps_pid=$!
}

@test "policy-server with a verification config loads the signed module" {
    start_policy_server signed
    local ready=no
    for _ in $(seq 1 150); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$ready_port/readiness" 2>/dev/null; then ready=yes; break; fi
        kill -0 "$ps_pid" 2>/dev/null || break
        sleep 0.2
    done
    kill "$ps_pid" 2>/dev/null || true
    wait "$ps_pid" 2>/dev/null || true
    sed 's/\x1b\[[0-9;]*m//g' "$ps_log" | grep -E 'verif|ERROR' || true
    [ "$ready" = yes ]
    grep -q 'status="verified-signatures"' "$ps_log"
}

@test "policy-server with a verification config refuses the unsigned module and exits" {
    start_policy_server unsigned
    local exited=no
    for _ in $(seq 1 150); do
        kill -0 "$ps_pid" 2>/dev/null || { exited=yes; break; }
        sleep 0.2
    done
    run curl -fsS -o /dev/null "http://127.0.0.1:$ready_port/readiness"
    [ "$status" -ne 0 ]
    kill "$ps_pid" 2>/dev/null || true
    wait "$ps_pid" 2>/dev/null || true
    [ "$exited" = yes ]
    sed 's/\x1b\[[0-9;]*m//g' "$ps_log" | grep -q "Policy 'tenant-reservation' cannot be verified: no signatures found for image: $REG/$REPO:unsigned"
}
