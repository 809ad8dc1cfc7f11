//! Many topics into many tables: `kafka.topics` and `kafka.topic_pattern` with a `{topic}`
//! table template (a topic created while running is picked up; topics the pattern does not
//! match are not read), several topics into one table, and `deltabus run` processes killed
//! with -9 and restarted while two matching topics are produced to — every record lands in
//! its topic's table exactly once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::support::{ids, pipeline, produce, rows, run_until, runtime};
use rdkafka::mocking::MockCluster;
fn records(n: i64, partitions: i32) -> Vec<(i32, Option<String>, Option<String>)> {
    (0..n).map(|i| ((i % i64::from(partitions)) as i32, None, Some(format!("{{\"id\":{i}}}")))).collect()
}

#[test]
fn a_topic_pattern_fans_out_into_a_table_per_topic_and_picks_up_new_topics() {
    let _guard = crate::support::native_clients_lock();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let template = format!("{}/{{topic}}", dir.path().display());
    let cluster = MockCluster::new(1).unwrap();
    for t in ["orders.eu", "orders.us", "audit"] {
        cluster.create_topic(t, 2, 1).unwrap();
    }
    let brokers = cluster.bootstrap_servers();
    rt.block_on(async {
        produce(&brokers, "orders.eu", &records(300, 2)).await;
        produce(&brokers, "orders.us", &records(200, 2)).await;
        produce(&brokers, "audit", &records(50, 2)).await;
    });
    let mut p = pipeline(&brokers, "", &template);
    p.kafka.topic_pattern = Some(r"orders\..+".into());
    p.kafka.topic_refresh = "300ms".parse().unwrap();
    let table_eu = format!("{}/orders.eu", dir.path().display());
    let table_us = format!("{}/orders.us", dir.path().display());
    let running = rt.spawn(run_until(vec![p], None, |m| {
        let n = |name: &str| crate::support::committed(m, name);
        n("p0/orders.eu") == 300 && n("p0/orders.us") == 200 && n("p0/orders.apac") == 120
    }));
    // A topic created while the pipeline runs, once the first two have landed.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(dir.path().join("orders.eu/_delta_log").exists() && dir.path().join("orders.us/_delta_log").exists()) {
        assert!(Instant::now() < deadline, "the first topics never landed");
        std::thread::sleep(Duration::from_millis(100));
    }
    cluster.create_topic("orders.apac", 3, 1).unwrap();
    rt.block_on(produce(&brokers, "orders.apac", &records(120, 3)));
    let reports = rt.block_on(running).unwrap();
    assert_eq!(reports["p0/orders.eu"].rows_committed, 300, "{reports:?}");
    assert_eq!(reports["p0/orders.us"].rows_committed, 200, "{reports:?}");
    assert_eq!(reports["p0/orders.apac"].rows_committed, 120, "{reports:?}");
    assert!(!reports.contains_key("p0/audit"), "{reports:?}");
    drop(cluster);
    assert_eq!(ids(&table_eu), (0..300).collect::<Vec<_>>());
    assert_eq!(ids(&table_us), (0..200).collect::<Vec<_>>());
    assert_eq!(ids(&format!("{}/orders.apac", dir.path().display())), (0..120).collect::<Vec<_>>());
    assert!(!dir.path().join("audit").exists(), "the audit topic is not matched");
}

#[test]
fn listed_topics_can_share_one_table() {
    let _guard = crate::support::native_clients_lock();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("all").to_string_lossy().into_owned();
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("a", 2, 1).unwrap();
    cluster.create_topic("b-1", 2, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    rt.block_on(async {
        produce(&brokers, "a", &records(100, 2)).await;
        let b: Vec<_> = (100..250).map(|i| (i % 2, None, Some(format!("{{\"id\":{i}}}")))).collect();
        produce(&brokers, "b-1", &b).await;
    });
    let mut p = pipeline(&brokers, "", &table);
    p.kafka.topics = vec!["a".into(), "b-1".into()];
    p.columns.topic = Some("topic".into());
    let reports = rt.block_on(run_until(vec![p], None, |m| {
        crate::support::committed(m, "p0/a") == 100 && crate::support::committed(m, "p0/b-1") == 150
    }));
    drop(cluster);
    assert_eq!(ids(&table), (0..250).collect::<Vec<_>>(), "{reports:?}");
    let by_topic: BTreeMap<String, usize> = rows(&table).iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r["topic"].as_str().unwrap_or_default().to_string()).or_default() += 1;
        m
    });
    assert_eq!(by_topic, BTreeMap::from([("a".to_string(), 100), ("b-1".to_string(), 150)]));
    // One position per (topic, partition) in the shared table.
    let d = crate::support::run_json(&["describe", &table]);
    let txns: Vec<String> = d["txns"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(txns, vec!["ingest-a-0", "ingest-a-1", "ingest-b-1-0", "ingest-b-1-1"], "{d}");
}

