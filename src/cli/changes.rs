//! `deltabus changes`, `tail`, `follow` and `followers`: the change feed out of a table.
//!
//! `changes` prints the change rows of a version range as JSON lines and exits. `tail` and
//! `follow` run the follower loop ([`crate::feed::follow`]) into a sink: JSON lines on stdout or
//! in a file (`tail`, resuming from `--state-file`), a Kafka topic with the position in the same
//! transaction (`tail --to-topic`), or another Delta table (`follow --into`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::key_value::{self, KeyValue};
use crate::common::follow::FollowerOptions;
use crate::common::follow::GroupOptions;
use crate::common::units::{ByteSize, HumanDuration};
use crate::error::{Error, Result};
use crate::feed::follow::{run_follower, FollowerReport};
use crate::feed::group::Member;
use crate::feed::group_follow::run_member;
use crate::feed::into_table::{follow_into_table, refuse_own_target, Target};
use crate::feed::sink::kafka::{KafkaGroupSink, KafkaSink, KafkaSinkConfig};
use crate::feed::sink::lines::{write_lines, LinesSink};
use crate::metrics::PipelineMetrics;
use crate::storage::change_cursor::ChangeCursor;
use crate::storage::Table;

/// Options shared by `tail` and `follow`.
#[derive(Debug, Args)]
pub struct FollowerArgs {
    /// How often to look for new commits (e.g. 200ms, 1s).
    #[arg(long, default_value = "1s")]
    pub poll_interval: HumanDuration,
    /// Only rows matching this predicate (files are skipped by statistics first).
    #[arg(long = "where", value_name = "PREDICATE")]
    pub predicate: Option<String>,
    /// Follow even when the position is older than the table's retention (what is gone is
    /// then an error when reached).
    #[arg(long)]
    pub allow_stale: bool,
    /// Skip commits missing from the log, with a warning, instead of stopping.
    #[arg(long)]
    pub skip_gaps: bool,
    /// Stop once caught up.
    #[arg(long)]
    pub once: bool,
    /// Commits that delete or update rows deliver nothing (inserts only).
    #[arg(long)]
    pub skip_change_commits: bool,
    /// Drop delete rows.
    #[arg(long)]
    pub ignore_deletes: bool,
    /// Deliver consecutive ready commits together, up to this many files...
    #[arg(long, value_name = "N")]
    pub max_files_per_batch: Option<usize>,
    /// ...or this many bytes of rows (e.g. 64MiB).
    #[arg(long, value_name = "SIZE")]
    pub max_bytes_per_batch: Option<ByteSize>,
    /// Serve Prometheus metrics (position, versions and seconds behind) and /health here.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_addr: Option<String>,
    /// Join this consumer group: its members share the table's changes, slice by slice
    /// (state under `_deltabus/groups/` on the table).
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// This member's id in the group (default: unique to the process).
    #[arg(long, requires = "group")]
    pub member: Option<String>,
    /// Slices of a new group (default 16; fixed when the group is first used).
    #[arg(long, requires = "group")]
    pub slices: Option<u32>,
    /// Columns whose values choose a row's slice in a new group, comma-separated (one key's
    /// changes then stay in order on one member); default: the file a row comes from (each
    /// member reads only its slices' files).
    #[arg(long = "group-key", value_delimiter = ',', requires = "group")]
    pub group_key: Vec<String>,
    /// How long a member's slices stay its own without a heartbeat.
    #[arg(long, default_value = "10s", requires = "group")]
    pub lease: HumanDuration,
}

