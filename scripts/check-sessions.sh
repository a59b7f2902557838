#!/usr/bin/env bash
# Fails when the committed e2e scenarios or sessions are not what the generator and the
# replay-runner produce now: run scripts/record-sessions.sh and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."

paths=(test_data/scenarios test_data/example)

bash scripts/record-sessions.sh

untracked=$(git ls-files --others --exclude-standard -- "${paths[@]}")
if ! git diff --exit-code --stat -- "${paths[@]}" || [ -n "$untracked" ]; then
    [ -z "$untracked" ] || printf 'not committed:\n%s\n' "$untracked"
    echo "check-sessions: the scenarios or their sessions are out of date; run scripts/record-sessions.sh and commit the result" >&2
    exit 1
fi
echo "check-sessions: scenarios and sessions are up to date" >&2
