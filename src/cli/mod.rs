//! The `deltabus` command line: argument definitions and the dispatch of each command; the
//! read commands' output forms are in `read`.
//!
//! Errors go to stderr; the exit code is non-zero.

use crate::common::units::ByteSize;
use key_value::KeyValue;
use std::io::Write;

use clap::{Args, Parser, Subcommand};

mod changes;
mod key_value;
mod read;
pub mod reference;
mod reference_toml;
mod run;
mod serve;
mod top;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::storage::{StorageOptions, Table};

/// OpenTelemetry export: its settings from `[telemetry]` and the `OTEL_*` variables, and the
/// exporters the binary starts and shuts down.
pub use crate::app::telemetry::{settings as telemetry_settings, Settings as TelemetrySettings, Telemetry};
pub use crate::common::say;

/// Arms the hooks the exactly-once process tests drive through the environment: crash points
/// (`DELTABUS_CRASH_AT`) and store faults (`DELTABUS_FAULTS`). A malformed spec is an error
/// naming its variable, as one line.
pub fn arm_test_hooks() -> std::result::Result<(), String> {
    if let Ok(spec) = std::env::var("DELTABUS_CRASH_AT") {
        crate::failpoint::arm(&spec).map_err(|e| format!("DELTABUS_CRASH_AT: {e}"))?;
    }
    if let Ok(spec) = std::env::var("DELTABUS_FAULTS") {
        let faults = crate::storage::faulty::FaultConfig::parse(&spec).map_err(|e| format!("DELTABUS_FAULTS: {e}"))?;
        crate::storage::faulty::inject_everywhere(faults);
    }
    Ok(())
}

/// What the store faults armed by [`arm_test_hooks`] injected, for the last line of a run.
pub fn injected_faults() -> Option<String> {
    crate::storage::faulty::everywhere_counts().map(|c| c.to_string())
}

