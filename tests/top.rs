//! `deltabus top` against live processes, as a user sees it: an Apache Kafka pipeline
//! (`ingest --metrics-addr`) and a push server (its own port) watched together, the screen read
//! from tmux (a terminal as over ssh) until it shows what the table holds, `q` quitting it with
//! exit 0; `--once` prints the same view as plain text; an endpoint that does not answer is
//! named on its line, and with none answering `--once` fails in one line; a standalone follower
//! (`follow --metrics-addr`) is watched as a follower.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::processes::{free_addr, terminate, wait_for_rows};
use crate::support::{deltabus, required};

/// A tmux server of its own (`-L`), so the test never touches the user's sessions.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().unwrap()
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "top"]).stdout).into_owned()
    }

    /// Waits (up to 120 s) until the screen satisfies `ok`; the screen.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        crate::support::wait_until(what, Duration::from_secs(120), || {
            let screen = self.screen();
            if ok(&screen) {
                Ok(screen)
            } else {
                Err(format!("the screen:\n{screen}"))
            }
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The row of `kind` `name` on a screen or in text, split into its cells.
fn row<'a>(screen: &'a str, kind: &str, name: &str) -> Option<Vec<&'a str>> {
    screen.lines().map(|l| l.trim_matches(|c: char| c == '│' || c == '|' || c.is_whitespace())).find_map(|l| {
        let cells: Vec<&str> = l.split_whitespace().collect();
        (cells.first() == Some(&kind) && cells.get(1) == Some(&name)).then_some(cells)
    })
}

#[test]
fn top_shows_a_live_pipeline_and_a_push_table_and_quits_on_q() {
    let tmux_present = Command::new("tmux").arg("-V").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    if !required(tmux_present, "tmux is not installed", "scripts/setup.sh installs Debian's tmux package") {
        return;
    }
    let Some((brokers, topic)) = crate::support::kafka::apache_topic("top", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<(i32, Option<String>, Option<String>)> =
        (0..500).map(|i| (i % 2, None, Some(format!(r#"{{"id":{i},"name":"ü-{i}"}}"#)))).collect();
    {
        let _kafka = crate::support::native_clients_lock();
        crate::support::runtime().block_on(crate::support::kafka::produce(&brokers, &topic, &records));
    }
    let table = dir.path().join("t").to_string_lossy().into_owned();
    let metrics = free_addr();
    let log = dir.path().join("ingest.log");
    let ingest = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["ingest", &topic, &table, "--brokers", &brokers, "--app-id", "watched", "--create"])
        .args(["--flush-interval", "200ms", "--metrics-addr", &metrics])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["serve", "--table", &format!("events={events}"), "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("serve.log")).unwrap())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(serve.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let push = serde_json::from_str::<Value>(&first).unwrap()["listening"].as_str().unwrap().to_string();
    let body = "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n";
    let pushed = Command::new("curl")
        .args(["-sS", "--fail", "-H", "Content-Type: application/x-ndjson", "--data-binary", body])
        .arg(format!("http://{push}/v1/tables/events/records"))
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{}", String::from_utf8_lossy(&pushed.stderr));
    wait_for_rows(&table, 500, &log);

    // --once: plain text, rows as the tables hold them; a dead endpoint named on its line.
    let dead = free_addr();
    let out = deltabus(&["top", "--once", "--interval", "200ms", &metrics, &push, &dead]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let line = row(&text, "pipeline", "watched").unwrap_or_else(|| panic!("no pipeline line:\n{text}"));
    assert_eq!(line[3], "500", "rows committed: {text}");
    let line = row(&text, "push", "events").unwrap_or_else(|| panic!("no push line:\n{text}"));
    assert_eq!(line[3], "3", "rows pushed: {text}");
    assert!(text.lines().any(|l| l.starts_with(&dead) && l.contains("unreachable")), "{text}");
    let none = deltabus(&["top", "--once", "--interval", "100ms", &dead]);
    assert!(!none.status.success());
    let err = String::from_utf8_lossy(&none.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    // The screen in a terminal: both processes, the committed rows, then `q`.
    let tmux = Tmux { socket: format!("deltabus-top-{}", uuid::Uuid::new_v4().simple()) };
    let started =
        tmux.run(&["new-session", "-d", "-s", "top", "-x", "160", "-y", "40", "bash", "--norc", "--noprofile"]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    let command = format!("{} top {metrics} {push}; echo top-exited-$?", env!("CARGO_BIN_EXE_deltabus"));
    tmux.run(&["send-keys", "-t", "top", &command, "Enter"]);
    let screen = tmux.wait_for("the pipeline's 500 rows and the push table's 3", |s| {
        row(s, "pipeline", "watched").is_some_and(|r| r.get(3) == Some(&"500"))
            && row(s, "push", "events").is_some_and(|r| r.get(3) == Some(&"3"))
    });
    assert!(screen.contains(&metrics) && screen.contains(&push) && screen.contains("RSS"), "{screen}");
    tmux.run(&["send-keys", "-t", "top", "q"]);
    tmux.wait_for("top exiting with 0 on q", |s| s.contains("top-exited-0"));

    terminate(ingest);
    terminate(serve);
}

/// A standalone follower (`follow --into ... --metrics-addr`) is watched as a follower:
/// `top --once` shows it by its follower id with the rows it delivered and its lag in
/// versions, and a commit to the source shows up on the next look.
#[test]
fn top_shows_a_standalone_follower() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("src"), dir.path().join("dst"));
    crate::support::write_ok(&source, &[], "{\"id\":1,\"name\":\"ü\"}\n{\"id\":2}\n");
    let addr = free_addr();
    let child = Command::new(env!("CARGO_BIN_EXE_deltabus"))
        .args(["follow", source.to_str().unwrap(), "--into", target.to_str().unwrap(), "--from", "snapshot"])
        .args(["--follower-id", "mirror-1", "--metrics-addr", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let look = |rows: &str| {
        crate::support::wait_until(
            &format!("top shows the follower with {rows} rows"),
            Duration::from_secs(120),
            || {
                let out = deltabus(&["top", &addr, "--once"]);
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                match row(&text, "follower", "mirror-1") {
                    Some(cells) if out.status.success() && cells.get(3) == Some(&rows) => Ok(text),
                    _ => Err(format!("top --once: {text}{}", String::from_utf8_lossy(&out.stderr))),
                }
            },
        )
    };
    let text = look("2");
    assert!(text.contains("0 versions"), "caught up: {text}");
    crate::support::write_ok(&source, &[], "{\"id\":3}\n");
    look("3");
    let (status, log) = terminate(child);
    assert!(status.success(), "{log}");
}
