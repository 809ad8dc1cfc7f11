#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs the test tools (building the Rust tool in
# the background while the project compiles), starts the object-store emulators and Apache
# Kafka on 127.0.0.1, checks formatting and lints, and runs every test. Every tool
# the suite needs must be there: a missing one fails the run and names the fix.
# Used by `.ci/run`; the README gives the same command.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
phase() { echo "test.sh: $1 ($((SECONDS - started)) s)"; }

# Compiled dependencies are shared with earlier runs on this machine (another clone, a CI
# run): one target directory in the tools cache, unless CARGO_TARGET_DIR says otherwise.
cache=${DELTABUS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/deltabus}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/target-deltabus}
mkdir -p "$CARGO_TARGET_DIR"

logs=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# The Rust tool builds beside the project (cached across clones after the first run).
bash scripts/setup.sh tools >"$logs/tools.log" 2>&1 &
tools_pid=$!
pids+=("$tools_pid")
bash scripts/setup.sh env
phase "python, node and Debian tools ready"

cargo fmt --all -- --check
# cargo fmt does not follow modules declared inside macros (`internal_mods!`): every file is
# checked on its own too.
unformatted=$(find src -name '*.rs' | while read -r f; do
  rustfmt --edition 2021 --check --config skip_children=true "$f" >/dev/null 2>&1 || echo "$f"; done)
if [ -n "$unformatted" ]; then
  echo "test.sh: not formatted (run rustfmt --edition 2021 on them): $unformatted" >&2
  exit 1
fi
cargo clippy --all-targets --quiet -- -D warnings
phase "formatting and lints pass"
cargo test --no-run --quiet --lib --bins --tests
phase "tests built"

if ! wait "$tools_pid"; then
  cat "$logs/tools.log" >&2
  echo "test.sh: building the Rust test tools failed (see above); fix it, then run scripts/setup.sh tools" >&2
  exit 1
fi
cat "$logs/tools.log"
phase "kernel-oracle ready"

require() {
  if [ ! -x "$1" ]; then
    echo "test.sh: $1 is missing: run 'bash scripts/setup.sh' (it installs $2)" >&2
    exit 1
  fi
}
require .venv/bin/python "the Python packages"
require .venv/bin/moto_server "moto, the S3 emulator"
require .tools/node_modules/.bin/azurite-blob "Azurite, the Azure emulator"
require .tools/bin/kernel-oracle "the reference reader"
require .tools/bin/mdbook "mdBook, which builds the docs site"
if [ ! -f .tools/kafka-broker/lib/.complete ] || [ ! -f .tools/kafka-broker/classes/KafkaProbe.class ]; then
  echo "test.sh: Apache Kafka is missing: run 'bash scripts/setup.sh' (it resolves it with Maven; needs a JDK and Maven)" >&2
  exit 1
fi
if [ ! -f .tools/iceberg-probe/classes/IcebergProbe.class ]; then
  echo "test.sh: Java Iceberg is missing: run 'bash scripts/setup.sh' (it resolves it with Maven; needs a JDK and Maven)" >&2
  exit 1
fi
if [ ! -f .tools/spark-delta/lib/.complete ] || [ ! -x .venv/bin/pyspark ]; then
  echo "test.sh: Spark with Delta is missing: run 'bash scripts/setup.sh' (pyspark from PyPI, Delta's jars with Maven)" >&2
  exit 1
fi
if [ ! -f .tools/node_modules/kafkajs/package.json ]; then
  echo "test.sh: KafkaJS is missing: run 'bash scripts/setup.sh' (it installs it from npm)" >&2
  exit 1
fi
if ! command -v tmux >/dev/null; then
  echo "test.sh: tmux is missing: run 'bash scripts/setup.sh' as root, or install Debian's tmux package" >&2
  exit 1
fi
if ! command -v kcat >/dev/null; then
  echo "test.sh: kcat is missing: run 'bash scripts/setup.sh' as root, or install Debian's kcat package" >&2
  exit 1
fi

