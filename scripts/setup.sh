#!/usr/bin/env bash
# Installs everything the tests and benchmarks need, idempotently:
#   - .venv with the Python packages of scripts/requirements.txt (deltalake, pyarrow, moto)
#   - .tools/node_modules with Azurite (Azure blob emulator)
#   - .tools/kernel-oracle (reference reader) and .tools/tansu (Kafka-protocol broker)
#   - promtool (Debian's prometheus package), when apt-get can run
# Needs python3 and npm; reaches only PyPI, the npm registry, crates.io and Debian.
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
# The reference reader over delta_kernel (../shared/tools/kernel-oracle), built once into
# .tools/kernel-oracle (about ten minutes on two cores); interop tests read tables with it.
oracle_src=${DELTABUS_KERNEL_ORACLE_SRC:-../shared/tools/kernel-oracle}
if [ ! -x .tools/kernel-oracle/release/kernel-oracle ] && [ -f "$oracle_src/Cargo.toml" ]; then
  cargo build --release --locked --quiet --manifest-path "$oracle_src/Cargo.toml" --target-dir .tools/kernel-oracle
fi
# tansu, a Kafka-protocol broker from crates.io (about fifteen minutes to build once): the
# real, separate broker of the end-to-end ingest test.
if [ ! -x .tools/tansu/bin/tansu ]; then
  cargo install --quiet --locked tansu --version 0.6.0 --features dynostore --root .tools/tansu
fi
# promtool (Debian's `prometheus` package) parses the shipped alert rules and dashboard
# queries in tests/monitoring.rs; without apt (or root) those checks fall back to names only.
if ! command -v promtool >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  { apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1; }; } \
    || echo "setup: promtool not installed (apt-get failed); PromQL checks will be skipped"
fi
echo "setup: python tools in .venv, azurite, kernel-oracle and tansu in .tools"
