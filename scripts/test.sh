#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs the test tools, starts the object-store
# emulators on 127.0.0.1, checks formatting and lints, and runs every test.
# Used by `.ci/run`; the README gives the same command.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# Object-store emulators for the storage tests (S3: moto, Azure: Azurite), on loopback only.
logs=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

s3_port=${DELTABUS_TEST_S3_PORT:-5055}
.venv/bin/moto_server -H 127.0.0.1 -p "$s3_port" >"$logs/moto.log" 2>&1 &
pids+=($!)
az_port=${DELTABUS_TEST_AZURE_PORT:-10000}
.tools/node_modules/.bin/azurite-blob --blobHost 127.0.0.1 --blobPort "$az_port" \
  --inMemoryPersistence --disableTelemetry --skipApiVersionCheck >"$logs/azurite.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$s3_port/" && curl -s -o /dev/null "http://127.0.0.1:$az_port/"; then break; fi
  sleep 0.2
done
export DELTABUS_TEST_S3_ENDPOINT="http://127.0.0.1:$s3_port"
export DELTABUS_TEST_AZURE_ENDPOINT="http://127.0.0.1:$az_port/devstoreaccount1"
# A real Kafka-protocol broker (tansu, in memory) for the end-to-end ingest test.
kafka_port=${DELTABUS_TEST_KAFKA_PORT:-19092}
.tools/tansu/bin/tansu broker --listener-url "tcp://127.0.0.1:$kafka_port" \
  --advertised-listener-url "tcp://127.0.0.1:$kafka_port" --storage-engine memory://tansu/ \
  >"$logs/tansu.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$kafka_port") 2>/dev/null; then break; fi
  sleep 0.2
done
export DELTABUS_TEST_KAFKA_BROKERS="127.0.0.1:$kafka_port"
export DELTABUS_TEST_PYTHON="$PWD/.venv/bin/python"
# The storage tests fail (rather than skip) when an emulator is missing.
export DELTABUS_REQUIRE_EMULATORS=1

cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
cargo test --lib --bins --tests
