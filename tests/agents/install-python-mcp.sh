#!/usr/bin/env bash
# Installs the official MCP Python SDK, pinned with all its dependencies in
# tests/agents/python-requirements.txt, into a venv in the same cache directory as
# the agent CLIs, once. The integration tests use it as an MCP client of
# `ralph mcp` that no one here wrote. Called by install.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${RALPH_AGENTS_DIR:-$HOME/.cache/ralph-agents}
version=$(sed -n 's/^mcp==//p' "$here/python-requirements.txt")
target="$dir/python-mcp-$version"
if [ -x "$target/bin/python" ] && "$target/bin/python" -c 'import mcp' 2>/dev/null; then
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
  echo "install-python-mcp.sh: python3 with venv not found; cannot install mcp==$version (its test will be skipped, or fail under CI)" >&2
  exit 0
fi
echo "install-python-mcp.sh: installing mcp==$version into $target" >&2
rm -rf "$target"
python3 -m venv "$target"
"$target/bin/pip" install --quiet --disable-pip-version-check -r "$here/python-requirements.txt" >&2
