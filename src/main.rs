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

/// Transparent huge pages are turned off for the process, whatever it runs: mimalloc asks for
/// them on its arenas, so every touched 2 MiB range stayed resident whole and was zeroed whole
/// on first touch.
/// - Ingest (10 M × 250 B from a separate broker, batches ending on 256 MiB, two runs each):
///   peak RSS +706 and +740 MB instead of +796 and +833, 4% less CPU.
/// - Push overload (64 producers, 4 MiB bodies, 64 MiB bound): peak RSS above idle 84 instead
///   of 108 MiB, idle RSS 19 instead of 28 MiB.
fn small_pages() {
    if let Err(e) = nix::sys::prctl::set_thp_disable(true) {
        tracing::debug!(error = %e, "transparent huge pages stay on");
    }
}

/// mimalloc's purge delay (`mi_option_purge_delay` in the bundled v3 `mi_option_t`): how long
/// freed memory stays mapped before it is returned to the system.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// A server's purge delay while its requests hold less than half of `server.max_buffered`
/// (ms). Returning freed memory at once cost 5–10% more server CPU a row in faulting the same
/// pages in again (see BENCHMARKS.md, `kafka_produce`).
const RELAXED_PURGE_MS: i64 = 100;
/// Whether the runtime threads set the purge delay as the room held says (a server whose
/// environment does not set `MIMALLOC_PURGE_DELAY`).
static FOLLOW_ROOM: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The purge delay last set (ms).
static PURGE_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1000);

/// A push server returns freed memory to the system within 100 ms instead of mimalloc's
/// second, and at once while its requests hold more than half of `server.max_buffered`.
/// Requests of megabytes each are freed by other threads than the ones that allocated them,
/// and with the delay each of those threads kept what it had freed until it next allocated.
/// `MIMALLOC_PURGE_DELAY` in the environment, when set, is left to mimalloc.
#[allow(unsafe_code)] // The binary's unsafe code (with the next two); the library's is librdkafka's batch consume.
fn return_memory_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    FOLLOW_ROOM.store(true, std::sync::atomic::Ordering::Relaxed);
    PURGE_MS.store(RELAXED_PURGE_MS, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: setting an option is an atomic store; any value is valid for this option.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, RELAXED_PURGE_MS as std::os::raw::c_long) };
}

/// Run by each runtime thread as it goes idle. While a server's requests hold more than half of
/// its `server.max_buffered`, freed memory is returned at once and the thread hands back the
/// pages it kept whose blocks other threads freed (mimalloc keeps them per thread until that
/// thread allocates again); below half, the purge delay goes back to 100 ms. Under overload
/// this keeps the server within its bound; doing it always costs 5–15% more CPU a row (see
/// BENCHMARKS.md, `kafka_produce`).
#[allow(unsafe_code)] // See `return_memory_promptly`.
fn return_freed_memory_when_tight() {
    use std::sync::atomic::Ordering;
    let tight = deltabus::memory_tight();
    if FOLLOW_ROOM.load(Ordering::Relaxed) {
        let want = if tight { 0 } else { RELAXED_PURGE_MS };
        if PURGE_MS.swap(want, Ordering::Relaxed) != want {
            // SAFETY: setting an option is an atomic store; any value is valid for this option.
            unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, want as std::os::raw::c_long) };
        }
    }
    if tight {
        // SAFETY: collects the calling thread's own heap; no pointer is passed.
        unsafe { libmimalloc_sys::mi_collect(false) };
    }
}

