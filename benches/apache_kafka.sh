#!/usr/bin/env bash
# deltabus beside Apache Kafka's own tools, on one Apache Kafka broker (started here, fresh),
# with the same records (JSON of ~250 B, the records of `ingest_throughput`):
#   1. ingest: Kafka's consumer perf test (the Java consumer reading and dropping records: the
#      floor) and `deltabus ingest --until-end` (records into a Delta table) read the same
#      BENCH_RECORDS records (default 5,000,000, zstd, 8 partitions): records/s, CPU-seconds
#      per million records, peak RSS, and deltabus's time over the floor's; then deltabus again
#      with 250,000-row batches and with 64 MiB batches (peak RSS at smaller batches);
#   2. Spark Structured Streaming (the alternative users weigh: local[2], availableNow, Delta
#      4.4 on Spark 4.2) reading the same records into a Delta table: records/s, CPU-seconds per
#      million records, peak RSS against deltabus's; then Spark scanning the table it wrote and
#      the one deltabus wrote (sum and count over every row, best of three);
#   3. produce-to-visible latency of a deltabus pipeline at a 1 s flush against this broker
#      (the latency part of `ingest_throughput`, one record every 10 ms for 20 s);
#   4. Kafka's producer perf test (the Java client: idempotent, acks=all, zstd, 8 partitions)
#      sending BENCH_PRODUCE_RECORDS (default 1,000,000) into deltabus's Kafka listener (a
#      Delta table) and into the broker: records/s and the server's CPU per record.
# Needs `bash scripts/setup.sh` (Apache Kafka's jars, Spark with Delta) and `cargo build --release`.
#   bash benches/apache_kafka.sh
set -euo pipefail
cd "$(dirname "$0")/.."
records=${BENCH_RECORDS:-5000000}
produce_records=${BENCH_PRODUCE_RECORDS:-1000000}
port=${BENCH_KAFKA_PORT:-39092}
lib="$PWD/.tools/kafka-broker/lib"
bin="${CARGO_TARGET_DIR:-target}/release/deltabus"
work="$PWD/target/bench-data/apache-kafka"
[ -f "$lib/.complete" ] || { echo "bench: run 'bash scripts/setup.sh' first (Apache Kafka's jars)" >&2; exit 1; }
[ -x "$bin" ] || { echo "bench: run 'cargo build --release' first ($bin)" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
java_tool() { java -Xmx1g -cp "$lib/*" "$@"; }
# CPU seconds (user + system) a process has used so far.
cpu_of() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }

broker=$(bash tools/kafka-broker/start.sh "$port" "$work/broker" "$lib" "$work/broker.log")
pids+=("$broker")
for _ in $(seq 1 300); do
  kcat -L -b "127.0.0.1:$port" -m 2 >/dev/null 2>&1 && break
  sleep 0.2
done
bootstrap="127.0.0.1:$port"
echo "Apache Kafka $(basename "$lib"/kafka_2.13-*.jar .jar | sed 's/kafka_2.13-//') on $bootstrap"

# The records: 10,000 distinct payloads the perf tests draw from.
python3 - "$work/payloads" <<'PY'
import sys
letters = "abcdefghijklmnopqrstuvwxyz0123456789"
with open(sys.argv[1], "w") as f:
    for i in range(10000):
        head = '{"id":%d,"user":"user-%d","country":"%s","amount":%d.%02d,"ok":%s,"ts":%d,"note":"' % (
            i, i % 9973, ["DE", "FR", "NL", "US"][i % 4], i % 1000, i % 100,
            "true" if i % 3 == 0 else "false", 1_700_000_000_000 + i)
        pad = max(250 - len(head) - 2, 1)
        f.write(head + "".join(letters[(i * 7 + k * 13) % 36] for k in range(pad)) + '"}\n')