/// Exactly-once streaming ingest and log tailing for Delta Lake tables.
#[derive(Debug, Parser)]
#[command(name = "deltabus", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Configuration file (TOML); see `deltabus config print-defaults`.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<std::path::PathBuf>,
    /// Object-store option KEY=VALUE (for example aws_endpoint=http://127.0.0.1:5055); repeatable.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", global = true)]
    pub storage_options: Vec<KeyValue>,
    /// Accept absolute file paths in the log when they lie inside the table root.
    #[arg(long, global = true)]
    pub allow_absolute_paths: bool,
    /// Log format on stderr (overrides `log.format`).
    #[arg(long, value_parser = ["text", "json"], global = true)]
    pub log_format: Option<String>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the live rows of a table as JSON lines.
    Cat {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// Read the table as of this version (default: the latest).
        #[arg(long)]
        version: Option<u64>,
        /// At most this many (default: all).
        #[arg(long)]
        limit: Option<usize>,
        /// Only rows matching this predicate (as `delete --where`); files whose statistics or
        /// partition values rule it out are skipped unread (`DELTABUS_LOG=info` reports how
        /// many).
        #[arg(long = "where", value_name = "PREDICATE")]
        predicate: Option<String>,
    },
    /// Print the live files of a table as one JSON object.
    Files {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// Read the table as of this version (default: the latest).
        #[arg(long)]
        version: Option<u64>,
    },
    /// Print version, protocol, schema, properties, txn versions and sizes as one JSON object.
    Describe {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// Read the table as of this version (default: the latest).
        #[arg(long)]
        version: Option<u64>,
    },
    /// Print commit information per version, newest first, as JSON lines.
    History {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// At most this many (default: all).
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Print the row-level changes of versions FROM..=TO (default: the latest) as JSON lines.
    Changes {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// A version, `latest` (the newest commit only) or `timestamp:<RFC 3339 | ms>` (the first
        /// commit at or after it).
        #[arg(long, default_value = "0")]
        from: String,
        /// The last version: a version, `latest` (the newest commit) or
        /// `timestamp:<RFC 3339 | ms>` (the last commit at or before it); default: the newest.
        #[arg(long)]
        to: Option<String>,
        /// Only rows matching this predicate (files are skipped by statistics first).
        #[arg(long = "where", value_name = "PREDICATE")]
        predicate: Option<String>,
    },
    /// Follow the table's new commits and emit their row-level changes until interrupted:
    /// JSON lines on stdout or in a file, or a Kafka topic in transactions.
    Tail(changes::TailArgs),
    /// Replicate a table's change feed into another Delta table, exactly once (resumes from
    /// the target's txn for this follower).
    Follow(changes::FollowArgs),
    /// List the followers registered on a table (what maintenance keeps for them), or remove one.
    Followers {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// Forget this follower's registration instead of listing.
        #[arg(long, value_name = "ID")]
        remove: Option<String>,
    },
    /// Append JSON lines from stdin to a table in one commit (creating it if needed).
    Write(WriteArgs),
    /// Delete the rows matching a predicate in one commit (deletion vectors when the table
    /// enables them, else copy-on-write); prints files scanned/skipped and rows deleted.
    Delete {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// e.g. "id < 100 AND country IN ('DE', 'FR')"
        #[arg(long = "where", value_name = "PREDICATE")]
        predicate: String,
        /// Count the matching rows and files; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Rewrite small files and files with many deleted rows into large ones (dataChange=false).
    Compact {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// Only partitions matching `col = value [AND col = value ...]`.
        #[arg(long = "where", value_name = "PARTITION PREDICATE")]
        predicate: Option<String>,
        /// Target size of rewritten files (e.g. 128MiB; default: the table's
        /// delta.targetFileSize, else 128MiB).
        #[arg(long, alias = "target-size")]
        target_file_size: Option<ByteSize>,
        /// Files below this size are rewritten (default: the target size).
        #[arg(long)]
        min_file_size: Option<ByteSize>,
        /// Plan and print the summary without writing.
        #[arg(long)]
        dry_run: bool,
        /// Clustered tables: recluster every file, not only those not clustered yet.
        #[arg(long)]
        full: bool,
    },
    /// Delete files no version within the retention references (and orphans of failed writes).
    Vacuum {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// Keep files removed less than this long ago, e.g. 12h, 7days [default: the table's
        /// delta.deletedFileRetentionDuration, 7 days]. Below the table's retention needs
        /// --force (not with --dry-run).
        #[arg(long, value_name = "DURATION", conflicts_with = "retention_hours")]
        retention: Option<crate::common::units::HumanDuration>,
        /// The retention in whole hours (the same as --retention <N>h).
        #[arg(long, value_name = "HOURS")]
        retention_hours: Option<u64>,
        /// List what would be deleted without deleting.
        #[arg(long)]
        dry_run: bool,
        /// Allow a retention below the table's.
        #[arg(long)]
        force: bool,
        /// Only files of expired tombstones, from the log (no listing of the table).
        #[arg(long)]
        lite: bool,
        /// Also delete files that registered followers still need.
        #[arg(long)]
        ignore_followers: bool,
    },
    /// Delete log files older than delta.logRetentionDuration that no retained checkpoint needs.
    CleanupLog {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// List what would be deleted without deleting.
        #[arg(long)]
        dry_run: bool,
        /// Also delete commits that registered followers still need.
        #[arg(long)]
        ignore_followers: bool,
    },
    /// Write a checkpoint of the latest version (and `_last_checkpoint`); prints it as JSON.
    Checkpoint {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
    },
    /// Change a table's clustering columns (as ALTER TABLE ... CLUSTER BY), or remove them
    /// with --none; files are not rewritten (`compact` clusters them). Prints the version
    /// committed (null: nothing changed) and the columns as JSON.
    ClusterBy {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// The clustering columns, comma-separated (at most 4; nested as `a.b`).
        #[arg(value_delimiter = ',', required_unless_present = "none", conflicts_with = "none")]
        columns: Vec<String>,
        /// Cluster by nothing (CLUSTER BY NONE): the table stays a clustered table without
        /// columns.
        #[arg(long)]
        none: bool,
    },
    /// Widen column types in place (ALTER COLUMN ... TYPE): each named column takes a wider
    /// type of its family, recorded in `delta.typeChanges`; files keep their type and are read
    /// upcast. Turns type widening on (`delta.enableTypeWidening=true`), which lets schema
    /// evolution widen columns by itself from then on.
    Alter {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// COLUMN=TYPE (nested columns dotted; `element`, `key`, `value` step into arrays and
        /// maps), for example `n=long`, `price=decimal(12,2)`, `s.day=timestamp_ntz`; repeatable.
        #[arg(long, value_name = "COLUMN=TYPE", required_unless_present = "enable_type_widening")]
        widen: Vec<String>,
        /// Only turn type widening on (schema evolution then widens columns by itself).
        #[arg(long)]
        enable_type_widening: bool,
    },
    /// Bring a UniForm table's Iceberg metadata (`<table>/metadata/`) up to its latest Delta
    /// version, after a writer died between a commit and its conversion; prints the Iceberg
    /// snapshot as JSON.
    Uniform {
        /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
        table: String,
        /// Turn UniForm on first for a table that does not have it (icebergCompatV2, column
        /// mapping by the current names, deletion vectors off; refused with the reason when
        /// the table cannot take it).
        #[arg(long)]
        enable: bool,
    },
    /// Run the pipelines of the configuration file (Kafka topics into Delta tables) until
    /// SIGTERM/SIGINT; then flush, commit and exit 0.
    Run {
        /// Serve Prometheus metrics and /health, /ready here (overrides metrics.addr).
        #[arg(long)]
        metrics_addr: Option<String>,
    },
    /// Ingest one Kafka topic into one table, from flags (the same pipeline `run` executes).
    Ingest(run::IngestArgs),
    /// Push ingest over HTTP: producers POST JSON lines (or Arrow IPC streams) to
    /// /v1/tables/NAME/records, exactly once per Producer-Id and Producer-Sequence, until
    /// SIGTERM/SIGINT. Tables come from [server.tables] and --table.
    Serve(serve::ServeArgs),
    /// Start an in-process Kafka (librdkafka's mock cluster), produce sample events, ingest
    /// them into a new local table and print what landed. No external services needed.
    Demo {
        /// The table to create (default: a new directory under the system temp dir).
        #[arg(long)]
        table: Option<String>,
        /// Sample events to produce and ingest.
        #[arg(long, default_value_t = 10_000)]
        records: u32,
    },
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell), e.g.
    /// `deltabus completions bash > /etc/bash_completion.d/deltabus`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `deltabus man > /usr/local/share/man/man1/deltabus.1`.
    Man,
    /// Watch running deltabus processes live: per pipeline, follower, push table and
    /// Kafka-protocol topic the records/s, rows committed, commits/s, lag, dead letters, commit
    /// latency and buffer, read from their /metrics endpoints (`q` quits; `--once` prints plain
    /// text).
    Top(top::TopArgs),
    /// Write the docs site's reference pages (commands, configuration keys, metrics) into DIR.
    #[command(hide = true)]
    Reference {
        /// The directory (the docs site's is docs/src/reference).
        dir: std::path::PathBuf,
    },
}

