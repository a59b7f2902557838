# Sourced by the scripts and bats files that send bursts of application writes (fault.bats,
# cold-burst.sh): an application as JSON, what each refused write's kubectl output names as its
# cause, and a tally of a burst.

app() { # app KIND NAMESPACE NAME SPEC_JSON: the object, as JSON
    printf '{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"%s","metadata":{"name":"%s","namespace":"%s"},"spec":%s}\n' "$1" "$3" "$2" "$4"
}

# cause OUTPUT: what a refused write's kubectl output names as its cause, in a few words; prints
# "NO CAUSE: ..." when it names none of the known ones.
cause() {
    case "$1" in
    *'denied the request: '*'exceeds pool'*) echo "policy: exceeds pool" ;;
    *'denied the request: '*'Policy execution interrupted'*) echo "policy-server: evaluation timeout (timeoutEvalSeconds)" ;;
    *'denied the request: '*) echo "policy: ${1##*denied the request: }" | cut -c1-120 ;;
    *'failed calling webhook'*'context deadline exceeded'*) echo "webhook: context deadline exceeded" ;;
    *'failed calling webhook'*'connection refused'*) echo "webhook: connection refused" ;;
    *'failed calling webhook'*) echo "webhook: ${1##*: }" | cut -c1-120 ;;
    *'connection refused'*) echo "API server: connection refused" ;;
    *'EOF'* | *'connection reset'*) echo "API server: connection closed (EOF)" ;;
    *'etcdserver'* | *'Timeout: request did not complete'* | *'the server was unable to return a response'*) echo "API server: storage timeout (${1##*Error from server}" | cut -c1-140 | sed 's/$/)/' ;;
    *'context deadline exceeded'* | *'Client.Timeout'* | *'timed out'*) echo "API server: timeout" ;;
    *'Error from server'*) echo "API server: ${1##*Error from server}" | cut -c1-120 ;;
    *) echo "NO CAUSE: $1" | cut -c1-200 ;;
    esac
}

# tally RUN: "admitted N; <cause> N; ..." over the writes of RUN (RUN/NAME.rc holds admitted or
# refused, RUN/NAME.out kubectl's output), also left in RUN/tally; fails when one names no cause.
tally() {
    local run=$1 f
    for f in "$run"/*.rc; do
        if [ "$(cat "$f")" = admitted ]; then
            echo admitted
        else
            cause "$(cat "${f%.rc}.out")"
        fi
    done | sort | uniq -c | awk '{ n = $1; $1 = ""; printf "%s%s %d", sep, substr($0, 2), n; sep = "; " } END { print "" }' >"$run/tally"
    cat "$run/tally"
    ! grep -q 'NO CAUSE' "$run/tally"
}
