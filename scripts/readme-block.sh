#!/usr/bin/env bash
# Prints the commands of the first ```console block under a README heading, verbatim:
#
#   readme-block.sh "### 1. Install Kubewarden" [README.md]
#
# (CI runs README's install with it, so what it runs is what the README says.) Fails when the
# heading or its block is missing.
set -euo pipefail
heading=${1:?usage: readme-block.sh HEADING [FILE]}
file=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/README.md}
awk -v h="$heading" '
    $0 == h { under = 1; next }
    under && /^#/ && !inblock { exit }
    under && !inblock && /^```console$/ { inblock = 1; next }
    inblock && /^```$/ { found = 1; exit }
    inblock { print }
    END { exit found ? 0 : 1 }
' "$file" || { echo "readme-block: no \`\`\`console block under \"$heading\" in $file" >&2; exit 1; }
