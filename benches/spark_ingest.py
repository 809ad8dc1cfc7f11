"""Spark Structured Streaming from Kafka into Delta (the alternative deltabus is measured
against in benches/apache_kafka.sh): local[2], trigger(availableNow), the records' JSON parsed
into the same seven columns deltabus infers. Then Spark scans the table it wrote and the
table deltabus wrote from the same records (sum and count over every row, best of three).

    python benches/spark_ingest.py BOOTSTRAP TOPIC SPARK_TABLE CHECKPOINT JARS DELTABUS_TABLE

Prints one JSON object: rows written, seconds of the session start and of the stream, the
JVM's CPU seconds and peak RSS (KiB) through the stream, scan seconds of both tables.
"""
import json
import os
import sys
import time

from pyspark.sql import functions as F

# The test suite's Spark session (tools/spark-delta/server.py), with the Kafka source's jars.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "spark-delta"))
from server import session as spark_session  # noqa: E402

bootstrap, topic, table, checkpoint, jars, ours = sys.argv[1:7]
started = time.time()
spark = spark_session(jars.split(","), app="spark-ingest-bench")
spark.sparkContext.setLogLevel("ERROR")
session = time.time() - started
schema = "id BIGINT, user STRING, country STRING, amount DOUBLE, ok BOOLEAN, ts BIGINT, note STRING"
rows = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("subscribe", topic)
    .option("startingOffsets", "earliest")
    .load()
    .select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
    .select("r.*")
)
t0 = time.time()
query = rows.writeStream.format("delta").option("checkpointLocation", checkpoint).trigger(availableNow=True).start(table)
query.awaitTermination()
stream = time.time() - t0


def scan(path):
    best = None
    for _ in range(3):
        t = time.time()
        spark.read.format("delta").load(path).agg(F.sum("amount"), F.count("*")).collect()
        best = min(best or 1e9, time.time() - t)
    return best


written = spark.read.format("delta").load(table).count()
# The JVM is py4j's child and is not waited for: its CPU and peak RSS from /proc, before the
# scans (which are not part of ingestion).
jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
with open(f"/proc/{jvm}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
jvm_cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
with open(f"/proc/{jvm}/status") as f:
    hwm_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps({"rows": written, "session_s": session, "stream_s": stream, "jvm_cpu_s": jvm_cpu,
                  "jvm_peak_rss_kib": hwm_kib, "scan_spark_table_s": scan(table),
                  "scan_deltabus_table_s": scan(ours)}))