#[test]
fn topic_routing_and_envelope_settings_are_checked() {
    let mut p = pipeline("127.0.0.1:9092", "t", "/tmp/x");
    p.kafka.topics = vec!["u".into()];
    let e = p.validate("p").unwrap_err().to_string();
    assert!(e.contains("one of topic, topics and topic_pattern"), "{e}");
    let mut p = pipeline("127.0.0.1:9092", "", "/tmp/x");
    p.kafka.topic_pattern = Some("orders.(".into());
    let e = p.validate("p").unwrap_err().to_string();
    assert!(e.contains("kafka.topic_pattern") && e.contains("unclosed"), "{e}");
    let p = pipeline("127.0.0.1:9092", "", "/tmp/x");
    assert!(p.validate("p").unwrap_err().to_string().contains("topic_pattern"));
    // Routing needs its placeholder in the table template.
    let mut p = pipeline("127.0.0.1:9092", "t", "/tmp/x");
    p.route_by = Some("region".into());
    let e = p.validate("p").unwrap_err().to_string();
    assert!(e.contains("{region}"), "{e}");
    // Debezium envelopes come as JSON or Avro.
    let mut p = pipeline("127.0.0.1:9092", "t", "/tmp/x");
    p.kafka.format = "protobuf".into();
    p.schema_registry =
        Some(deltabus::decode::registry::RegistryConfig { url: "http://127.0.0.1:1".into(), ..Default::default() });
    p.upsert = Some(deltabus::config::UpsertConfig {
        key_columns: vec!["id".into()],
        format: deltabus::config::UpsertFormat::Debezium,
        op_field: None,
        index_memory: deltabus::config::DEFAULT_INDEX_MEMORY,
    });
    let e = p.validate("p").unwrap_err().to_string();
    assert!(e.contains("upsert.format") && e.contains("protobuf"), "{e}");
}

/// A `deltabus run` configuration in `dir` of one pipeline `p`: `pipeline` and `kafka` are its
/// own keys; the group timing and flush settings are the worker tests'.
fn worker_config(dir: &std::path::Path, brokers: &str, pipeline: &str, kafka: &str) -> std::path::PathBuf {
    let config = dir.join("deltabus.toml");
    let text = format!(
        "[pipelines.p]\n{pipeline}\n[pipelines.p.kafka]\nbrokers = \"{brokers}\"\n{kafka}\n\
         properties = {{ \"session.timeout.ms\" = \"6000\", \"heartbeat.interval.ms\" = \"500\" }}\n\
         [pipelines.p.flush]\nmax_latency = \"300ms\"\nmax_rows = 500\n"
    );
    std::fs::write(&config, text).unwrap();
    config
}

/// `deltabus run` on `config`, its log appended to `log`; with `DELTABUS_FAULTS` when
/// `config`'s directory holds a `faults` file (the spec).
fn spawn_run(config: &std::path::Path, log: &std::path::Path) -> std::process::Child {
    let faults = std::fs::read_to_string(config.with_file_name("faults")).unwrap_or_default();
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"));
    if !faults.trim().is_empty() {
        run.env("DELTABUS_FAULTS", faults.trim());
    }
    run.args(["run", "--config", config.to_str().unwrap()])
        .env("DELTABUS_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn deltabus run")
}

