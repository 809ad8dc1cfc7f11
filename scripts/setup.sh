#!/usr/bin/env bash
# Installs everything the tests and benchmarks need, idempotently, from the package registries
# only (PyPI, npm, crates.io, Maven Central, Debian):
#   - .venv: the Python packages of scripts/requirements.txt (deltalake, pyarrow, moto, ...),
#     installed once per version of that file into the tools cache
#   - .tools/node_modules: Azurite (Azure blob emulator) and KafkaJS (a third Kafka client),
#     installed once per version into the tools cache
#   - .tools/bin/kernel-oracle: the reference reader, built from tools/kernel-oracle
#   - .tools/bin/mdbook: mdBook from crates.io, which builds the docs site (docs/)
#   - .tools/kafka-broker: Apache Kafka's jars (Maven Central), the suite's broker, its perf
#     tests, and a probe driving the Java client (tools/kafka-broker/src/KafkaProbe.java)
#   - .tools/bin/tansu (only `setup.sh bench`): a Kafka-protocol broker from crates.io, the
#     separate broker of the benchmarks' older figures
#   - kcat (Debian's package: the README's Kafka examples run in the tests), tmux (the
#     terminal the tests read `deltabus top` from)
#   - .tools/iceberg-probe: Java Iceberg's jars (Maven Central) and a probe planning scans
#   - .tools/spark-delta: Delta Lake for Spark (Maven Central), the reference engine, run by
#     tools/spark-delta/server.py with pyspark from the venv
#   - promtool (Debian's prometheus package), when apt-get can run
#
# kernel-oracle takes most of a first run (about 10 minutes on two cores). Tools are built or
# resolved once per version into a cache outside the clone, shared by every clone and CI run
# on the machine: $DELTABUS_TOOLS_CACHE, else $XDG_CACHE_HOME/deltabus, else
# ~/.cache/deltabus. .tools holds links to them.
#
#   bash scripts/setup.sh            everything the tests need
#   bash scripts/setup.sh tools      only the Rust tool (scripts/test.sh runs this in the
#                                    background while the project compiles)
#   bash scripts/setup.sh env        everything but the Rust tool
#   bash scripts/setup.sh bench      tansu too, for the benchmarks against it (15 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
cache=${DELTABUS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/deltabus}
mkdir -p .tools/bin "$cache"