# Object-store emulators for the storage tests (S3: moto, Azure: Azurite), on loopback only.
s3_port=${DELTABUS_TEST_S3_PORT:-5055}
.venv/bin/python tools/s3-emulator/serve.py 127.0.0.1 "$s3_port" >"$logs/moto.log" 2>&1 &
pids+=($!)
az_port=${DELTABUS_TEST_AZURE_PORT:-10000}
.tools/node_modules/.bin/azurite-blob --blobHost 127.0.0.1 --blobPort "$az_port" \
  --inMemoryPersistence --disableTelemetry --skipApiVersionCheck >"$logs/azurite.log" 2>&1 &
pids+=($!)
# Apache Kafka (one KRaft broker and controller, on the next port too), formatted anew.
kafka_port=${DELTABUS_TEST_KAFKA_PORT:-19092}
pids+=("$(bash tools/kafka-broker/start.sh "$kafka_port" "$logs/kafka" "$PWD/.tools/kafka-broker/lib" "$logs/kafka.log")")
# Spark with Delta, the reference engine: one session for the whole run.
spark_port=${DELTABUS_TEST_SPARK_PORT:-19096}
.venv/bin/python tools/spark-delta/server.py "$spark_port" "$PWD/.tools/spark-delta/lib" >"$logs/spark.log" 2>&1 &
pids+=($!)
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 1 150); do
  if up "$s3_port" && up "$az_port" && up "$kafka_port"; then break; fi
  sleep 0.2
done
for service in "S3 emulator:$s3_port:moto" "Azure emulator:$az_port:azurite" "Kafka broker:$kafka_port:kafka"; do
  IFS=: read -r name port log <<<"$service"
  if ! up "$port"; then
    cat "$logs/$log.log" >&2
    echo "test.sh: the $name did not start on 127.0.0.1:$port (is the port taken?)" >&2
    exit 1
  fi
done
# The broker is ready once it answers a metadata request (its port opens before that).
for _ in $(seq 1 300); do
  if kcat -L -b "127.0.0.1:$kafka_port" -m 2 >/dev/null 2>&1; then break; fi
  sleep 0.2
done
if ! kcat -L -b "127.0.0.1:$kafka_port" -m 5 >/dev/null 2>&1; then
  cat "$logs/kafka.log" >&2
  echo "test.sh: Apache Kafka did not answer a metadata request on 127.0.0.1:$kafka_port" >&2
  exit 1
fi
# Spark is ready once its session is up (about 10 s, while the rest starts).
for _ in $(seq 1 900); do
  if grep -q "ready on" "$logs/spark.log" 2>/dev/null; then break; fi
  sleep 0.2
done
if ! grep -q "ready on" "$logs/spark.log"; then
  cat "$logs/spark.log" >&2
  echo "test.sh: Spark did not start on 127.0.0.1:$spark_port (needs a JDK 17 on PATH; see the log above)" >&2
  exit 1
fi
export DELTABUS_TEST_SPARK="127.0.0.1:$spark_port"
export DELTABUS_TEST_S3_ENDPOINT="http://127.0.0.1:$s3_port"
export DELTABUS_TEST_AZURE_ENDPOINT="http://127.0.0.1:$az_port/devstoreaccount1"
# object_store's emulator mode reads Azurite's address from here (its default is port 10000).
export AZURITE_BLOB_STORAGE_URL="http://127.0.0.1:$az_port"
export DELTABUS_TEST_KAFKA_BROKERS="127.0.0.1:$kafka_port"
# The broker's SASL_SSL listener and the test CA that signed its certificate.
export DELTABUS_TEST_KAFKA_SECURE="127.0.0.1:$((kafka_port + 2))"
export DELTABUS_TEST_KAFKA_CA="$logs/kafka/tls/ca.pem"
export DELTABUS_KAFKA_JAVA="$PWD/.tools/kafka-broker"
export DELTABUS_TEST_PYTHON="$PWD/.venv/bin/python"
export DELTABUS_KERNEL_ORACLE="$PWD/.tools/bin/kernel-oracle"
export DELTABUS_ICEBERG_PROBE="$PWD/.tools/iceberg-probe"
# Tests that need an emulator, the broker or a reference reader fail (rather than skip)
# when it is missing.
export DELTABUS_REQUIRE_EMULATORS=1
phase "services started"

# Most integration tests wait on something (the broker, Spark, child processes, emulators):
# three run at a time on two cores.
cargo test --lib --bins --tests -- --test-threads 3
phase "all tests passed"