impl FollowerArgs {
    /// Joins `--group` on `table` when given; a new group starts at `--from` (a version or
    /// `latest`).
    async fn join(&self, table: &Table, from: &str) -> Result<Option<Member>> {
        let Some(group) = &self.group else { return Ok(None) };
        let opts = GroupOptions {
            group: group.clone(),
            member: self.member.clone().unwrap_or_else(GroupOptions::default_member),
            slices: self.slices,
            key_columns: self.group_key.clone(),
            lease: self.lease.get(),
        };
        if opts.lease < std::time::Duration::from_secs(1) {
            return Err(Error::InvalidArgument("--lease: at least 1s".into()));
        }
        let start: crate::common::follow::StartAt = from.parse()?;
        Member::join_from(table, opts, &start)
            .await
            .map_err(|e| match e {
                Error::InvalidConfig { key, why } if key == "start" => {
                    Error::InvalidConfig { key: format!("--from {from:?} with --group"), why }
                }
                e => e,
            })
            .map(Some)
    }
}

impl FollowerArgs {
    /// The metrics of this follower, served at `--metrics-addr` when given (under the
    /// pipeline label `name`); the server stops when the handle is dropped.
    async fn metrics(&self, name: &str) -> Result<(Option<std::sync::Arc<PipelineMetrics>>, Option<ServerGuard>)> {
        let Some(addr) = &self.metrics_addr else { return Ok((None, None)) };
        let metrics = crate::metrics::Metrics::shared();
        let m = metrics.pipeline(name);
        m.ready.store(true, std::sync::atomic::Ordering::Relaxed);
        let server = crate::metrics::serve(addr, metrics).await?;
        Ok((Some(m), Some(ServerGuard(server))))
    }
}

/// Stops the metrics server when dropped.
struct ServerGuard(tokio::task::JoinHandle<()>);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `deltabus tail` arguments.
#[derive(Debug, Args)]
pub struct TailArgs {
    /// The table to follow: a local path or a URL.
    pub table: String,
    /// First version to emit, `latest` (the next commit to land), `snapshot` (the latest
    /// version's rows as inserts, then new commits) or `timestamp:<RFC 3339 | ms>`; ignored
    /// once a position is recorded.
    #[arg(long, default_value = "latest")]
    pub from: String,
    /// Record progress here and resume after it on restart.
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
    /// Append the lines to this file instead of stdout (with --state-file, exactly once).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Register this follower on the table so deltabus maintenance keeps what it needs
    /// (required with --to-topic).
    #[arg(long)]
    pub follower_id: Option<String>,
    /// Produce the rows to this Kafka topic in transactions instead of printing them (needs
    /// --follower-id or --group).
    #[arg(long, value_name = "TOPIC", requires = "brokers")]
    pub to_topic: Option<String>,
    /// Kafka bootstrap servers for --to-topic, host:port[,host:port...].
    #[arg(long)]
    pub brokers: Option<String>,
    /// The compacted topic holding the follower's position (written in the same transaction).
    #[arg(long, default_value = "deltabus-progress")]
    pub progress_topic: String,
    /// Columns whose values form the Kafka record key, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub key_columns: Vec<String>,
    /// A librdkafka property for the producer, repeatable.
    #[arg(long = "kafka-property", value_name = "KEY=VALUE")]
    pub kafka_properties: Vec<KeyValue>,
    #[command(flatten)]
    pub follower: FollowerArgs,
}

/// `deltabus follow` arguments.
#[derive(Debug, Args)]
pub struct FollowArgs {
    /// The table to follow: a local path or a URL.
    pub source: String,
    /// The target table (created on the first write).
    #[arg(long = "into")]
    pub target: String,
    /// Names this follower: its position lives in the target under `<id>-<source table id>`,
    /// and it is registered on the source (not with --group: each slice's position is
    /// `<group>.<slice>-<source table id>`).
    #[arg(long, required_unless_present = "group", conflicts_with = "group")]
    pub follower_id: Option<String>,
    /// Where to start when the target has no position yet: a version, `latest`, `snapshot` or
    /// `timestamp:<time>`.
    #[arg(long, default_value = "0")]
    pub from: String,
    /// Keep the target a copy of the source (its live rows equal the source's at each delivered
    /// version) instead of the change log: with --key-columns each commit is applied by key;
    /// without, the source's files and deletion vectors are copied and its commits replayed,
    /// so every row keeps its identity (and its row id where the source tracks rows).
    #[arg(long, conflicts_with = "group")]
    pub mirror: bool,
    /// The columns that identify a row, comma-separated (with --mirror).
    #[arg(long, value_delimiter = ',', requires = "mirror")]
    pub key_columns: Vec<String>,
    #[command(flatten)]
    pub follower: FollowerArgs,
}

