#!/usr/bin/env bash
# Coverage-guided fuzzing of every decoder of untrusted bytes (libFuzzer through cargo-fuzz):
# commit JSON and its replay, `_last_checkpoint`, deletion vectors and z85, checkpoint Parquet,
# `--where` predicates, Kafka payloads (JSON, Avro, Protobuf), Arrow IPC push bodies, control-topic
# records of coordinated commits, configuration files.
#
#   bash scripts/fuzz.sh [seconds per target, default 120] [target ...]
#
# Needs the nightly toolchain (rustup) and installs cargo-fuzz from crates.io when missing.
# Built without a sanitizer (`-s none`): deltabus forbids unsafe code, so what the fuzzer looks
# for are panics, aborts, stack overflows, runaway memory and hangs; librdkafka's C build does
# not configure under the sanitizer flags.
# Prints executions and crashes per target; crash inputs land in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
shift || true
if ! command -v cargo-fuzz >/dev/null; then
  cargo install --quiet --locked cargo-fuzz
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(log_actions last_checkpoint deletion_vectors checkpoint_parquet predicate payload config avro protobuf push_arrow control key_index kafka_request)
fi
mkdir -p fuzz/corpus
# Seeds: real commit files, checkpoints and `_last_checkpoint` files of the conformance corpus.
corpus_dir=${DELTABUS_CONFORMANCE_DIR:-tests/data/conformance}/tables
seed() {
  local target=$1 pattern=$2
  mkdir -p "fuzz/corpus/$target"
  if [ -d "$corpus_dir" ] && [ -z "$(ls -A "fuzz/corpus/$target")" ]; then
    # (head closes the pipe early: find's SIGPIPE is expected)
    { find "$corpus_dir" -path "*_delta_log/*" -name "$pattern" -size -256k || true; } | head -200 |
      while read -r f; do cp "$f" "fuzz/corpus/$target/$(sha1sum "$f" | cut -c1-16)"; done || true
  fi
}
seed log_actions "*.json"
seed last_checkpoint "_last_checkpoint"
seed checkpoint_parquet "*.checkpoint*.parquet"
# Payload seeds: records of every column kind, one poll per file.
mkdir -p fuzz/corpus/payload
if [ -z "$(ls -A fuzz/corpus/payload)" ]; then
  printf '%s\n' '{"id":1,"name":"a\"b \u00e9 \ud83d\ude00","amount":2.5,"ts":"2024-01-02T03:04:05.123456Z","day":"2024-02-29"}' \
    '{"id":-7,"tags":1.5,"nested":-128,"ntz":"2024-01-02 03:04:05","d":123456.789,"ok":true}' \
    '{"id":2.0,"name":5,"ts":1700000000}' >fuzz/corpus/payload/seed-records
fi
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log=$(mktemp)
  # -rss_limit_mb and -timeout: hostile inputs must not exhaust memory or hang either.
  if cargo +nightly fuzz run --release -s none "$t" "fuzz/corpus/$t" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 >"$log" 2>&1; then
    status=ok
  else
    status=CRASH
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz $t: $status, $runs executions in ${seconds}s, crashes: $(ls "fuzz/artifacts/$t" | wc -l)"
  if [ "$status" = CRASH ]; then
    grep -E -A2 "panicked|ERROR: libFuzzer|SUMMARY" "$log" | cut -c1-300 | head -20
    grep -E "^\s+fuzz/artifacts/" "$log" | head -3
  fi
  rm -f "$log"
done