/// `deltabus write` arguments.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// The table: a local path or a URL (file://, s3://, az://, abfss://, gs://, memory://).
    pub table: String,
    /// Partition columns of a new table, comma-separated; `date(ts)`, `hour(ts)`, `year(ts)`,
    /// `month(ts)`, `day(ts)` [as name] derive generated columns from a timestamp column.
    #[arg(long, value_delimiter = ',')]
    pub partition_by: Vec<String>,
    /// Clustering columns of a new table, comma-separated (at most 4; nested as `a.b`; not
    /// with --partition-by): every file keeps their statistics and `compact` clusters by them.
    #[arg(long, value_delimiter = ',')]
    pub cluster_by: Vec<String>,
    /// append (create the table when missing, as `ingest --create` does) or error-if-exists
    /// (create it; fail when it exists; `create` is an alias).
    #[arg(long, value_enum, default_value = "append")]
    pub mode: ModeArg,
    /// Add new nullable columns found in the records to the table schema (the pipelines'
    /// `evolve_schema`; `--merge-schema` is an alias).
    #[arg(long = "evolve-schema", alias = "merge-schema")]
    pub merge_schema: bool,
    /// JSON fields that land as `variant` columns whatever their shape, comma-separated (a
    /// pipeline's `variant_columns`): typed so in a new table, or when --evolve-schema adds them.
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    pub variant_columns: Vec<String>,
    /// The `variant` column each whole JSON line lands in (a pipeline's `record_variant`).
    #[arg(long, value_name = "COLUMN", conflicts_with = "variant_columns")]
    pub record_variant: Option<String>,
    /// Idempotency key: with --txn-version, a second run with the same pair commits nothing.
    #[arg(long, requires = "txn_version")]
    pub app_id: Option<String>,
    /// The version committed with --app-id as the table's `txn` (for example the batch's
    /// sequence number); a run whose version is not above the recorded one commits nothing.
    #[arg(long, requires = "app_id")]
    pub txn_version: Option<i64>,
    /// Table property KEY=VALUE for a new table; repeatable.
    #[arg(long = "property", value_name = "KEY=VALUE")]
    pub properties: Vec<KeyValue>,
    /// Delta schema (JSON, as in metaData.schemaString) for a new table, instead of inference.
    #[arg(long, value_name = "FILE")]
    pub schema: Option<std::path::PathBuf>,
    /// Roll data files past this size (e.g. 128MiB, 1.5GB).
    #[arg(long)]
    pub target_file_size: Option<ByteSize>,
    /// Parquet codec: zstd, snappy, gzip, lz4, brotli, uncompressed.
    #[arg(long, value_parser = |s: &str| s.parse::<crate::delta::properties::Codec>())]
    pub compression: Option<crate::delta::properties::Codec>,
}

