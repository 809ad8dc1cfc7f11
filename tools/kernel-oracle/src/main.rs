//! kernel-oracle: what delta-kernel-rs (the reference Rust Delta reader) sees in a table, as
//! JSON, for deltabus's tests to compare against.
//!
//! ```text
//! kernel-oracle rows    TABLE [VERSION]      live rows, one JSON object a line
//! kernel-oracle files   TABLE [VERSION]      {"version": N, "files": [{"path","size","dv"}]}
//! kernel-oracle changes TABLE START [END]    the change data feed, one JSON object a line
//! kernel-oracle expect  TABLE OUT_DIR        every answer above for every version, as files
//! ```
//!
//! Rows are printed by arrow-json with nulls left out; maps become lists of
//! `{"key", "value"}` entries, since JSON objects cannot have non-string keys. Any failure
//! prints one `error: ...` line on stderr and exits 1.

mod expect;
mod read;

use std::path::Path;
use std::process::ExitCode;

fn usage() -> String {
    "usage: kernel-oracle rows|files TABLE [VERSION] | changes TABLE START [END] | expect TABLE OUT_DIR".into()
}

fn version_arg(arg: Option<&String>, what: &str) -> Result<Option<u64>, String> {
    arg.map(|v| v.parse::<u64>().map_err(|_| format!("{what} must be a version number, got {v:?}"))).transpose()
}

fn run(args: &[String]) -> Result<(), String> {
    let (command, table) = match args {
        [command, table, ..] => (command.as_str(), Path::new(table)),
        _ => return Err(usage()),
    };
    let rest = &args[2..];
    let mut out = std::io::stdout().lock();
    match (command, rest.len()) {
        ("rows", 0 | 1) => {
            let reader = read::Reader::open(table)?;
            reader.write_rows(version_arg(rest.first(), "VERSION")?, &mut out).map(|_| ())
        }
        ("files", 0 | 1) => {
            let reader = read::Reader::open(table)?;
            let listing = reader.files(version_arg(rest.first(), "VERSION")?)?;
            serde_json::to_writer(&mut out, &listing).map_err(|e| e.to_string())
        }
        ("changes", 1 | 2) => {
            let reader = read::Reader::open(table)?;
            let start = version_arg(rest.first(), "START")?.ok_or_else(usage)?;
            reader.write_changes(start, version_arg(rest.get(1), "END")?, &mut out).map(|_| ())
        }
        ("expect", 1) => expect::write_answers(table, Path::new(&rest[0])),
        _ => Err(usage()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