PY
perf_produce() { # bootstrap topic count
  java_tool org.apache.kafka.tools.ProducerPerformance --topic "$2" --num-records "$3" --throughput -1 \
    --payload-file "$work/payloads" --producer-props bootstrap.servers="$1" acks=all enable.idempotence=true \
    compression.type=zstd linger.ms=20 batch.size=262144 | tail -1
}
java_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic ingest \
  --partitions 8 --replication-factor 1 >/dev/null
echo "producing $records records into topic ingest: $(perf_produce "$bootstrap" ingest "$records")"

# 1. Ingest against the floor. `time` prints wall seconds, user and system CPU, peak RSS (KiB).
measure() { /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >"$work/out" 2>"$work/err"; cat "$work/time"; }
read -r f_wall f_user f_sys f_rss < <(measure java -Xmx1g -cp "$lib/*" org.apache.kafka.tools.ConsumerPerformance \
  --bootstrap-server "$bootstrap" --topic ingest --num-records "$records" --group floor --timeout 120000)
f_got=$(awk -F', ' 'NR==2 { print $5 }' "$work/out")
read -r d_wall d_user d_sys d_rss < <(measure "$bin" ingest ingest "$work/table" --brokers "$bootstrap" \
  --app-id bench --create --until-end)
d_got=$(grep -o '"rowsCommitted":[0-9]*' "$work/out" | head -1 | cut -d: -f2)
awk -v n="$records" -v fw="$f_wall" -v fu="$f_user" -v fs="$f_sys" -v fr="$f_rss" -v fg="$f_got" \
  -v dw="$d_wall" -v du="$d_user" -v ds="$d_sys" -v dr="$d_rss" -v dg="$d_got" 'BEGIN {
  printf "ingest %d records of ~250 B (zstd, 8 partitions)\n", n
  printf "  floor   kafka-consumer-perf-test: %d records in %.2f s, %.0f records/s, %.2f CPU-s per million, peak RSS %.0f MiB\n", fg, fw, n / fw, (fu + fs) * 1e6 / n, fr / 1024
  printf "  deltabus ingest --until-end:      %s rows in %.2f s, %.0f records/s, %.2f CPU-s per million, peak RSS %.0f MiB\n", dg, dw, n / dw, (du + ds) * 1e6 / n, dr / 1024
  printf "  deltabus time / floor time: %.2fx; CPU %.2fx\n", dw / fw, (du + ds) / (fu + fs)
}'

# 1b. The same with 250,000-row batches (smaller files, a quarter of the batch memory).
read -r l_wall l_user l_sys l_rss < <(measure "$bin" ingest ingest "$work/table-small" --brokers "$bootstrap" \
  --app-id bench --create --until-end --max-rows 250000)
awk -v n="$records" -v w="$l_wall" -v u="$l_user" -v s="$l_sys" -v r="$l_rss" 'BEGIN {
  printf "  deltabus ingest --until-end --max-rows 250000: %.2f s, %.0f records/s, %.2f CPU-s per million, peak RSS %.0f MiB\n", w, n / w, (u + s) * 1e6 / n, r / 1024
}'

# 1c. The same with a 64 MiB batch bound (`--max-bytes`, `flush.max_bytes`).
read -r m_wall m_user m_sys m_rss < <(measure "$bin" ingest ingest "$work/table-64m" --brokers "$bootstrap" \
  --app-id bench --create --until-end --max-bytes 64MiB)
awk -v n="$records" -v w="$m_wall" -v u="$m_user" -v s="$m_sys" -v r="$m_rss" 'BEGIN {
  printf "  deltabus ingest --until-end --max-bytes 64MiB: %.2f s, %.0f records/s, %.2f CPU-s per million, peak RSS %.0f MiB\n", w, n / w, (u + s) * 1e6 / n, r / 1024
}'