/// `deltabus config ...`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate the configuration (defaults, --config file, environment) and print it,
    /// secrets redacted.
    Check,
    /// Print the embedded defaults file, with documentation of every key.
    PrintDefaults,
}

impl Command {
    /// Whether the command runs as a service (until stopped) rather than once.
    /// Whether the command runs the push server (`serve`, or `run` with `[server.tables]`).
    pub fn serves_http(&self, config: &Config) -> bool {
        match self {
            Command::Serve(_) => true,
            Command::Run { .. } => !config.server.tables.is_empty(),
            _ => false,
        }
    }

    pub fn is_service(&self) -> bool {
        match self {
            Command::Run { .. } | Command::Ingest(_) | Command::Serve(_) | Command::Demo { .. } => true,
            Command::Tail(a) => !a.follower.once,
            Command::Follow(a) => !a.follower.once,
            _ => false,
        }
    }
}

impl GlobalArgs {
    /// Storage options: the configuration's, overridden by command-line flags.
    fn storage(&self, config: &Config) -> Result<StorageOptions> {
        let mut storage = config.storage_options();
        storage.options.extend(key_value::to_map::<Vec<_>>(&self.storage_options));
        storage.allow_absolute_paths |= self.allow_absolute_paths;
        Ok(storage)
    }
}

