//! Types shared by several floors — the configuration, the command line, the pipeline and the
//! change feed — kept below all of them so that none imports upwards.
//!
//! - [`backoff`]: the one backoff between attempts.
//! - [`clock`]: the one clock (system, tokio-paused in tests, manual).
//! - [`flush`] [sync]: the flush policy, a pure function of the batch state and `now`.
//! - [`follow`]: follower settings and start positions.
//! - [`heap`]: handing the C library's freed heap back when a Kafka pipeline nears its bound.
//! - [`kafka_log`]: librdkafka's log lines and client errors, redacted, for every client.
//! - [`units`]: the one spelling of durations and sizes.
//! - [`progress`]: progress bars on terminals, periodic lines otherwise.
//! - [`retry`]: the one retry budget table, with the worst case written down.
//! - [`throttle`]: repeated log lines once per state change, then at a backoff.

internal_mods!(backoff);
internal_mods!(clock);
internal_mods!(flush);
internal_mods!(follow);
internal_mods!(heap);
internal_mods!(kafka_log);
internal_mods!(progress);
internal_mods!(record);
internal_mods!(retry);
internal_mods!(throttle);
internal_mods!(units);

/// Writes one line to stderr, ignoring a failure (a closed stderr, as in `cmd 2>&1 | head`,
/// must end nothing: `eprintln!` would panic).
pub fn say(line: &str) {
    use std::io::Write as _;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}
