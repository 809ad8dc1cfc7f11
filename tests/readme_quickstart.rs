//! The README's quick starts, run as a new user would paste them, against Apache Kafka: only
//! the paths (`/data/...`), the broker address, the topic names and the push server's port
//! change. "Kafka → table" runs its configuration with `deltabus run` and reads the table back;
//! "Table → Kafka, or another table" runs its three followers on that table; "Push over HTTP"
//! runs its `serve` line and its `curl` request.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::support::processes::{terminate, wait_for_rows};
use crate::support::required;

/// The `deltabus` command lines of a shell block (comments after `#` dropped, `\` joined).
fn command_lines(block: &str) -> Vec<Vec<String>> {
    let joined = block.replace("\\\n", " ");
    joined
        .lines()
        .map(|l| l.split(" #").next().unwrap_or_default().trim())
        .filter(|l| l.starts_with("deltabus "))
        .map(|l| l.split_whitespace().skip(1).map(str::to_string).collect())
        .collect()
}

/// Starts `deltabus <args>` in `dir` with stdout piped and stderr to `log`.
fn spawn(dir: &std::path::Path, args: &[String], log: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn the_readme_quick_starts_run_as_printed() {
    let Some((brokers, topic)) = crate::support::kafka::apache_topic("quickstart", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let at = |s: &str| {
        s.replace("/data/", &format!("{}/", data.display()))
            .replace("localhost:9092", &brokers)
            .replace("topic = \"orders\"", &format!("topic = \"{topic}\""))
    };

    // Kafka → table: the configuration as printed, then `run` and `cat`.
    let blocks = crate::support::readme_blocks("Kafka → table in five minutes");
    let [(toml_lang, toml), (sh_lang, sh)] = blocks.as_slice() else { panic!("a TOML and a shell block: {blocks:?}") };
    assert_eq!((toml_lang.as_str(), sh_lang.as_str()), ("toml", "sh"));
    std::fs::write(dir.path().join("pipelines.toml"), at(toml)).unwrap();
    let mut records: Vec<(i32, Option<String>, Option<String>)> = (0..40)
        .map(|i| {
            (
                i % 2,
                None,
                Some(format!(r#"{{"id":{i},"country":"{}","note":"zürich ✓"}}"#, ["DE", "FR"][i as usize % 2])),
            )
        })
        .collect();
    records.push((0, None, Some("{not json".into())));
    {
        let _kafka = crate::support::native_clients_lock();
        crate::support::runtime().block_on(crate::support::kafka::produce(&brokers, &topic, &records));
    }
    let lines = command_lines(&at(sh));
    assert_eq!(lines.len(), 2, "run, then cat: {lines:?}");
    let log = dir.path().join("run.log");
    let run = spawn(dir.path(), &lines[0], &log);
    let orders = data.join("orders").to_string_lossy().into_owned();
    wait_for_rows(&orders, 40, &log);
    wait_for_rows(&data.join("orders_dead_letters").to_string_lossy(), 1, &log);
    let (status, _) = terminate(run);
    assert!(status.success(), "run stops cleanly: {}", std::fs::read_to_string(&log).unwrap_or_default());
    let cat = Command::new(env!("CARGO_BIN_EXE_deltabus")).args(&lines[1]).output().unwrap();
    assert!(cat.status.success(), "{}", String::from_utf8_lossy(&cat.stderr));
    let rows: Vec<Value> =
        String::from_utf8_lossy(&cat.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 5, "--limit 5: {rows:?}");
    assert!(rows.iter().all(|r| r["note"] == "zürich ✓"), "{rows:?}");

    followers_quick_start(dir.path(), &at, &brokers, &orders);
    push_quick_start(dir.path(), &at);
}

/// "Table → Kafka, or another table": each line follows the table until it has delivered
/// every row (then it is stopped, as a user would with Ctrl-C).
fn followers_quick_start(dir: &std::path::Path, at: &dyn Fn(&str) -> String, brokers: &str, orders: &str) {
    let blocks = crate::support::readme_blocks("Table → Kafka, or another table");
    let [(_, sh)] = blocks.as_slice() else { panic!("one shell block: {blocks:?}") };
    let changes_topic = format!("quickstart-changes-{}", uuid::Uuid::new_v4().simple());
    {
        let _kafka = crate::support::native_clients_lock();
        crate::support::kafka::create_topic(brokers, &changes_topic, 1);
    }
    let lines = command_lines(&at(sh).replace("orders-changes", &changes_topic));
    assert_eq!(lines.len(), 3, "tail, tail --to-topic, follow --mirror: {lines:?}");

    let mut tail = spawn(dir, &lines[0], &dir.join("tail.log"));
    let mut out = std::io::BufReader::new(tail.stdout.take().unwrap());
    let mut ids = std::collections::BTreeSet::new();
    while ids.len() < 40 {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "tail ended early");
        let row: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(row["_change_type"], "insert", "{row}");
        assert!(ids.insert(row["id"].as_i64().unwrap()), "each row once: {row}");
    }
    terminate(tail);

    let to_topic = spawn(dir, &lines[1], &dir.join("to_topic.log"));
    let got =
        crate::support::wait_until("the changes topic held 40 changes", std::time::Duration::from_secs(120), || {
            let got = {
                let _kafka = crate::support::native_clients_lock();
                crate::support::kafka::read_committed(brokers, &changes_topic, 1)
            };
            if got.len() >= 40 {
                Ok(got)
            } else {
                let log = std::fs::read_to_string(dir.join("to_topic.log")).unwrap_or_default();
                Err(format!("{} of 40: {log}", got.len()))
            }
        });
    assert_eq!(got.len(), 40, "each change once");
    terminate(to_topic);

    let follow = spawn(dir, &lines[2], &dir.join("follow.log"));
    let copy = lines[2][3].clone();
    assert!(copy.ends_with("orders_copy"), "{lines:?}");
    wait_for_rows(&copy, 40, &dir.join("follow.log"));
    terminate(follow);
    assert_eq!(crate::support::ids(&copy), crate::support::ids(orders), "the mirror holds the table's rows");
}

/// "Push over HTTP": the serve line on a free port, then the curl request as printed.
fn push_quick_start(dir: &std::path::Path, at: &dyn Fn(&str) -> String) {
    let curl_present = Command::new("curl").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    if !required(curl_present, "curl is not installed", "install Debian's curl package") {
        return;
    }
    let blocks = crate::support::readme_blocks("Push over HTTP");
    let [(_, sh)] = blocks.as_slice() else { panic!("one shell block: {blocks:?}") };
    let sh = at(sh);
    let lines = command_lines(&sh);
    let mut serve = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(&lines[0])
        .args(["--listen", "127.0.0.1:0"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("serve.log")).unwrap())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(serve.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let announced: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("serve printed {first:?} ({e})"));
    let addr = announced["listening"].as_str().unwrap().to_string();
    std::fs::write(dir.join("batch.jsonl"), "{\"id\":1,\"kind\":\"click\"}\n{\"id\":2,\"kind\":\"вид\"}\n").unwrap();
    let curl = sh.lines().skip_while(|l| !l.starts_with("curl")).collect::<Vec<_>>().join("\n");
    let out = Command::new("bash")
        .args(["-eo", "pipefail", "-c"])
        .arg(curl.replace("127.0.0.1:8080", &addr))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((answer["outcome"].as_str(), answer["rows"].as_i64()), (Some("committed"), Some(2)), "{answer}");
    let (status, _) = terminate(serve);
    assert!(status.success());
    let events = dir.join("data/events").to_string_lossy().into_owned();
    assert_eq!(crate::support::ids(&events), [1, 2]);
}