/// Runs a parsed command with a loaded configuration, writing its output to `out`.
///
/// # Errors
/// Any [`Error`] from opening or reading the table, or from writing the output.
pub async fn run(cli: Cli, config: &Config, out: &mut (dyn Write + Send)) -> Result<()> {
    let storage = cli.global.storage(config)?;
    match cli.command {
        Command::Config(ConfigCommand::Check) => {
            // librdkafka and the object store know which properties and options exist: ask
            // them before anything runs.
            run::check_pipelines(&config.resolved_pipelines()?, &storage)?;
            if !config.server.tables.is_empty() {
                config.server.resolve(&|name| std::env::var(name).ok())?;
            }
            out.write_all(config.to_redacted_toml().as_bytes())?;
            Ok(())
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "deltabus", out);
            Ok(())
        }
        Command::Top(args) => top::top(args, out).await,
        Command::Reference { dir } => Ok(reference::write_pages(&dir)?),
        Command::Man => {
            use clap::CommandFactory;
            clap_mangen::Man::new(Cli::command()).render(out)?;
            Ok(())
        }
        Command::Config(ConfigCommand::PrintDefaults) => {
            out.write_all(crate::config::DEFAULTS_TOML.as_bytes())?;
            Ok(())
        }
        Command::Run { metrics_addr } => {
            run::run_pipelines(config.resolved_pipelines()?, config, storage, metrics_addr, out).await
        }
        Command::Ingest(args) => {
            let metrics_addr = args.metrics_addr.clone();
            run::run_pipelines(vec![args.pipeline()?], config, storage, metrics_addr, out).await
        }
        Command::Serve(args) => serve::serve(args, config, storage, run::shutdown_on_signals(), out).await,
        Command::Demo { table, records } => run::demo(table, records, out).await,
        Command::Cat { table, version, limit, predicate } => {
            read::cat(&Table::open(&table, storage)?, version, limit, predicate.as_deref(), out).await
        }
        Command::Files { table, version } => read::files(&Table::open(&table, storage)?, version, out).await,
        Command::Describe { table, version } => read::describe(&Table::open(&table, storage)?, version, out).await,
        Command::History { table, limit } => read::history(&Table::open(&table, storage)?, limit, out).await,
        Command::Write(args) => write(args, storage, out).await,
        Command::Follow(args) => {
            let source = Table::open(&args.source, storage.clone())?;
            let target = Table::open_for_write(&args.target, storage)?;
            let report = changes::follow(args, &source, &target, run::stop_signal()).await?;
            read::writeln_json(out, &report)
        }
        Command::Changes { table, from, to, predicate } => {
            let table = Table::open(&table, storage)?;
            let from = changes::version_bound(&table, "--from", &from).await?;
            let to = match &to {
                Some(t) => Some(changes::version_bound(&table, "--to", t).await?),
                None => None,
            };
            changes::changes(&table, from, to, predicate.as_deref(), out).await
        }
        Command::Tail(args) => {
            let table = Table::open(&args.table, storage)?;
            let report = changes::tail(args, &table, run::stop_signal(), out).await?;
            let position = report.position.map_or_else(|| "none".to_string(), |p| p.to_string());
            tracing::info!(commits = report.source_commits, rows = report.rows, %position, "tail.stopped");
            Ok(())
        }
        Command::Followers { table, remove } => {
            read::writeln_json(out, &changes::followers(&Table::open(&table, storage)?, remove.as_deref()).await?)
        }
        Command::Compact { table, predicate, target_file_size, min_file_size, dry_run, full } => {
            use crate::compactor::planner::parse_partition_predicate;
            use crate::compactor::rewriter::{compact, CompactOptions};
            let mut opts = CompactOptions { dry_run, full, progress: true, ..CompactOptions::default() };
            if let Some(t) = target_file_size {
                opts.plan.target_size = t.get();
                opts.plan.min_file_size = t.get();
            }
            if let Some(m) = min_file_size {
                opts.plan.min_file_size = m.get();
            }
            if let Some(p) = predicate {
                opts.partitions =
                    Some(parse_partition_predicate(&p).map_err(|e| Error::InvalidArgument(format!("--where: {e}")))?);
            }
            let report = compact(&Table::open(&table, storage)?, &opts).await?;
            read::writeln_json(out, &report.to_json())
        }
        Command::Delete { table, predicate, dry_run } => {
            let opts = crate::ops::delete::DeleteOptions { dry_run, ..Default::default() };
            let report = crate::ops::delete::delete(&Table::open(&table, storage)?, &predicate, &opts).await?;
            read::writeln_json(out, &report.to_json())
        }
        Command::Vacuum { table, retention, retention_hours, dry_run, force, lite, ignore_followers } => {
            use crate::ops::maintenance::{vacuum, VacuumOptions};
            let retention = match retention_hours {
                None if retention
                    .is_some_and(|r| r.get().as_secs() / 3600 > crate::delta::retention::MAX_RETENTION_HOURS) =>
                {
                    return Err(crate::Error::InvalidArgument(format!(
                        "--retention is out of range (at most {}h)",
                        crate::delta::retention::MAX_RETENTION_HOURS
                    )))
                }
                None => retention.map(crate::common::units::HumanDuration::get),
                Some(h) if h > crate::delta::retention::MAX_RETENTION_HOURS => {
                    return Err(crate::Error::InvalidArgument(format!(
                        "--retention-hours {h} is out of range (at most {})",
                        crate::delta::retention::MAX_RETENTION_HOURS
                    )))
                }
                Some(h) => Some(std::time::Duration::from_secs(h * 3600)),
            };
            let opts = VacuumOptions { retention, dry_run, force, lite, ignore_followers, progress: true };
            let report = vacuum(&Table::open(&table, storage)?, &opts).await?;
            read::writeln_json(out, &report.to_json())
        }
        Command::CleanupLog { table, dry_run, ignore_followers } => {
            let table = Table::open(&table, storage)?;
            let report = crate::ops::maintenance::cleanup_log(&table, dry_run, ignore_followers).await?;
            read::writeln_json(out, &report.to_json())
        }
        Command::Checkpoint { table } => {
            let table = Table::open(&table, storage)?;
            let snapshot = table.snapshot(None).await?;
            let written = table.write_checkpoint(&snapshot).await?;
            read::writeln_json(out, &serde_json::to_value(&written).map_err(|e| Error::Internal(e.to_string()))?)
        }
        Command::ClusterBy { table, columns, none: _ } => {
            let table = Table::open_for_write(&table, storage)?;
            let columns: Vec<String> = columns.iter().map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect();
            read::writeln_json(out, &crate::ops::cluster_by::cluster_by(&table, &columns).await?)
        }
        Command::Alter { table, widen, enable_type_widening: _ } => {
            let widen = widen
                .iter()
                .map(|w| {
                    w.parse::<crate::ops::alter::Widen>().map_err(|e| Error::InvalidArgument(format!("--widen {e}")))
                })
                .collect::<Result<Vec<_>>>()?;
            let table = Table::open_for_write(&table, storage)?;
            read::writeln_json(out, &crate::ops::alter::alter(&table, &widen).await?)
        }
        Command::Uniform { table, enable } => {
            let table = Table::open(&table, storage)?;
            read::writeln_json(out, &crate::ops::uniform::uniform(&table, enable).await?)
        }
    }
}