rust_tools() {
  # One target directory for both tools, so crates they share are built once.
  export CARGO_TARGET_DIR="$cache/target"
  # kernel-oracle, keyed by the hash of its sources and lock file.
  local key
  key=$(cat tools/kernel-oracle/Cargo.toml tools/kernel-oracle/Cargo.lock tools/kernel-oracle/src/*.rs \
    | sha256sum | cut -c1-16)
  local oracle="$cache/kernel-oracle-$key/kernel-oracle"
  if [ ! -x "$oracle" ]; then
    echo "setup: building kernel-oracle $key (once per version; about ten minutes on two cores)"
    cargo build --release --locked --quiet --manifest-path tools/kernel-oracle/Cargo.toml
    mkdir -p "$(dirname "$oracle")"
    cp "$CARGO_TARGET_DIR/release/kernel-oracle" "$oracle.tmp" && mv "$oracle.tmp" "$oracle"
  fi
  ln -sfn "$oracle" .tools/bin/kernel-oracle
  # mdBook builds the docs site (docs/book.toml); without its server and watcher.
  local mdbook_version=0.5.4
  local mdbook="$cache/mdbook-$mdbook_version/bin/mdbook"
  if [ ! -x "$mdbook" ]; then
    echo "setup: building mdBook $mdbook_version (once; a few minutes on two cores)"
    cargo install --quiet --locked mdbook --version "$mdbook_version" --no-default-features \
      --root "$cache/mdbook-$mdbook_version"
  fi
  ln -sfn "$mdbook" .tools/bin/mdbook
}

# tansu, a Kafka-protocol broker in Rust: the separate broker of the benchmarks' figures.
bench_tools() {
  export CARGO_TARGET_DIR="$cache/target"
  local tansu_version=0.6.0
  local tansu="$cache/tansu-$tansu_version/bin/tansu"
  if [ ! -x "$tansu" ]; then
    echo "setup: building tansu $tansu_version (once; about fifteen minutes on two cores)"
    cargo install --quiet --locked tansu --version "$tansu_version" --features dynostore \
      --root "$cache/tansu-$tansu_version"
  fi
  ln -sfn "$tansu" .tools/bin/tansu
}

environment() {
  # The venv, once per version of the requirements, in the tools cache (.venv links to it).
  local key venv
  key=$( (cat scripts/requirements.txt; python3 --version) | sha256sum | cut -c1-16)
  venv="$cache/venv-$key"
  if [ ! -f "$venv/.complete" ]; then
    echo "setup: installing the Python packages $key (once per version)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/requirements.txt
    touch "$venv/.complete"
  fi
  # A venv made inside the clone by an older setup gives way to the link.
  if [ -d .venv ] && [ ! -L .venv ]; then rm -rf .venv; fi
  ln -sfn "$venv" .venv
  # Azurite and KafkaJS from npm, once per version in the tools cache (.tools/node_modules
  # links to them).
  local node="$cache/node-azurite3-kafkajs2.2.4"
  if [ ! -f "$node/.complete" ]; then
    rm -rf "$node" && mkdir -p "$node"
    (cd "$node" && npm install --silent --no-audit --no-fund --prefix . azurite@3 kafkajs@2.2.4 >/dev/null)
    touch "$node/.complete"
  fi
  if [ -d .tools/node_modules ] && [ ! -L .tools/node_modules ]; then rm -rf .tools/node_modules; fi
  ln -sfn "$node/node_modules" .tools/node_modules
  # kcat runs the README's Kafka examples (tests/readme_kafka.rs).
  if ! command -v kcat >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      apt-get install -y --no-install-recommends kcat >/dev/null 2>&1 \
        || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends kcat >/dev/null 2>&1; } \
        || echo "setup: kcat not installed (apt-get failed); install Debian's kcat package"
    else
      echo "setup: kcat is missing; install it (Debian: apt-get install kcat)"
    fi
  fi
  # tmux is the terminal `deltabus top` is read from in tests/top.rs.
  if ! command -v tmux >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y --no-install-recommends tmux >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends tmux >/dev/null 2>&1; } \
      || echo "setup: tmux not installed (apt-get failed); install Debian's tmux package"
  fi
  # promtool parses the shipped alert rules and dashboard queries in tests/monitoring.rs.
  if ! command -v promtool >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    { apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1; }; } \
      || echo "setup: promtool not installed (apt-get failed); PromQL checks will be skipped"
  fi
}

# Java Iceberg (the second pruning reader of the UniForm tests): its jars resolved by Maven
# from Maven Central into the tools cache, keyed by the pom and the probe's source, and the
# probe compiled beside them; .tools/iceberg-probe links to it.
java_tools() {
  if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
    echo "setup: Java tools not set up: install Maven and a JDK 17 (Debian: maven, openjdk-17-jdk-headless)"
    return 0
  fi
  # Java Iceberg (the second pruning reader of the UniForm tests) and its probe.
  local key dir
  key=$(cat tools/iceberg-probe/pom.xml tools/iceberg-probe/src/*.java | sha256sum | cut -c1-16)
  dir="$cache/iceberg-probe-$key"
  if [ ! -f "$dir/classes/IcebergProbe.class" ]; then
    echo "setup: resolving Java Iceberg $key (once per version)"
    resolve tools/iceberg-probe/pom.xml "$dir"
    javac -nowarn -d "$dir.tmp/classes" -cp "$dir.tmp/lib/*" tools/iceberg-probe/src/IcebergProbe.java
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  ln -sfn "$dir" .tools/iceberg-probe
  # Apache Kafka, the suite's broker, its perf tests, and the Java client's probe.
  key=$(cat tools/kafka-broker/pom.xml tools/kafka-broker/src/*.java | sha256sum | cut -c1-16)
  dir="$cache/kafka-broker-$key"
  if [ ! -f "$dir/lib/.complete" ]; then
    echo "setup: resolving Apache Kafka $key (once per version)"
    resolve tools/kafka-broker/pom.xml "$dir"
    javac -nowarn -encoding UTF-8 -d "$dir.tmp/classes" -cp "$dir.tmp/lib/*" tools/kafka-broker/src/KafkaProbe.java
    touch "$dir.tmp/lib/.complete"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  ln -sfn "$dir" .tools/kafka-broker
  # Delta Lake for Spark, the reference engine (pyspark itself comes from requirements.txt).
  key=$(sha256sum tools/spark-delta/pom.xml | cut -c1-16)
  dir="$cache/spark-delta-$key"
  if [ ! -f "$dir/lib/.complete" ]; then
    echo "setup: resolving Delta Lake for Spark $key (once per version)"
    resolve tools/spark-delta/pom.xml "$dir"
    touch "$dir.tmp/lib/.complete"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  ln -sfn "$dir" .tools/spark-delta
}

# Copies a pom's dependency closure from Maven Central into $2.tmp/lib.
resolve() {
  rm -rf "$2.tmp" && mkdir -p "$2.tmp/classes"
  if ! mvn -q -B -f "$1" dependency:copy-dependencies -DoutputDirectory="$2.tmp/lib" >"$2.tmp/mvn.log" 2>&1; then
    cat "$2.tmp/mvn.log" >&2
    echo "setup: Maven could not resolve $1 (above)" >&2
    return 1
  fi
}

case "$what" in
  all) environment; java_tools; rust_tools ;;
  env) environment; java_tools ;;
  tools) rust_tools ;;
  bench) environment; java_tools; rust_tools; bench_tools ;;
  *) echo "usage: scripts/setup.sh [all|env|tools|bench]" >&2; exit 2 ;;
esac
echo "setup: done ($what); Rust tools cached in $cache"
