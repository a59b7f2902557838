#!/usr/bin/env bash
# Fails, in one line, while the maintainer identity that `kwctl inspect` and Artifact Hub show
# is a placeholder: metadata.yml's io.kubewarden.policy.author, artifacthub-pkg.yml's
# maintainers and artifacthub-repo.yml's owners must name a real maintainer with an address on
# a real domain (not *.example, *.invalid, *.test, example.com/org/net, nor the seed
# placeholder). release.yml runs it before anything is published.
#
#   check-identity.sh [DIR]     DIR: a checkout (default: this one)
set -euo pipefail
dir=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
python3 - "$dir" <<'PY'
import re, sys, yaml
d = sys.argv[1]
placeholder = re.compile(r"@([^>\s]*\.)?(example|invalid|test|localhost)(\.?)(?=[>\s]|$)|@example\.(com|org|net)\b|a-seed-\d+|users\.noreply\.example")
found = []
meta = yaml.safe_load(open(f"{d}/metadata.yml"))
author = meta["annotations"].get("io.kubewarden.policy.author", "")
if not author or placeholder.search(author):
    found.append("metadata.yml io.kubewarden.policy.author")
pkg = yaml.safe_load(open(f"{d}/artifacthub-pkg.yml"))
for m in pkg.get("maintainers") or [{}]:
    if placeholder.search(f"{m.get('name', '')} <{m.get('email', '')}>") or not m.get("email"):
        found.append("artifacthub-pkg.yml maintainers")
        break
repo = yaml.safe_load(open(f"{d}/artifacthub-repo.yml"))
for o in repo.get("owners") or [{}]:
    if placeholder.search(f"{o.get('name', '')} <{o.get('email', '')}>") or not o.get("email"):
        found.append("artifacthub-repo.yml owners")
        break
if found:
    print("check-identity: set the real maintainer name and email (a placeholder is still in "
          + ", ".join(found) + "; then `make artifacthub-pkg.yml` regenerates the package file)")
    sys.exit(1)
print(f"check-identity: maintainer {author}")
PY
