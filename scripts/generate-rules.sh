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
# The rules name plurals, never `*`: the audit scanner skips a rule with a wildcard.
set -euo pipefail
cd "$(dirname "$0")/.."

src=${1:-}
json=$(mktemp)
trap 'rm -f "$json"' EXIT
if [ -z "$src" ]; then
    kubectl get applicationdefinitions.cozystack.io -o json >"$json"
elif [ -d "$src" ]; then
    python3 -c '
import glob, json, sys, yaml
items = [yaml.safe_load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/*.yaml"))]
print(json.dumps({"items": [i for i in items if i and i.get("kind") == "ApplicationDefinition"]}))' "$src" >"$json"
else
    cp "$src" "$json"
fi

python3 - "$json" <<'PY'
import json, re, sys
defs = json.load(open(sys.argv[1]))["items"]
plurals = sorted({d["spec"]["application"]["plural"] for d in defs})

def listed(path, anchor):
    text = open(path).read()
    at = text.index(anchor)
    block = text[at:].split("resources:", 1)[1]
    out = []
    for line in block.splitlines()[1:]:
        m = re.match(r"^\s+- ([a-z0-9.-]+)\s*$", line)
        if not m:
            break
        out.append(m.group(1))
    return set(out)

rules = listed("deploy/clusteradmissionpolicy.yaml", "rules:")
rbac = listed("deploy/audit-scanner-rbac.yaml", "apiGroups: [\"apps.cozystack.io\"]")
print("resources:")
for p in plurals:
    print(f"  - {p}")
missing = False
for where, have in (("deploy/clusteradmissionpolicy.yaml rules", rules),
                    ("deploy/audit-scanner-rbac.yaml ClusterRole", rbac)):
    uncovered = [p for p in plurals if p not in have]
    if uncovered:
        missing = True
        print(f"not in {where}: {', '.join(uncovered)} (never sent to the policy: reserves nothing)",
              file=sys.stderr)
sys.exit(1 if missing else 0)
PY
