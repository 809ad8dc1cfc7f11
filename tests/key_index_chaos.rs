//! A keyed table under everything at once: `deltabus run` workers killed with -9 at random
//! moments, every store call failing 3% of the time (before or after it took effect), the
//! background compactor rewriting files the flushes are deleting rows from, and a concurrent
//! `deltabus delete` by predicate. At the end every key has exactly its last value (deltabus
//! and the reference reader), and the change data feed is exactly what the records imply:
//! replayed per key in commit order, each pre-image is the row the key had, each post-image or
//! insert its next value, and the replay ends at the table's rows.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::keyed_rows as live;

const KEYS: i64 = 1_500;
const VERSIONS: i64 = 4;
/// Keys written once, then deleted by predicate while the workers run.
const DOOMED: std::ops::Range<i64> = 10_000..10_100;

fn expected() -> BTreeMap<i64, i64> {
    crate::support::keyed_final_state(KEYS, VERSIONS)
}

/// Replays the change feed per key in commit order (within a commit, removals before
/// additions) and returns the state it ends at; a change that does not follow from the key's
/// state fails.
fn replay(feed: &str) -> BTreeMap<i64, i64> {
    let mut rows: Vec<(i64, u8, i64, i64, String)> = feed
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            let kind = r["_change_type"].as_str().unwrap().to_string();
            let order = u8::from(matches!(kind.as_str(), "insert" | "update_postimage"));
            (r["_commit_version"].as_i64().unwrap(), order, r["id"].as_i64().unwrap(), r["v"].as_i64().unwrap(), kind)
        })
        .collect();
    rows.sort();
    let mut state: BTreeMap<i64, i64> = BTreeMap::new();
    for (version, _, id, v, kind) in rows {
        match kind.as_str() {
            "insert" => assert!(state.insert(id, v).is_none(), "v{version}: insert of live key {id}"),
            "update_postimage" => {
                assert!(state.insert(id, v).is_none(), "v{version}: post-image of {id} without its pre-image")
            }
            "update_preimage" | "delete" => {
                assert_eq!(state.remove(&id), Some(v), "v{version}: {kind} of {id} is not the row it had")
            }
            other => panic!("unknown change type {other}"),
        }
    }
    state
}

#[test]
fn keyed_upserts_with_compaction_deletes_kills_and_faults_keep_every_key_and_change_exact() {
    use std::process::{Command, Stdio};
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("keyed").to_string_lossy().into_owned();
    let Some((brokers, topic)) = crate::support::kafka::apache_topic("cdc", 4) else { return };
    let config = dir.path().join("deltabus.toml");
    std::fs::write(
        &config,
        format!(
            "[pipelines.kv]\ntable = \"{table}\"\napp_id = \"kv\"\ncreate = true\n\
             properties = {{ \"delta.enableChangeDataFeed\" = \"true\" }}\n\
             [pipelines.kv.kafka]\nbrokers = \"{brokers}\"\ntopic = \"{topic}\"\n\
             properties = {{ \"session.timeout.ms\" = \"6000\", \"heartbeat.interval.ms\" = \"500\" }}\n\
             [pipelines.kv.flush]\nmax_latency = \"300ms\"\nmax_rows = 600\n\
             [pipelines.kv.upsert]\nkey_columns = [\"id\"]\n\
             [pipelines.kv.compaction]\nenabled = true\nmin_files = 3\ninterval = \"400ms\"\ndeleted_rows_ratio = 0.05\n"
        ),
    )
    .unwrap();
    let log = dir.path().join("workers.log");
    let spawn = || {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        Command::new(env!("CARGO_BIN_EXE_deltabus"))
            .args(["run", "--config", config.to_str().unwrap()])
            .env("DELTABUS_FAULTS", "rate=0.03,seed=29")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let producer = crate::support::start_keyed_producer(brokers.clone(), topic.clone(), KEYS, VERSIONS, DOOMED, 14);
    // The predicate delete, once the doomed keys are in, beside the workers (retried through
    // its own faults and conflicts until it reports success).
    let deleter = {
        let table = table.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while Instant::now() < deadline {
                let in_table = live(&crate::support::deltabus(&["cat", &table]))
                    .is_some_and(|m| DOOMED.clone().all(|id| m.contains_key(&id)));
                if in_table {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            loop {
                let out = Command::new(env!("CARGO_BIN_EXE_deltabus"))
                    .args(["delete", &table, "--where", &format!("id >= {}", DOOMED.start)])
                    .env("DELTABUS_FAULTS", "rate=0.03,seed=31")
                    .output()
                    .unwrap();
                if out.status.success() {
                    return String::from_utf8_lossy(&out.stdout).to_string();
                }
                assert!(
                    Instant::now() < deadline,
                    "the delete never succeeded: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        })
    };
    crate::support::kill_at_random_moments(3, spawn);
    let last = spawn();
    producer.join().unwrap();
    let deleted = deleter.join().unwrap();
    eprintln!("delete: {deleted}");
    let expected = expected();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut got = None;
    while Instant::now() < deadline {
        got = live(&crate::support::deltabus(&["cat", &table]));
        if got.as_ref() == Some(&expected) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (status, _) = crate::support::terminate(last);
    assert!(status.success(), "graceful exit");
    let got = got.unwrap_or_default();
    let log_tail =
        || std::fs::read_to_string(&log).unwrap_or_default().lines().rev().take(20).collect::<Vec<_>>().join("\n");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!(
        "compactor bins: {} remapped, {} abandoned",
        text.matches("compact.bin_remapped").count(),
        text.matches("compact.bin_abandoned").count()
    );
    assert!(got == expected, "{} keys live, {} expected; log:\n{}", got.len(), expected.len(), log_tail());
    if let Some(oracle) = crate::support::kernel_oracle() {
        let out = Command::new(oracle).args(["rows", &table]).output().unwrap();
        assert_eq!(live(&out), Some(expected.clone()), "the reference reader");
    }
    let feed = crate::support::deltabus(&["changes", &table, "--from", "0"]);
    assert!(feed.status.success(), "{}", String::from_utf8_lossy(&feed.stderr));
    assert_eq!(replay(&String::from_utf8_lossy(&feed.stdout)), expected, "the change feed replays to the table");
    let history = String::from_utf8_lossy(&crate::support::deltabus(&["history", &table]).stdout).to_string();
    assert!(history.contains("\"OPTIMIZE\""), "the compactor ran beside the flushes");
}
