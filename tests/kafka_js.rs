//! A third implementation of the Kafka protocol against the listener: KafkaJS (JavaScript,
//! from npm; it shares no code with librdkafka or kafka-python). Its idempotent producers
//! land every record once across partitions, compressed or not; its admin client lists the
//! topic's offsets; its group consumer is refused with an error naming the missing API.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::processes::{terminate, wait_for_client};
use crate::support::{required, rows};

/// Two idempotent producers (`acks=-1`, one retry policy), sending `n` records each in
/// batches of 50, alternately gzip and uncompressed, every other record keyed, Unicode in
/// every value; then the admin client's offsets, then a group consumer's attempt.
const SCRIPT: &str = r#"
const [modules, broker, topic, count] = process.argv.slice(-4);
const n = parseInt(count);
const { Kafka, CompressionTypes, logLevel } = require(modules + '/kafkajs');
const kafka = new Kafka({ clientId: 'kafkajs-test', brokers: [broker], logLevel: logLevel.ERROR,
                          retry: { retries: 30, initialRetryTime: 50, maxRetryTime: 1000 } });
async function produce(p) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let b = 0; b < n; b += 50) {
    const messages = [];
    for (let i = b; i < Math.min(n, b + 50); i++) {
      const id = p * 1000000 + i;
      messages.push({ key: i % 2 ? null : `k${i % 7}`, value: JSON.stringify({ id, name: `Zürich ☃ 🦀 ${i}` }) });
    }
    const compression = (b / 50) % 2 ? CompressionTypes.GZIP : CompressionTypes.None;
    await producer.send({ topic, acks: -1, compression, messages });
  }
  await producer.disconnect();
}
(async () => {
  await Promise.all([produce(1), produce(2)]);
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const consumer = kafka.consumer({ groupId: 'etl', retry: { retries: 0 } });
  let crash = null;
  consumer.on(consumer.events.CRASH, e => { crash = String(e.payload.error); });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async () => {} });
  for (let i = 0; i < 600 && !crash; i++) await new Promise(r => setTimeout(r, 50));
  await consumer.disconnect().catch(() => {});
  console.log(JSON.stringify({ offsets, crash }));
  process.exit(0);
})().catch(e => { console.error(String(e && e.stack || e)); process.exit(1); });
"#;

fn kafkajs_modules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/node_modules")
}

fn node_and_kafkajs_present() -> bool {
    let node = Command::new("node").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    node && kafkajs_modules().join("kafkajs/package.json").exists()
}

#[test]
fn kafkajs_producers_land_every_record_once() {
    if !required(
        node_and_kafkajs_present(),
        "node or KafkaJS is not installed",
        "scripts/setup.sh installs KafkaJS from npm",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events");
    let config = dir.path().join("deltabus.toml");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\ncommit_window = \"30ms\"\n\n[server.tables.events]\ntable = {table:?}\ncreate = true\n\n\
         [server.kafka]\nlisten = \"127.0.0.1:0\"\n\n[server.kafka.topics.events]\ntable = \"events\"\npartitions = 3\n",
        table = table.to_string_lossy()
    );
    std::fs::write(&config, text).unwrap();
    let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let announced: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("serve printed {first:?} ({e})"));
    let addr = announced["kafka"].as_str().expect("the Kafka listener's address").to_string();

    const EACH: i64 = 400;
    let client = Command::new("node")
        .arg("-e")
        .arg(SCRIPT)
        .arg(kafkajs_modules())
        .arg(&addr)
        .arg("events")
        .arg(EACH.to_string())
        .env("KAFKAJS_NO_PARTITIONER_WARNING", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (status, stdout, err) = wait_for_client(client, "kafkajs");
    let log_text = || std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
    assert!(status.success(), "kafkajs: {err}\nserver log:\n{}", log_text());
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("kafkajs printed {stdout}"));

    // ListOffsets through KafkaJS's admin client: every partition, the end not before the start.
    let offsets = report["offsets"].as_array().expect("offsets");
    let mut partitions: Vec<i64> = offsets.iter().map(|o| o["partition"].as_i64().unwrap()).collect();
    partitions.sort_unstable();
    assert_eq!(partitions, [0, 1, 2], "{report}");
    for o in offsets {
        let (low, high): (u64, u64) =
            (o["low"].as_str().unwrap().parse().unwrap(), o["high"].as_str().unwrap().parse().unwrap());
        assert!(high > low, "every partition got records: {report}");
    }
    // The group protocol is refused by what the listener announces, not by a hang.
    let crash = report["crash"].as_str().unwrap_or_else(|| panic!("a group consumer must be refused: {report}"));
    assert!(crash.contains("does not support"), "{crash}");

    let (status, _) = terminate(server);
    assert!(status.success(), "serve stops cleanly on SIGTERM");
    let rows = rows(&table.to_string_lossy());
    let mut ids: Vec<i64> = rows.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    let expected: Vec<i64> = (1..=2).flat_map(|p| (0..EACH).map(move |i| p * 1_000_000 + i)).collect();
    assert_eq!(ids, expected, "every record exactly once");
    let sample = rows.iter().find(|r| r["id"] == 2_000_007).expect("record 7 of producer 2");
    assert_eq!(sample["name"], "Zürich ☃ 🦀 7", "Unicode lands as sent");
}
