#!/usr/bin/env bash
# Regenerates the reference answers of the conformance corpus (tests/data/conformance/expected)
# with kernel-oracle, the reference reader over delta_kernel (built by scripts/setup.sh tools).
#   bash scripts/conformance-expected.sh            every table
#   bash scripts/conformance-expected.sh NAME...    only these tables
# Review the diff before committing: a changed answer means the reference reads differently.
set -euo pipefail
cd "$(dirname "$0")/.."
oracle=${DELTABUS_KERNEL_ORACLE:-.tools/bin/kernel-oracle}
if [ ! -x "$oracle" ]; then
  echo "conformance-expected: $oracle is missing: run 'bash scripts/setup.sh tools'" >&2
  exit 1
fi
corpus=tests/data/conformance
if [ $# -gt 0 ]; then names=("$@"); else mapfile -t names < <(ls "$corpus/tables"); fi
for name in "${names[@]}"; do
  [ -d "$corpus/tables/$name" ] || { echo "conformance-expected: no table $name" >&2; exit 1; }
  rm -rf "$corpus/expected/$name"
  # RUST_BACKTRACE unset: error answers hold the message only.
  env -u RUST_BACKTRACE "$oracle" expect "$corpus/tables/$name" "$corpus/expected/$name"
  echo "$name: $(tr -d '\n ' < "$corpus/expected/$name/meta.json" | cut -c1-120)"
done
