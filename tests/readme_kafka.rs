//! The README's "Kafka clients without a broker" examples, pasted as a user would: its
//! `deltabus serve` line, its Python (`confluent-kafka`) snippet and its `kcat` lines run as
//! printed, only the table's path and the ports changed (a test cannot take port 9092 or
//! 8080). Then the table holds both records once, and each client saw what the README says.

use std::io::BufRead;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::processes::{terminate, wait_for_client};
use crate::support::python::python;
use crate::support::{ids as table_ids, required};

fn kcat_present() -> bool {
    Command::new("kcat").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

#[test]
fn the_readme_kafka_examples_run_as_printed() {
    let Some(py) = python() else { return };
    if !required(kcat_present(), "kcat is not installed", "scripts/setup.sh installs Debian's kcat package") {
        return;
    }
    let blocks = crate::support::readme_blocks("Kafka clients without a broker");
    let [(serve_lang, serve), (py_lang, snippet), (kcat_lang, kcat)] = blocks.as_slice() else {
        panic!("expected the serve line, the Python snippet and the kcat lines, found {blocks:?}");
    };
    assert_eq!((serve_lang.as_str(), py_lang.as_str(), kcat_lang.as_str()), ("sh", "python", "sh"));
    const PRINTED: &str = "127.0.0.1:9092";
    assert!(
        serve.contains(PRINTED) && snippet.contains(PRINTED) && kcat.contains(PRINTED),
        "the examples share one address"
    );

    // The serve line, on free ports and a fresh table path.
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("events");
    let line = serve.trim().replace("/data/events", &table.to_string_lossy()).replace(PRINTED, "127.0.0.1:0");
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some("deltabus"), "{line}");
    let mut server = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(words)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("serve.log")).unwrap())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let announced: Value =
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("serve printed {first:?} ({e}); it must start"));
    let addr = announced["kafka"].as_str().expect("the Kafka listener's address").to_string();

    // The Python snippet: an idempotent producer, then a consumer reading the feed's start.
    let mut client = Command::new(&py);
    client.arg("-c").arg(snippet.replace(PRINTED, &addr)).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (status, printed, err) = wait_for_client(client.spawn().unwrap(), "the README's Python snippet");
    assert!(status.success(), "the README's Python snippet: {err}");
    assert!(printed.starts_with(r#"b'{"id":1,"kind":"click","_change_type":"insert","#), "the change row: {printed}");
    assert!(printed.contains("[('change_type', b'insert')]"), "the change type header: {printed}");

    // The kcat lines: one more record, then the whole partition with offsets and headers.
    let mut client = Command::new("bash");
    client
        .args(["-eo", "pipefail", "-c"])
        .arg(kcat.replace(PRINTED, &addr))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, out, err) = wait_for_client(client.spawn().unwrap(), "the README's kcat lines");
    assert!(status.success(), "the README's kcat lines: {err}");
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    let rows: Vec<(u64, &str, Value)> = lines
        .iter()
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let offset = parts.next().and_then(|o| o.parse().ok()).unwrap_or_else(|| panic!("kcat printed {l:?}"));
            let header = parts.next().unwrap_or_default();
            let value = serde_json::from_str(parts.next().unwrap_or_default()).unwrap_or_else(|_| panic!("{l:?}"));
            (offset, header, value)
        })
        .collect();
    let ids: Vec<i64> = rows.iter().map(|(_, _, v)| v["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [1, 2], "kcat reads both records once, in order: {lines:?}");
    assert!(rows.iter().all(|(_, h, _)| *h == "change_type=insert"), "{lines:?}");
    assert!(rows[0].0 < rows[1].0, "offsets grow: {lines:?}");
    assert_eq!(rows[1].2["kind"], "view");

    let (status, _) = terminate(server);
    assert!(status.success(), "serve stops cleanly on SIGTERM");
    assert_eq!(table_ids(&table.to_string_lossy()), [1, 2], "the table holds each record once");
}