# 2. Spark Structured Streaming from the same topic into Delta.
jars=$(ls "$PWD"/.tools/spark-delta/lib/{delta-,spark-sql-kafka,spark-token-provider,kafka-clients,commons-pool2}*.jar | paste -sd,)
read -r s_wall s_user s_sys s_rss < <(measure .venv/bin/python benches/spark_ingest.py "$bootstrap" ingest \
  "$work/spark-table" "$work/spark-checkpoint" "$jars" "$work/table")
spark_out=$(tail -1 "$work/out")
# The JVM's CPU and peak RSS (it is py4j's child, not waited for) from the script's report.
jvm_cpu=$(sed -E 's/.*"jvm_cpu_s": ([0-9.]+).*/\1/' <<<"$spark_out")
jvm_rss=$(sed -E 's/.*"jvm_peak_rss_kib": ([0-9]+).*/\1/' <<<"$spark_out")
stream_s=$(sed -E 's/.*"stream_s": ([0-9.]+).*/\1/' <<<"$spark_out")
awk -v n="$records" -v sw="$s_wall" -v su="$s_user" -v ss="$s_sys" -v sr="$s_rss" -v jc="$jvm_cpu" -v jr="$jvm_rss" \
  -v st="$stream_s" -v out="$spark_out" -v dw="$d_wall" -v du="$d_user" -v ds="$d_sys" -v dr="$d_rss" -v lr="$l_rss" -v mr="$m_rss" 'BEGIN {
  cpu = su + ss + jc; rss = sr + jr
  printf "spark structured streaming (local[2], availableNow): stream %.2f s (%.0f records/s), %.2f s with the session start, %.2f CPU-s per million (JVM and Python), peak RSS %.0f MiB\n", st, n / st, sw, cpu * 1e6 / n, rss / 1024
  printf "  deltabus records per CPU-second / Spark'"'"'s: %.1fx; deltabus peak RSS / Spark'"'"'s: %.2fx (%.2fx with 250,000-row batches, %.2fx with 64 MiB batches); deltabus time / Spark stream time: %.2fx\n", cpu / (du + ds), dr / rss, lr / rss, mr / rss, dw / st
  printf "  %s\n", out
}'

# 3. Produce-to-visible latency of a pipeline against this broker.
echo "latency (ingest_throughput's latency part against this broker):"
BENCH_ONLY_LATENCY=1 DELTABUS_BENCH_BROKERS="$bootstrap" cargo bench --quiet --bench ingest_throughput 2>/dev/null \
  | grep -E '^latency' || echo "  (cargo bench --bench ingest_throughput failed)"

# 4. The Java producer into deltabus's listener, and into the broker.
cat >"$work/serve.toml" <<TOML
[server]
listen = "127.0.0.1:0"
[server.tables.produced]
table = "$work/produced"
create = true
[server.kafka]
listen = "127.0.0.1:0"
[server.kafka.topics.produced]
table = "produced"
partitions = 8
TOML
coproc SERVE { exec "$bin" serve --config "$work/serve.toml" 2>"$work/serve.log"; }
pids+=("$SERVE_PID")
read -r announced <&"${SERVE[0]}"
door=$(sed -E 's/.*"kafka":"([^"]+)".*/\1/' <<<"$announced")
java_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic produced \
  --partitions 8 --replication-factor 1 >/dev/null
for target in "deltabus:$door:$SERVE_PID" "kafka:$bootstrap:$broker"; do
  IFS=: read -r name host tport pid <<<"$target"
  before=$(cpu_of "$pid")
  line=$(perf_produce "$host:$tport" produced "$produce_records")
  after=$(cpu_of "$pid")
  rate=$(sed -E 's/.*, ([0-9.]+) records\/sec.*/\1/' <<<"$line")
  awk -v name="$name" -v n="$produce_records" -v r="$rate" -v c="$(awk -v a="$after" -v b="$before" 'BEGIN{print a-b}')" \
    -v line="$line" 'BEGIN { printf "produce into %-8s %.0f records/s, server %.2f CPU-s, %.2f us of server CPU a record (%s)\n", name, r, c, c * 1e6 / n, line }'
done
