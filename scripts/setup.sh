#!/usr/bin/env bash
# Installs everything the tests and benchmarks need, idempotently:
#   - .venv with the Python packages of scripts/requirements.txt (deltalake, pyarrow, moto)
#   - .tools/node_modules with Azurite (Azure blob emulator)
# Needs python3 and npm; reaches only PyPI and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.requirements.sha
want=$(sha256sum scripts/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements.txt
  echo "$want" > "$stamp"
fi

if [ ! -x .tools/node_modules/.bin/azurite-blob ]; then
  mkdir -p .tools
  (cd .tools && npm install --silent --no-audit --no-fund --prefix . azurite@3 >/dev/null)
fi
echo "setup: python tools in .venv, azurite in .tools"
