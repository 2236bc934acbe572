#!/usr/bin/env bash
# Installs the pinned offline checkers of docs/deploy/ (tests/deploy/requirements.txt:
# kubernetes-validate for the Kubernetes Job, python-hcl2 to parse the Nomad job)
# from PyPI into a venv in the cache directory, once; tests/integration/deploy.rs
# runs them. A fresh machine (CI) has none, so the test command runs this first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${RALPH_AGENTS_DIR:-$HOME/.cache/ralph-agents}/deploy-validators
if cmp -s "$here/requirements.txt" "$dir/requirements.txt" 2>/dev/null; then
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "install.sh: python3 not found; cannot install the deploy file checkers (their tests will be skipped, or fail under CI)" >&2
  exit 0
fi
echo "install.sh: installing the deploy file checkers into $dir" >&2
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$here/requirements.txt" >&2
# The stamp last: an interrupted install is redone next time.
cp "$here/requirements.txt" "$dir/requirements.txt"
