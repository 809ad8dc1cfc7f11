//! The change feed over Fetch: the limits a consumer asks for hold whether a fetch's
//! partitions are read one after another or at once; large commits are read in parts; store
//! faults never lose or repeat a change.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;
use serde_json::Value;

use crate::support::listener::{call, config, start};
use crate::support::processes::terminate;

/// The offset after the last batch in a partition's answer (`None`: no batch).
fn next_offset(mut records: &[u8]) -> Option<i64> {
    let mut next = None;
    while records.len() >= 27 {
        let base = i64::from_be_bytes(records[..8].try_into().unwrap());
        let len = i32::from_be_bytes(records[8..12].try_into().unwrap()) as usize;
        let delta = i32::from_be_bytes(records[23..27].try_into().unwrap());
        next = Some(base + i64::from(delta) + 1);
        records = &records[12 + len..];
    }
    next
}

/// Fetch requests over four partitions, each limited below the size of one record, with a
/// request limit that fits them all (read at once) or not (read in turn), the partitions named
/// in a rotating order: every answer has at most one partition past its limit, the first with
/// records, and stays within the request's limit but for that one; every change arrives once.
#[tokio::test(flavor = "multi_thread")]
async fn fetch_limits_hold_whether_partitions_are_read_at_once_or_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    // 48 commits of one ~400-byte row each, one file each: rows spread over the partitions.
    let commits: Vec<String> =
        (0..48).map(|c| format!("{{\"id\":{c},\"pad\":\"{}\"}}\n", "é".repeat(180 + c))).collect();
    let commits: Vec<&str> = commits.iter().map(String::as_str).collect();
    std::fs::create_dir_all(&events).unwrap();
    crate::support::tables::table_of_commits(&events, &commits).await;
    let (kafka, _http, _stop, _) = start(config(&events, 4), &[]).await;
    let mut stream = tokio::net::TcpStream::connect(&kafka).await.unwrap();
    const LIMIT: i32 = 100;
    let mut offsets = [0i64; 4];
    let (mut ids, mut round, mut ends) = (Vec::new(), 0usize, [None::<i64>; 4]);
    let (mut at_once, mut in_turn, mut exceeded) = (0, 0, 0);
    while ends.iter().zip(&offsets).any(|(end, o)| end.is_none_or(|e| *o < e)) {
        assert!(round < 2_000, "the end of the feed was never reached: {} rows", ids.len());
        // Even rounds: 4 × LIMIT fits the request (at once); odd ones: it does not (in turn).
        let max_bytes = if round % 2 == 0 { 1_000_000 } else { 2 * LIMIT + 50 };
        let order: Vec<i32> = (0..4).map(|i| ((i + round) % 4) as i32).collect();
        let partitions = order
            .iter()
            .map(|p| {
                FetchPartition::default()
                    .with_partition(*p)
                    .with_fetch_offset(offsets[*p as usize])
                    .with_partition_max_bytes(LIMIT)
            })
            .collect();
        let request = FetchRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_max_wait_ms(0)
            .with_max_bytes(max_bytes)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("events")))
                .with_partitions(partitions)]);
        let answer: FetchResponse = call(&mut stream, ApiKey::Fetch, 11, &request).await;
        let answered = &answer.responses[0].partitions;
        assert_eq!(answered.iter().map(|p| p.partition_index).collect::<Vec<_>>(), order, "partitions in order");
        let (mut total, mut first) = (0usize, None);
        for p in answered {
            assert_eq!(p.error_code, 0, "partition {}: error {}", p.partition_index, p.error_code);
            let records = p.records.clone().unwrap_or_default();
            let got = records.len();
            if got > LIMIT as usize {
                assert!(
                    first.is_none(),
                    "round {round}: partition {} past its limit after another with records",
                    p.partition_index
                );
                exceeded += 1;
            }
            if got > 0 && first.is_none() {
                first = Some(got);
            }
            total += got;
            ends[p.partition_index as usize] = Some(p.high_watermark);
            if let Some(next) = next_offset(&records) {
                let index = p.partition_index as usize;
                let mut bytes = Bytes::from(records.to_vec());
                for r in RecordBatchDecoder::decode(&mut bytes).unwrap().records {
                    assert!(r.offset >= offsets[index], "partition {index}: offset {} went back", r.offset);
                    let v: Value = serde_json::from_slice(&r.value.unwrap()).unwrap();
                    ids.push(v["id"].as_i64().unwrap());
                }
                offsets[index] = next;
            }
        }
        assert!(
            total <= (max_bytes as usize).max(first.unwrap_or(0)),
            "round {round}: {total} bytes against a limit of {max_bytes}"
        );
        if round % 2 == 0 {
            at_once += 1
        } else {
            in_turn += 1
        }
        round += 1;
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..48).collect::<Vec<_>>(), "every change once");
    assert!(exceeded > 0 && at_once > 0 && in_turn > 0, "both ways were taken, and records past the limit answered");
}

