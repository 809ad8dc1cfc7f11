//! The `deltabus` binary: parse arguments, set up logging, run, map errors to exit codes.
//! `anyhow` is not needed: the library's one error type already carries the message.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use clap::Parser as _;
use deltabus::cli::{run, Cli};
use deltabus::config::{Config, LogFormat};
use deltabus::ErrorKind;

// mimalloc: in the ingest benchmark 1.1-1.3x the records/s of glibc's allocator with less
// CPU, and a lower peak RSS (glibc's per-thread arenas kept ~90 MB more); see BENCHMARKS.md.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind as Clap;
            if matches!(
                e.kind(),
                Clap::DisplayHelp | Clap::DisplayVersion | Clap::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // One line, as every other error: clap's first line, without its usage block.
            let text = e.render().to_string();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid arguments");
            eprintln!("error: {} (see --help)", first.trim_start_matches("error: ").trim());
            return ExitCode::from(1);
        }
    };
    let config = match Config::load(cli.global.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let json_logs = match cli.global.log_format.as_deref() {
        Some(f) => f == "json",
        None => config.log.format == LogFormat::Json,
    };
    init_logging(json_logs, cli.command.is_service());
    // Test hooks: crash points and store faults, for the exactly-once process tests.
    if let Ok(spec) = std::env::var("DELTABUS_CRASH_AT") {
        if let Err(e) = deltabus::failpoint::arm(&spec) {
            eprintln!("error: DELTABUS_CRASH_AT: {e}");
            return ExitCode::from(1);
        }
    }
    if let Ok(spec) = std::env::var("DELTABUS_FAULTS") {
        match deltabus::storage::faulty::FaultConfig::parse(&spec) {
            Ok(c) => deltabus::storage::faulty::inject_everywhere(c),
            Err(e) => {
                eprintln!("error: DELTABUS_FAULTS: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let result = runtime.block_on(run(cli, &config, &mut out));
    let flushed = out.flush();
    if let Some(counts) = deltabus::storage::faulty::everywhere_counts() {
        eprintln!("deltabus: injected faults: {counts}");
    }
    match result {
        Ok(()) => match flushed {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: writing output: {e}");
                ExitCode::from(3)
            }
        },
        Err(deltabus::Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            match e.kind() {
                ErrorKind::User => ExitCode::from(1),
                ErrorKind::External => ExitCode::from(3),
                ErrorKind::Internal => ExitCode::from(4),
            }
        }
    }
}

/// Logs go to stderr. The filter comes from `DELTABUS_LOG`, else `RUST_LOG`, else `info` for
/// the long-running commands (a service says what it runs) and `warn` for one-shot ones.
/// Colours only when stderr is a terminal.
fn init_logging(json: bool, service: bool) {
    use std::io::IsTerminal as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("DELTABUS_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(if service { "info" } else { "warn" }));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}
