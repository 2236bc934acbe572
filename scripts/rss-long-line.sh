#!/usr/bin/env bash
# Peak memory (RSS) of ralph while an agent prints one very long line: the figure
# for "memory stays flat whatever the line length" in docs/reliability.md.
#
#   scripts/rss-long-line.sh [SIZES_IN_MB...]     (default: 1 10 100)
#
# Builds the release binary, then for each size runs a one-iteration workflow whose
# command agent prints a stream-json line carrying a SIZE MB tool result, then a
# result line with the done tag, under /usr/bin/time -v; prints the size and ralph's
# maximum resident set size. Needs /usr/bin/time (Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
ralph="$PWD/target/release/ralph"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 10 100)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'line length (MB)\tmax RSS (MB)\n'
for mb in "${sizes[@]}"; do
  dir="$work/$mb"
  mkdir -p "$dir"
  echo "Print a long line." > "$dir/PROMPT.md"
  cat > "$dir/agent.sh" <<AGENT
printf '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"'
head -c $((mb * 1000 * 1000)) /dev/zero | tr '\0' 'a'
printf '","is_error":false}]}}\n'
printf '{"type":"result","subtype":"success","is_error":false,"result":"All done.\\\\n<promise>DONE</promise>","session_id":"s1"}\n'
AGENT
  cat > "$dir/ralph.toml" <<TOML
[agents.long]
kind = "command"
command = ["sh", "$dir/agent.sh", "{prompt}"]
output = "claude-stream-json"

[chains]
main = ["long"]

[phases.develop]
chain = "main"
done = "tag"
TOML
  ( cd "$dir" && /usr/bin/time -v "$ralph" -q 2> time.txt >/dev/null ) || { cat "$dir/time.txt"; exit 1; }
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt")
  printf '%s\t%s\n' "$mb" "$((kb / 1024))"
done