/// Commits larger than what a consumer asks for per fetch are read in parts (offsets name
/// rows), the response stays within the consumer's limits however many partitions it reads,
/// and every partition reaches its end: every row once, offsets increasing.
#[tokio::test(flavor = "multi_thread")]
async fn large_commits_are_fetched_within_the_consumers_limits() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    // Two commits of 12,000 rows of ~200 bytes each: about 2.5 MB of change records per commit.
    for c in 0..2 {
        let body: String =
            (0..12_000).map(|n| format!("{{\"id\":{},\"pad\":\"{}\"}}\n", c * 100_000 + n, "ü".repeat(80))).collect();
        crate::support::tables::write_lines(&events, &body);
    }
    let (kafka, _http, _stop, _) = start(config(&events, 4), &[]).await;
    let rows = tokio::task::spawn_blocking(move || {
        use rdkafka::consumer::{BaseConsumer, Consumer};
        use rdkafka::{Message, Offset, TopicPartitionList};
        let _guard = crate::support::native_clients_lock();
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &kafka)
            .set("group.id", "large")
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "true")
            // A response larger than this is an error in librdkafka.
            .set("fetch.max.bytes", "300000")
            .set("message.max.bytes", "200000")
            .set("receive.message.max.bytes", "400000")
            .set("max.partition.fetch.bytes", "100000")
            .create()
            .unwrap();
        let mut list = TopicPartitionList::new();
        for p in 0..4 {
            list.add_partition_offset("events", p, Offset::Beginning).unwrap();
        }
        consumer.assign(&list).unwrap();
        let (mut rows, mut ended) = (Vec::new(), BTreeSet::new());
        let mut last: BTreeMap<i32, i64> = BTreeMap::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        while ended.len() < 4 {
            assert!(Instant::now() < deadline, "the end of the feed was never reached: {} rows", rows.len());
            match consumer.poll(Duration::from_millis(500)) {
                Some(Ok(m)) => {
                    let (p, o) = (m.partition(), m.offset());
                    assert!(last.get(&p).is_none_or(|prev| o > *prev), "partition {p}: offsets went back to {o}");
                    last.insert(p, o);
                    ended.remove(&p);
                    let v: Value = serde_json::from_slice(m.payload().unwrap()).unwrap();
                    rows.push(v["id"].as_i64().unwrap());
                }
                Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                    ended.insert(p);
                }
                Some(Err(e)) => panic!("{e}"),
                None => {}
            }
        }
        rows
    })
    .await
    .unwrap();
    let mut rows = rows;
    rows.sort_unstable();
    let expected: Vec<i64> = (0..2).flat_map(|c| (0..12_000).map(move |n| c * 100_000 + n)).collect();
    assert_eq!(rows, expected, "every row once");
}

