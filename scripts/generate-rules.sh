#!/usr/bin/env bash
# The application plurals a cluster's ApplicationDefinitions declare, against those the
# policy's rules name: a kind the rules leave out is never sent to the policy and reserves
# nothing. Prints the resources list for both places that must name it:
# deploy/clusteradmissionpolicy.yaml (spec.rules[0].resources) and
# deploy/audit-scanner-rbac.yaml (the ClusterRole's resources), and exits 1 when a definition
# is not covered.
#
#   scripts/generate-rules.sh                 the cluster's definitions (kubectl)
#   scripts/generate-rules.sh DEFS.json       `kubectl get applicationdefinitions -o json`
#   scripts/generate-rules.sh DIR             every *.yaml definition in DIR
#
# The rules name plurals, never `*`: the audit scanner skips a rule with a wildcard. The
# matching is the ledger's (`tenant-reservation rules`, tools/ledger/src/coverage.rs), the
# same that `kubectl cozystack-reservations` warns with; cargo builds it on the first run.
set -euo pipefail
cd "$(dirname "$0")/.."

src=${1:-}
if [ -z "$src" ]; then
    json=$(mktemp)
    trap 'rm -f "$json"' EXIT
    kubectl get applicationdefinitions.cozystack.io -o json >"$json"
    src=$json
fi
bash scripts/build-tools.sh --quiet
exec tools/target/release/tenant-reservation rules --definitions "$src"