#[test]
fn a_topic_pattern_is_exactly_once_under_kill_dash_nine() {
    use crate::support::{assert_exactly_once, start_producer_to, table_rows, terminate, wait_for_rows, TOTAL};
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let cluster = MockCluster::new(1).unwrap();
    for t in ["orders.a", "orders.b", "other"] {
        cluster.create_topic(t, 4, 1).unwrap();
    }
    let brokers = cluster.bootstrap_servers();
    let config = worker_config(
        dir.path(),
        &brokers,
        &format!("table = \"{}/{{topic}}\"\napp_id = \"fan\"\ncreate = true", dir.path().display()),
        "topic_pattern = 'orders\\.[a-z]'\ntopic_refresh = \"500ms\"",
    );
    let log = dir.path().join("workers.log");
    let producers = [
        start_producer_to(brokers.clone(), "orders.a".into(), 15),
        start_producer_to(brokers.clone(), "orders.b".into(), 15),
    ];
    crate::support::kill_at_random_moments(3, || spawn_run(&config, &log));
    let (a, b) = (format!("{}/orders.a", dir.path().display()), format!("{}/orders.b", dir.path().display()));
    assert!(table_rows(&a) + table_rows(&b) > 0, "the killed workers committed something");
    let last = spawn_run(&config, &log);
    for p in producers {
        p.join().unwrap();
    }
    wait_for_rows(&a, TOTAL, &log);
    wait_for_rows(&b, TOTAL, &log);
    let (status, _) = terminate(last);
    assert!(status.success(), "graceful exit: {status}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    assert_exactly_once(&a);
    assert_exactly_once(&b);
    assert!(!dir.path().join("other").exists());
    drop(cluster);
}

fn region_of(i: i64) -> &'static str {
    ["eu", "us", "apac"][(i % 3) as usize]
}

