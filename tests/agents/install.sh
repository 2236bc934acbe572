#!/usr/bin/env bash
# Installs the pinned agent CLIs of tests/agents/versions.txt from npm into a cache
# directory, once; the integration tests drive them against a fake provider on
# 127.0.0.1. A fresh machine (CI) has none, so the test command runs this first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${RALPH_AGENTS_DIR:-$HOME/.cache/ralph-agents}
while read -r name package version; do
  case "$name" in ""|\#*) continue ;; esac
  target="$dir/$name-$version"
  if [ -x "$target/node_modules/.bin/$name" ]; then
    continue
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm not found; cannot install $package@$version (its tests will be skipped, or fail under CI)" >&2
    exit 0
  fi
  echo "install.sh: installing $package@$version into $target" >&2
  npm install --prefix "$target" "$package@$version" --no-audit --no-fund --loglevel=error >&2
done < "$here/versions.txt"
# The MCP Python SDK, an MCP client for the `ralph mcp` tests.
"$here/install-python-mcp.sh"
