//! The `deltabus` binary: parse arguments, set up logging, run, map errors to exit codes.
//! `anyhow` is not needed: the library's one error type already carries the message.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use clap::Parser;
use deltabus::cli::{run, Cli};
use deltabus::ErrorKind;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.global.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let result = runtime.block_on(run(cli, &mut out));
    let flushed = out.flush();
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

fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DELTABUS_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}