/// Hands both heaps' freed memory back to the system: glibc's (librdkafka's inflated fetch
/// responses) and mimalloc's (Arrow batches freed by the flush, which mimalloc would keep
/// mapped for its purge delay). Given to the library's heap watcher, which calls it when a
/// Kafka pipeline's process nears its memory bound (see `common/heap.rs`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // See `return_memory_promptly`.
fn trim_c_heap() {
    // SAFETY: `malloc_trim` takes no pointer and may be called from any thread at any time.
    unsafe { libc::malloc_trim(0) };
    // SAFETY: takes no pointer; from any thread it purges mimalloc's arenas program-wide.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// One line to stderr; a closed stderr (`cmd 2>&1 | head`) is ignored, never a panic.
macro_rules! say {
    ($($arg:tt)*) => { deltabus::cli::say(&format!($($arg)*)) };
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind as Clap;
            if matches!(e.kind(), Clap::DisplayHelp | Clap::DisplayVersion) {
                e.exit();
            }
            if e.kind() == Clap::DisplayHelpOnMissingArgumentOrSubcommand {
                // Bare `deltabus`: the help, and the exit code of every other usage error.
                let _ = e.print();
                return ExitCode::from(1);
            }
            say!("error: {} (see --help)", one_line(&e));
            return ExitCode::from(1);
        }
    };
    let config = match Config::load(cli.global.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let json_logs = match cli.global.log_format.as_deref() {
        Some(f) => f == "json",
        None => config.log.format == LogFormat::Json,
    };
    let telemetry = match deltabus::cli::telemetry_settings(&config.telemetry, &|v| std::env::var(v).ok()) {
        Ok(t) => t,
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.on_thread_park(return_freed_memory_when_tight);
    let runtime = match runtime.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            say!("error: cannot start the async runtime: {e}");
            return ExitCode::from(3);
        }
    };
    // The exporters start inside the runtime (the gRPC client needs one), before logging.
    let entered = runtime.enter();
    let (telemetry, tracer) = match telemetry.as_ref().map(deltabus::cli::Telemetry::start).transpose() {
        Ok(Some((t, tracer))) => (Some(t), Some(tracer)),
        Ok(None) => (None, None),
        Err(e) => {
            say!("error: {e}");
            return ExitCode::from(1);
        }
    };
    drop(entered);
    init_logging(json_logs, cli.command.is_service(), tracer);
    // Test hooks: crash points and store faults, for the exactly-once process tests.
    if let Err(e) = deltabus::cli::arm_test_hooks() {
        say!("error: {e}");
        return ExitCode::from(1);
    }
    small_pages();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    deltabus::set_heap_trimmer(trim_c_heap);
    if cli.command.serves_http(&config) {
        return_memory_promptly();
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let result = runtime.block_on(run(cli, &config, &mut out));
    if let Some(t) = telemetry {
        t.shutdown();
    }
    // A read of stdin still blocked in its thread (an interrupted `write` whose producer keeps
    // the pipe open) must not hold the exit: dropping the runtime would wait for it for ever.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    let flushed = out.flush();
    if let Some(counts) = deltabus::cli::injected_faults() {
        say!("deltabus: injected faults: {counts}");
    }
    match result {
        Ok(()) => match flushed {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => {
                say!("error: writing output: {e}");
                ExitCode::from(3)
            }
        },
        Err(deltabus::Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(deltabus::Error::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
            say!("error: {e}");
            ExitCode::from(130)
        }
        Err(e) => {
            say!("error: {e}");
            match e.kind() {
                ErrorKind::User => ExitCode::from(1),
                ErrorKind::External => ExitCode::from(3),
                ErrorKind::Internal => ExitCode::from(4),
            }
        }
    }
}

/// A clap error as one line: its first line, with what the following lines name (the
/// missing arguments), and negative numbers called what they are.
fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind as Clap};
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_string();
    if e.kind() == Clap::MissingRequiredArgument {
        let missing: Vec<&str> = lines.take_while(|l| !l.starts_with("Usage:")).collect();
        return format!("{} {}", first.trim_end_matches(':'), missing.join(", "));
    }
    if e.kind() == Clap::UnknownArgument {
        if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
            if arg.len() > 1 && arg[1..].chars().all(|c| c.is_ascii_digit() || c == '.') && arg.starts_with('-') {
                return format!("{arg}: a negative number is not accepted here");
            }
        }
    }
    first
}

/// Logs go to stderr. The filter comes from `DELTABUS_LOG`, else `RUST_LOG`, else `info` for
/// the long-running commands (a service says what it runs) and `warn` for one-shot ones.
/// Colours only when stderr is a terminal. With a `tracer` (telemetry on), spans at `info` and
/// above also go to OpenTelemetry, whatever the log filter says.
fn init_logging(json: bool, service: bool, tracer: Option<opentelemetry_sdk::trace::Tracer>) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::layer::{Layer as _, SubscriberExt as _};
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("DELTABUS_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(if service { "info" } else { "warn" }));
    let otel = tracer.map(|t| {
        tracing_opentelemetry::layer().with_tracer(t).with_filter(tracing_subscriber::filter::LevelFilter::INFO)
    });
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal());
    let registry = tracing_subscriber::registry().with(otel);
    if json {
        registry.with(fmt.json().with_filter(filter)).init();
    } else {
        registry.with(fmt.with_filter(filter)).init();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[allow(unsafe_code)]
    fn the_purge_delay_option_is_the_one_set() {
        // 1000 ms is mimalloc v3's default purge delay: a renumbered option list shows another value.
        // SAFETY: reading an option.
        let delay = unsafe { libmimalloc_sys::mi_option_get(15) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(delay, 1000, "option 15 is not mimalloc's purge delay in this version");
        }
    }
}