impl FollowerArgs {
    /// The options these flags describe, through the same translation as `[delta]` pipelines.
    fn options(&self, start: &str, follower_id: Option<String>) -> Result<FollowerOptions> {
        let settings = crate::config::pipeline::DeltaSourceConfig {
            source: String::new(),
            start: start.to_string(),
            follower_id: None,
            poll_interval: self.poll_interval,
            filter: self.predicate.clone(),
            allow_stale: self.allow_stale,
            skip_gaps: self.skip_gaps,
            skip_change_commits: self.skip_change_commits,
            ignore_deletes: self.ignore_deletes,
            max_files_per_batch: self.max_files_per_batch,
            max_bytes_per_batch: self.max_bytes_per_batch,
            // Groups and mirrors are joined by their own flags (`join`, `--mirror`).
            mirror: false,
            key_columns: Vec::new(),
            group: None,
            member: None,
            slices: None,
            group_key: Vec::new(),
            lease: self.lease,
        };
        let mut o = settings.options(follower_id).map_err(|(key, why)| {
            let flag = match key {
                "start" => "from",
                "filter" => "where",
                k => k,
            };
            Error::InvalidArgument(format!("--{}: {why}", flag.replace('_', "-")))
        })?;
        o.once = self.once;
        o.progress = self.once;
        Ok(o)
    }
}

fn parse_filter(filter: Option<&str>) -> Result<Option<crate::delta::predicate::Expr>> {
    filter
        .map(|f| crate::delta::predicate::parse(f).map_err(|e| Error::InvalidArgument(format!("--where: {e}"))))
        .transpose()
}

/// One end of a `changes` range as a version: a version, `latest` (the newest commit) or
/// `timestamp:<time>` (for `--from` the first commit at or after it, for `--to` the last at
/// or before it). A time with no such commit is refused like a version past the log's end.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the flag.
pub(super) async fn version_bound(table: &Table, flag: &str, text: &str) -> Result<u64> {
    use crate::common::follow::StartAt;
    match text.parse::<StartAt>() {
        Ok(StartAt::Version(v)) => Ok(v),
        Ok(StartAt::Latest) => table.latest_version().await,
        Ok(StartAt::Timestamp(ms)) => {
            let history = table.history(None).await?;
            let at = if flag == "--from" {
                history.iter().filter(|c| c.timestamp >= ms).map(|c| c.version).min()
            } else {
                history.iter().filter(|c| c.timestamp <= ms).map(|c| c.version).max()
            };
            at.ok_or_else(|| {
                let (newest, oldest) = (history.first(), history.last());
                let shown = |c: Option<&crate::storage::CommitRecord>| {
                    c.map_or_else(String::new, |c| format!("version {} at {}", c.version, rfc3339_ms(c.timestamp)))
                };
                Error::InvalidArgument(if flag == "--from" {
                    format!("{flag} {text}: no commit at or after that time (the newest is {})", shown(newest))
                } else {
                    format!("{flag} {text}: no commit at or before that time (the oldest kept is {})", shown(oldest))
                })
            })
        }
        Ok(StartAt::Snapshot) => Err(Error::InvalidArgument(format!(
            "{flag} snapshot: `changes` prints commits; the table's rows as inserts are `tail --from snapshot` (or `cat`)"
        ))),
        Err(_) => Err(Error::InvalidArgument(format!(
            "{flag} {text:?}: expected a version, `latest` (the newest commit) or `timestamp:<RFC 3339 | ms>`"
        ))),
    }
}