/// `route_by`: records fan out to a table per region, created on demand; records without the
/// field, with a value that cannot name a table, or past `max_tables` are dead letters; a
/// second run over the same records (positions from the route state) adds nothing.
#[test]
fn a_routing_field_fans_out_with_dead_letters_and_resumes_from_the_route_state() {
    let _guard = crate::support::native_clients_lock();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("events", 3, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let mut recs: Vec<(i32, Option<String>, Option<String>)> = (0..300)
        .map(|i| ((i % 3) as i32, None, Some(format!("{{\"id\":{i},\"geo\":{{\"region\":\"{}\"}}}}", region_of(i)))))
        .collect();
    recs.push((0, None, Some("{\"id\":1000}".into())));
    recs.push((1, None, Some("{\"id\":1001,\"geo\":{\"region\":\"../../etc\"}}".into())));
    recs.push((2, None, Some("{\"id\":1002,\"geo\":{\"region\":\"mars\"}}".into())));
    rt.block_on(produce(&brokers, "events", &recs));
    let template = format!("{}/events_{{geo.region}}", dir.path().display());
    let dead = dir.path().join("dead").to_string_lossy().into_owned();
    let mut p = pipeline(&brokers, "events", &template);
    p.route_by = Some("geo.region".into());
    p.max_tables = 3;
    p.dead_letter.table = Some(dead.clone());
    let run = |p: &deltabus::config::pipeline::PipelineConfig, want: u64| {
        rt.block_on(run_until(vec![p.clone()], None, move |m| crate::support::committed(m, "p0") >= want))
    };
    let reports = run(&p, 303);
    // Which region is the fourth (refused) depends on the order partitions are fetched in.
    let table = |r: &str| format!("{}/events_{r}", dir.path().display());
    let opened: Vec<&str> =
        ["eu", "us", "apac", "mars"].into_iter().filter(|r| dir.path().join(format!("events_{r}")).exists()).collect();
    assert_eq!(opened.len(), 3, "{opened:?}");
    let refused = ["eu", "us", "apac", "mars"].into_iter().find(|r| !opened.contains(r)).unwrap();
    let mut committed = 0;
    for r in &opened {
        let want: Vec<i64> = if *r == "mars" { vec![1002] } else { (0..300).filter(|i| region_of(*i) == *r).collect() };
        assert_eq!(ids(&table(r)), want, "{r}");
        committed += want.len() as u64;
    }
    let refused_rows = 301 - committed;
    assert_eq!(
        (reports["p0"].rows_committed, reports["p0"].dead_letters),
        (committed, 2 + refused_rows),
        "{refused} refused: {reports:?}"
    );
    assert!(!dir.path().parent().unwrap().join("etc").exists());
    let letters = rows(&dead);
    assert_eq!(letters.len() as u64, 2 + refused_rows);
    let reasons: Vec<String> = letters.iter().map(|l| l["reason"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(reasons.iter().filter(|r| r.contains("no route field")).count(), 1, "{reasons:?}");
    assert_eq!(reasons.iter().filter(|r| r.contains("cannot name a table")).count(), 1, "{reasons:?}");
    assert_eq!(reasons.iter().filter(|r| r.contains("max_tables (3)")).count() as u64, refused_rows, "{reasons:?}");
    // The route state holds a position per partition; a second run reads nothing again.
    let state = crate::support::run_json(&["describe", &format!("{}/_deltabus_routes/ingest", dir.path().display())]);
    assert_eq!(state["txns"].as_object().map(|t| t.len()), Some(3), "{state}");
    let again = opened[0];
    rt.block_on(produce(
        &brokers,
        "events",
        &[(0, None, Some(format!("{{\"id\":2000,\"geo\":{{\"region\":\"{again}\"}}}}")))],
    ));
    let reports = run(&p, 1);
    assert_eq!((reports["p0"].rows_committed, reports["p0"].records), (1, 1), "{reports:?}");
    drop(cluster);
    assert!(ids(&table(again)).contains(&2000));
    let total: usize = opened.iter().map(|r| ids(&table(r)).len()).sum();
    assert_eq!(total as u64, committed + 1);
    assert_eq!(rows(&dead).len() as u64, 2 + refused_rows);
}

/// A routing field under kill -9 and a faulty store: workers killed at random moments and at
/// the crash point between two tables' commits, every store call failing 5% of the time
/// (before or after it took effect).
#[test]
fn a_routing_field_is_exactly_once_under_kill_dash_nine() {
    use crate::support::{start_producer_with, table_rows, terminate, TOTAL};
    let _guard = crate::support::native_clients_lock();
    let dir = tempfile::tempdir().unwrap();
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("orders", 4, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let config = worker_config(
        dir.path(),
        &brokers,
        &format!("table = \"{}/orders-{{region}}\"\napp_id = \"route\"\nroute_by = \"region\"", dir.path().display()),
        "topic = \"orders\"",
    );
    // Every store call may fail, or fail after it succeeded (5%), in every worker.
    std::fs::write(dir.path().join("faults"), "rate=0.05,seed=23").unwrap();
    let log = dir.path().join("workers.log");
    let producer = start_producer_with(brokers.clone(), "orders".into(), 15, |id| {
        format!(r#"{{"id":{id},"region":"r{}","payload":"{}"}}"#, id % 3, "x".repeat((id % 40) as usize))
    });
    crate::support::kill_at_random_moments(3, || spawn_run(&config, &log));
    // One more, killed between two tables' commits of a flush.
    let mut worker = std::process::Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["run", "--config", config.to_str().unwrap()])
        .env("DELTABUS_FAULTS", "rate=0.05,seed=29")
        .env("DELTABUS_CRASH_AT", "routed.between_tables:3")
        .stderr(std::fs::OpenOptions::new().append(true).open(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while worker.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the crash point was never reached");
        std::thread::sleep(Duration::from_millis(100));
    }
    let tables: Vec<String> = (0..3).map(|r| format!("{}/orders-r{r}", dir.path().display())).collect();
    assert!(tables.iter().map(|t| table_rows(t)).sum::<i64>() > 0, "the killed workers committed something");
    let last = spawn_run(&config, &log);
    producer.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while tables.iter().map(|t| table_rows(t)).sum::<i64>() < TOTAL {
        assert!(
            Instant::now() < deadline,
            "only {} of {TOTAL} rows; log:\n{}",
            tables.iter().map(|t| table_rows(t)).sum::<i64>(),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, _) = terminate(last);
    assert!(status.success(), "graceful exit: {status}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    // Exactly once across the three tables, each id in its region's table.
    let mut all = Vec::new();
    for (r, t) in tables.iter().enumerate() {
        let got = ids(t);
        assert!(got.iter().all(|id| id % 3 == r as i64), "{t} holds another region's ids");
        all.extend(got);
    }
    all.sort_unstable();
    let dups = all.windows(2).filter(|w| w[0] == w[1]).count();
    all.dedup();
    assert_eq!(dups, 0, "duplicated rows");
    assert_eq!(all.len() as i64, TOTAL, "missing rows");
    drop(cluster);
}

/// `route_by` with listed topics: `{topic}` and the field both name the table; one route
/// state (default location) holds every topic's positions.
#[test]
fn routing_by_a_field_across_listed_topics() {
    let _guard = crate::support::native_clients_lock();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let cluster = MockCluster::new(1).unwrap();
    for t in ["clicks", "views"] {
        cluster.create_topic(t, 2, 1).unwrap();
    }
    let brokers = cluster.bootstrap_servers();
    let recs = |n: i64| -> Vec<(i32, Option<String>, Option<String>)> {
        (0..n)
            .map(|i| ((i % 2) as i32, None, Some(format!("{{\"id\":{i},\"region\":\"{}\"}}", region_of(i)))))
            .collect()
    };
    rt.block_on(async {
        produce(&brokers, "clicks", &recs(90)).await;
        produce(&brokers, "views", &recs(60)).await;
    });
    let mut p = pipeline(&brokers, "", &format!("{}/{{topic}}_{{region}}", dir.path().display()));
    p.kafka.topics = vec!["clicks".into(), "views".into()];
    p.route_by = Some("region".into());
    let reports = rt.block_on(run_until(vec![p], None, |m| {
        crate::support::committed(m, "p0/clicks") == 90 && crate::support::committed(m, "p0/views") == 60
    }));
    drop(cluster);
    for (topic, n) in [("clicks", 90), ("views", 60)] {
        for r in ["eu", "us", "apac"] {
            let want: Vec<i64> = (0..n).filter(|i| region_of(*i) == r).collect();
            assert_eq!(ids(&format!("{}/{topic}_{r}", dir.path().display())), want, "{topic}_{r}: {reports:?}");
        }
    }
    let state = crate::support::run_json(&["describe", &format!("{}/_deltabus_routes/ingest", dir.path().display())]);
    assert_eq!(state["txns"].as_object().map(|t| t.len()), Some(4), "{state}");
}

/// A routed pipeline runs the same consume loop as a plain one: its rate limit holds, it
/// exports partition lag, `stop_at_end` ends it with everything committed, its tables are
/// compacted in the background, and its table template is never opened as a table.
#[test]
fn a_routed_pipeline_offers_what_a_plain_one_does() {
    let _guard = crate::support::native_clients_lock();
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("events", 2, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let batch = |from: i64| -> Vec<(i32, Option<String>, Option<String>)> {
        (from..from + 2000)
            .map(|i| {
                (
                    (i % 2) as i32,
                    None,
                    Some(format!("{{\"id\":{i},\"kind\":\"{}\"}}", ["a", "b"][(i % 4 / 2) as usize])),
                )
            })
            .collect()
    };
    rt.block_on(produce(&brokers, "events", &batch(0)));
    let template = format!("{}/ev_{{kind}}", dir.path().display());
    let mut p = pipeline(&brokers, "events", &template);
    p.route_by = Some("kind".into());
    p.flush.records_per_second = 1000;
    p.flush.max_rows = 300;
    p.kafka.stop_at_end = true;
    let started = Instant::now();
    let reports = rt.block_on(run_until(vec![p.clone()], None, |_| false));
    let took = started.elapsed();
    assert_eq!(reports["p0"].rows_committed, 2000, "stop_at_end commits everything: {reports:?}");
    // 2,000 records at 1,000 a second: the first second's quota at once, the rest waited for.
    assert!(took >= Duration::from_millis(900), "the rate limit held back nothing: {took:?}");
    let table = |k: &str| format!("{}/ev_{k}", dir.path().display());
    assert_eq!(ids(&table("a")).len() + ids(&table("b")).len(), 2000);
    assert!(!dir.path().join("ev_{kind}").exists(), "the template was opened as a table");

    // Again with the background compactor: each routed table gets its own.
    rt.block_on(produce(&brokers, "events", &batch(2000)));
    p.kafka.stop_at_end = false;
    p.flush.records_per_second = 0;
    p.compaction.enabled = true;
    p.compaction.min_files = 2;
    p.compaction.interval = "200ms".parse().unwrap();
    let optimized = |t: &str| {
        std::fs::read_dir(std::path::Path::new(t).join("_delta_log"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .any(|e| std::fs::read_to_string(e.path()).unwrap_or_default().contains("\"OPTIMIZE\""))
            })
            .unwrap_or(false)
    };
    let (a, b) = (table("a"), table("b"));
    let scraped = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = scraped.clone();
    let lag =
        |text: &str| text.lines().any(|l| l.starts_with("deltabus_lag_records{") && l.contains("pipeline=\"p0\""));
    let reports = rt.block_on(run_until(vec![p], None, move |m| {
        let text = m.render();
        if lag(&text) {
            *seen.lock().unwrap() = text;
        }
        crate::support::committed(m, "p0") >= 2000 && optimized(&a) && optimized(&b) && !seen.lock().unwrap().is_empty()
    }));
    drop(cluster);
    assert_eq!(reports["p0"].rows_committed, 2000, "{reports:?}");
    assert!(lag(&scraped.lock().unwrap()), "no lag metric for the routed pipeline");
    for k in ["a", "b"] {
        assert!(optimized(&table(k)), "routed table {k} was never compacted");
        assert_eq!(ids(&table(k)).len(), 2000, "{k}");
    }
    assert!(!dir.path().join("ev_{kind}").exists(), "the template was opened as a table");
}