/// The feed through store faults on 60% of the calls (20 to 50 of a run's partition reads fail
/// through the retries; at half the calls, as few as none did): a consumer reading every partition from the start and
/// one starting halfway (its reads move the first one's cursor over the commits between, and
/// a fault there drops the cursor) each see every change of their range once, in order per
/// partition; failed reads answer KAFKA_STORAGE_ERROR and the consumers retry.
#[test]
fn the_feed_is_fetched_exactly_once_through_store_faults() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    // 160 small commits, one file each: each commit has rows in one of the 4 partitions.
    let commits: Vec<String> =
        (0..160).map(|c| (0..3).map(|n| format!("{{\"id\":{},\"v\":\"ß{n}\"}}\n", c * 10 + n)).collect()).collect();
    let commits: Vec<&str> = commits.iter().map(String::as_str).collect();
    std::fs::create_dir_all(&events).unwrap();
    crate::support::kafka::runtime().block_on(crate::support::tables::table_of_commits(&events, &commits));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = dir.path().join("serve.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[server.tables.events]\ntable = {events:?}\n\
             [server.kafka]\nlisten = \"127.0.0.1:{port}\"\n\
             [server.kafka.topics.events]\ntable = \"events\"\npartitions = 4\n"
        ),
    )
    .unwrap();
    let log = dir.path().join("server.log");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    eprintln!("seed {seed}");
    let server = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["serve", "--config"])
        .arg(&cfg)
        .env("DELTABUS_FAULTS", format!("rate=0.6,seed={seed}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let (from_start, from_half) = {
        use rdkafka::consumer::{BaseConsumer, Consumer};
        use rdkafka::{Message, Offset, TopicPartitionList};
        let _guard = crate::support::native_clients_lock();
        let consumer = |start: Offset| {
            let c: BaseConsumer = rdkafka::ClientConfig::new()
                .set("bootstrap.servers", format!("127.0.0.1:{port}"))
                .set("group.id", "faults")
                .set("enable.auto.commit", "false")
                .set("enable.partition.eof", "true")
                // A few commits per answer, so the partitions' readers are far apart.
                .set("max.partition.fetch.bytes", "400")
                .set("fetch.error.backoff.ms", "20")
                .set("reconnect.backoff.max.ms", "200")
                .create()
                .unwrap();
            let mut list = TopicPartitionList::new();
            for p in 0..4 {
                list.add_partition_offset("events", p, start).unwrap();
            }
            c.assign(&list).unwrap();
            c
        };
        // Row 0 of commit 80: an offset is `version << 24 | row`.
        let half = 80_i64 << 24;
        let readers = [consumer(Offset::Beginning), consumer(Offset::Offset(half))];
        let mut seen: [Vec<(i64, i64)>; 2] = [Vec::new(), Vec::new()];
        let mut last: [BTreeMap<i32, i64>; 2] = [BTreeMap::new(), BTreeMap::new()];
        let mut ended: [BTreeSet<i32>; 2] = [BTreeSet::new(), BTreeSet::new()];
        let deadline = Instant::now() + Duration::from_secs(240);
        while ended.iter().any(|e| e.len() < 4) {
            assert!(Instant::now() < deadline, "the end of the feed was never reached: {:?}", seen.map(|s| s.len()));
            for (i, reader) in readers.iter().enumerate() {
                match reader.poll(Duration::from_millis(50)) {
                    Some(Ok(m)) => {
                        let (p, o) = (m.partition(), m.offset());
                        assert!(
                            last[i].get(&p).is_none_or(|prev| o > *prev),
                            "partition {p}: offsets went back to {o}"
                        );
                        last[i].insert(p, o);
                        ended[i].remove(&p);
                        let v: Value = serde_json::from_slice(m.payload().unwrap()).unwrap();
                        seen[i].push((v["_commit_version"].as_i64().unwrap(), v["id"].as_i64().unwrap()));
                    }
                    Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                        ended[i].insert(p);
                    }
                    // A failed read reaches the application as an error; the consumer goes on.
                    Some(Err(e)) => eprintln!("consumer {i}: {e}"),
                    None => {}
                }
            }
        }
        let [a, b] = seen;
        (a, b)
    };
    let (status, _) = terminate(server);
    assert!(status.success(), "a stopped server exits 0");
    let sorted = |mut v: Vec<(i64, i64)>| {
        v.sort_unstable();
        v
    };
    let expected: Vec<(i64, i64)> = (0..160).flat_map(|c| (0..3).map(move |n| (c, c * 10 + n))).collect();
    assert_eq!(sorted(from_start), expected, "every change once from the start");
    let later: Vec<(i64, i64)> = expected.into_iter().filter(|(v, _)| *v >= 80).collect();
    assert_eq!(sorted(from_half), later, "every change once from halfway");
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(!logs.contains("panicked"), "{logs}");
    let failed = logs.matches("kafka.fetch_failed").count();
    eprintln!("{failed} partition reads failed");
    assert!(failed > 0, "no read failed: the faults were not met\n{logs}");
}