fn rfc3339_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339())
}

/// `changes <table> --from N [--to M]`.
///
/// # Errors
/// As [`ChangeCursor::poll`]; [`Error::MissingVersion`] when `--to` is past the latest version.
pub(super) async fn changes(
    table: &Table,
    from: u64,
    to: Option<u64>,
    filter: Option<&str>,
    out: &mut (dyn Write + Send),
) -> Result<()> {
    let latest = table.latest_version().await?;
    if to.is_none() && from > latest {
        return Err(Error::InvalidArgument(format!("--from {from} is past the latest version, {latest}")));
    }
    let given_to = to;
    let to = to.unwrap_or(latest);
    if to > latest {
        return Err(Error::InvalidArgument(format!("--to {to} is past the latest version, {latest}")));
    }
    if from > to && given_to.is_some() {
        return Err(Error::InvalidArgument(format!("--from {from} is after --to {to}")));
    }
    let filter = parse_filter(filter)?;
    if let Some(f) = &filter {
        let schema = table.snapshot(Some(to)).await?.schema;
        f.check_types(&schema).map_err(|e| Error::InvalidArgument(format!("--where: {e}")))?;
    }
    let mut cursor = ChangeCursor::open(table, from).await?.with_filter(filter);
    // Progress only when the rows go elsewhere than the terminal the bar would draw on.
    let progress = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        crate::common::progress::Progress::hidden()
    } else {
        crate::common::progress::Progress::new("changes", "commits", Some(to - from + 1))
    };
    while cursor.next_version() <= to {
        match cursor.poll().await? {
            Some(c) => {
                write_lines(out, &c)?;
                progress.inc(1);
            }
            None => {
                return Err(Error::MissingVersion {
                    version: cursor.next_version(),
                    reason: "the commit file does not exist".into(),
                })
            }
        }
    }
    progress.finish();
    Ok(())
}

/// `tail`: follows until SIGINT/SIGTERM (or caught up with `--once`).
///
/// # Errors
/// As [`run_follower`], plus state-file and Kafka errors.
pub(super) async fn tail(
    args: TailArgs,
    table: &Table,
    stop: impl std::future::Future<Output = ()> + Send,
    out: &mut (dyn Write + Send),
) -> Result<FollowerReport> {
    let opts = args.follower.options(&args.from, args.follower_id.clone())?;
    let kafka = |topic: &str, follower_id: String, source_table_id: String| KafkaSinkConfig {
        brokers: args.brokers.clone().unwrap_or_default(),
        topic: topic.to_string(),
        progress_topic: args.progress_topic.clone(),
        follower_id,
        source_table_id,
        key_columns: args.key_columns.clone(),
        properties: key_value::to_map(&args.kafka_properties),
    };
    if let Some(mut member) = args.follower.join(table, &args.from).await? {
        if args.state_file.is_some() {
            return Err(Error::InvalidArgument(
                "--group keeps its positions in the group (per slice), not in --state-file".into(),
            ));
        }
        let (m, _server) = args.follower.metrics(member.spec_group()).await?;
        if let Some(topic) = &args.to_topic {
            let id = table.snapshot(None).await?.metadata.id;
            let mut sink = KafkaGroupSink::new(kafka(topic, member.spec_group().to_string(), id));
            return run_member(table, &mut sink, &mut member, &opts, m.as_deref(), stop).await;
        }
        let mut sink = match &args.output {
            Some(path) => LinesSink::file(path, table.url(), None)?,
            None => LinesSink::stream(out, table.url(), None),
        };
        return run_member(table, &mut sink, &mut member, &opts, m.as_deref(), stop).await;
    }
    if let Some(topic) = &args.to_topic {
        let Some(follower_id) = args.follower_id.clone() else {
            return Err(Error::InvalidArgument("--to-topic needs --follower-id (or --group)".into()));
        };
        let cfg = kafka(topic, follower_id, table.snapshot(None).await?.metadata.id);
        let mut sink = KafkaSink::open(cfg).await?;
        let (m, _server) = args.follower.metrics(args.follower_id.as_deref().unwrap_or("tail")).await?;
        return run_follower(table, &mut sink, &opts, m.as_deref(), stop).await;
    }
    let (m, _server) = args.follower.metrics(args.follower_id.as_deref().unwrap_or("tail")).await?;
    let mut sink = match &args.output {
        Some(path) => LinesSink::file(path, table.url(), args.state_file.clone())?,
        None => LinesSink::stream(out, table.url(), args.state_file.clone()),
    };
    run_follower(table, &mut sink, &opts, m.as_deref(), stop).await
}

