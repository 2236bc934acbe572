#!/usr/bin/env bash
# Rebuilds the corpus of ordinary output the secret rules must leave alone
# (src/secrets/tests.rs, `ordinary_output_is_left_alone`). The copy in this
# directory is what the test reads: rerun this only to refresh it, then look at
# what the test reports. Sources: this repository's Cargo.lock and history (at a
# fixed commit, without the files whose tests plant fake secrets), its sources,
# the real CLIs' error transcripts of tests/corpus, and the package-lock.json of
# the agent CLIs that tests/agents/install.sh installs.
set -eu
cd "$(dirname "$0")/../../.."
out=tests/secrets/ordinary
at=88a13a2
planted=(':!src/state/redact.rs' ':!tests/integration/hostile.rs' ':!src/process/env.rs' ':!src/process/lines.rs'
    ':!tests/integration/git.rs' ':!src/state/journal.rs' ':!docs/reliability.md' ':!src/git/plan.rs')
git show "$at:Cargo.lock" >"$out/cargo-lock.txt"
for f in ~/.cache/ralph-agents/*/package-lock.json; do cat "$f"; done >"$out/package-lock.txt"
{ git log -p --no-color -n 400 "$at" -- src docs benches tests "${planted[@]}" || true; } | head -n 14000 >"$out/git-log-p.txt"
git ls-tree -r --name-only "$at" -- src | grep '\.rs$' | grep -v -e state/redact.rs -e process/env.rs \
    -e process/lines.rs -e state/journal.rs -e git/plan.rs | head -n 40 |
    { while read -r f; do git show "$at:$f"; done || true; } | head -n 6000 >"$out/sources.txt"
find tests/corpus -type f -not -name '*.py' | sort | while read -r f; do cat "$f"; echo; done >"$out/transcripts.txt"
wc -l "$out"/*.txt
