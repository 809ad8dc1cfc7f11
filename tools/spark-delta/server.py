"""Spark with Delta Lake, the reference engine of the test suite, as one long-lived process.

    python tools/spark-delta/server.py PORT JARS_DIR

Starts one Spark session (pyspark from the venv, local[2], the Delta SQL extension and catalog,
the jars of JARS_DIR resolved by scripts/setup.sh, nothing downloaded), then answers requests
on 127.0.0.1:PORT, one JSON object a line, one at a time:

    {"sql": "SELECT ..."}           -> {"rows": [{...}, ...]}   (each row as Spark's to_json)
    {"sql": ["stmt", ..., "SELECT"]}  the statements in order; the rows of the last
    {"stream_once": {"source": path, "sink": path, "checkpoint": path}}
                                    -> {"rows": [], "batches": n}
        a Structured Streaming query from the Delta table at source into the one at sink,
        run with trigger(availableNow) to the end of what the source holds now
    {"ping": true}                  -> {"ok": true}

A failing statement answers {"error": "<exception class>: <message>"}. Times are UTC.
"""

import glob
import json
import os
import socketserver
import sys
import threading
import traceback


def session(jars, app="deltabus-tests"):
    """A local[2] Spark session with `jars` and Delta's SQL extension and catalog, on
    127.0.0.1, without its UI, in UTC."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.jsonGenerator.ignoreNullFields", "false")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        .config("spark.sql.warehouse.dir", os.path.join(os.environ.get("TMPDIR", "/tmp"), "deltabus-spark-warehouse"))
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def answer(spark, request):
    if request.get("ping"):
        return {"ok": True}
    if "stream_once" in request:
        r = request["stream_once"]
        query = (
            spark.readStream.format("delta")
            .load(r["source"])
            .writeStream.format("delta")
            .option("checkpointLocation", r["checkpoint"])
            .trigger(availableNow=True)
            .start(r["sink"])
        )
        query.awaitTermination()
        return {"rows": [], "batches": len(query.recentProgress)}
    statements = request["sql"]
    if isinstance(statements, str):
        statements = [statements]
    df = None
    for s in statements:
        df = spark.sql(s)
    return {"rows": [json.loads(r) for r in df.toJSON().collect()]}


def main():
    port, jars_dir = int(sys.argv[1]), sys.argv[2]
    jars = sorted(glob.glob(os.path.join(jars_dir, "delta-*.jar")))
    if not jars:
        sys.exit(f"spark-delta: no Delta jars in {jars_dir}: run scripts/setup.sh")
    spark = session(jars)
    lock = threading.Lock()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            for line in self.rfile:
                try:
                    with lock:
                        out = answer(spark, json.loads(line))
                except Exception as e:  # every failure is an answer, never a dead server
                    name = type(e).__name__
                    desc = getattr(e, "desc", None) or str(e)
                    out = {"error": f"{name}: {desc}".strip()[:4000]}
                    traceback.print_exc()
                self.wfile.write((json.dumps(out, ensure_ascii=False) + "\n").encode())
                self.wfile.flush()

    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    with Server(("127.0.0.1", port), Handler) as server:
        print(f"spark-delta: ready on 127.0.0.1:{port}", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()