/// `follow <source> --into <target> --follower-id ID`.
///
/// # Errors
/// As [`run_follower`], plus target errors.
pub(super) async fn follow(
    args: FollowArgs,
    source: &Table,
    target: &Table,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<serde_json::Value> {
    let opts = args.follower.options(&args.from, args.follower_id.clone())?;
    let how = Target::of(args.mirror, &args.key_columns);
    let own = |e: Error| match e {
        Error::InvalidArgument(why) => Error::InvalidArgument(format!("follow: {why}")),
        e => e,
    };
    refuse_own_target(source, target).map_err(own)?;
    let mut member = args.follower.join(source, &args.from).await?;
    let follower_id = args.follower_id.clone().unwrap_or_default();
    let label = member.as_ref().map_or(follower_id.clone(), |m| m.spec_group().to_string());
    let (m, _server) = args.follower.metrics(&label).await?;
    let followed =
        follow_into_table(source, target, &follower_id, &how, member.as_mut(), &opts, m.as_deref(), || {}, stop)
            .await
            .map_err(own)?;
    let mut out = followed.to_json();
    if let Some(member) = &member {
        out["member"] = member.name().into();
    }
    Ok(out)
}

/// `followers <table> [--remove ID]`: the registrations as JSON.
///
/// # Errors
/// Storage errors and unreadable registrations.
pub(super) async fn followers(table: &Table, remove: Option<&str>) -> Result<serde_json::Value> {
    if let Some(id) = remove {
        let removed = crate::storage::followers::unregister(table, id).await?;
        return Ok(serde_json::json!({"removed": id, "existed": removed}));
    }
    let records = crate::storage::followers::list_followers(table).await?;
    let latest = table.latest_version().await?;
    let now = table.clock().now_ms();
    let groups = crate::storage::groups::list_groups(table).await?;
    Ok(serde_json::json!({
        "latestVersion": latest,
        "groups": groups.iter().map(|g| serde_json::json!({
            "group": g.group, "slices": g.spec.slices, "keyColumns": g.spec.key_columns,
            "members": g.members.iter().filter(|m| m.expires_at > now).map(|m| &m.member).collect::<Vec<_>>(),
            "slicePositions": g.slices.iter().map(|s| {
                let next = g.next_version(s);
                let held = s.lease.expires_at > now;
                serde_json::json!({
                    "slice": s.slice, "member": held.then_some(&s.lease.member), "leaseExpiresAt": s.lease.expires_at,
                    "nextVersion": next, "versionsBehind": (latest + 1).saturating_sub(next),
                })
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "followers": records.iter().map(|r| {
            let mut f = serde_json::json!({
                "followerId": r.follower_id, "kind": r.kind, "nextVersion": r.next_version,
                "versionsBehind": (latest + 1).saturating_sub(r.next_version), "updatedAt": r.updated_at,
            });
            if let Some(at) = r.expires_at {
                f["expiresAt"] = at.into();
                f["expired"] = r.expired(now).into();
            }
            f
        }).collect::<Vec<_>>(),
    }))
}