async fn write(args: WriteArgs, storage: crate::storage::StorageOptions, out: &mut (dyn Write + Send)) -> Result<()> {
    use crate::ops::write::{write_json_lines_until, WriteMode, WriteOptions};
    let table = Table::open_for_write(&args.table, storage)?;
    let properties = key_value::to_map(&args.properties);
    let schema = match &args.schema {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::InvalidArgument(format!("--schema {}: {e}", path.display())))?;
            Some(
                crate::delta::schema::StructType::parse(&text)
                    .map_err(|e| Error::InvalidArgument(format!("--schema {}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let target_file_size = args.target_file_size.map(ByteSize::get);
    let columns: Vec<String> =
        args.variant_columns.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    let variants = crate::config::variants::Variants::new(&columns, args.record_variant.as_deref())
        .map_err(|why| Error::InvalidArgument(format!("--variant-columns / --record-variant: {why}")))?;
    let opts = WriteOptions {
        mode: match args.mode {
            ModeArg::Append => WriteMode::Append,
            ModeArg::ErrorIfExists => WriteMode::Create,
        },
        partition_by: args.partition_by.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        cluster_by: args.cluster_by.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        merge_schema: args.merge_schema,
        variants,
        schema,
        properties,
        txn: args.app_id.zip(args.txn_version),
        target_file_size,
        compression: args.compression,
        progress: true,
        ..WriteOptions::default()
    };
    let stdin = tokio::io::BufReader::with_capacity(1 << 20, tokio::io::stdin());
    let report = write_json_lines_until(&table, stdin, &opts, run::stop_signal()).await?;
    if let Some(crate::delta::transaction::CommitOutcome::Conflict { version, reason }) = &report.outcome {
        return Err(Error::CommitConflict { version: *version, reason: reason.clone() });
    }
    read::writeln_json(out, &report.to_json())
}

/// `write --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    Append,
    #[value(name = "error-if-exists", alias = "create")]
    ErrorIfExists,
}
