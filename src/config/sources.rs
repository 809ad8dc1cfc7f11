//! `[pipelines.<name>.delta]` and `[pipelines.<name>.upsert]`: the Delta-table source (a
//! follower of another table's change feed) and keyed ingestion of a Kafka source.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::common::units::{ByteSize, HumanDuration};
use crate::error::Error;

/// `[pipelines.<name>.delta]`: follow another table's change feed into this pipeline's table.
/// The target holds the source columns plus `_change_type`, `_commit_version` and
/// `_commit_timestamp`; its position is `txn(<follower_id>-<source table id>, version)`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeltaSourceConfig {
    /// The source table URL or path.
    pub source: String,
    /// Without a recorded position: `snapshot` (the latest rows as inserts, then new commits),
    /// `latest` (new commits only) or a version number.
    #[serde(default = "default_delta_start")]
    pub start: String,
    /// Names the follower (position and registration on the source); default: the app id.
    #[serde(default)]
    pub follower_id: Option<String>,
    #[serde(default = "default_poll")]
    pub poll_interval: HumanDuration,
    /// A row predicate; files that cannot match are skipped by their statistics.
    #[serde(default)]
    pub filter: Option<String>,
    /// Keep following when the position is older than the source's retention.
    #[serde(default)]
    pub allow_stale: bool,
    /// Skip commits missing from the source log (with a warning) instead of stopping.
    #[serde(default)]
    pub skip_gaps: bool,
    /// Commits that delete or update rows deliver nothing (inserts only).
    #[serde(default)]
    pub skip_change_commits: bool,
    /// Drop delete rows.
    #[serde(default)]
    pub ignore_deletes: bool,
    /// Deliver consecutive ready source commits as one target commit, up to these limits.
    #[serde(default)]
    pub max_files_per_batch: Option<usize>,
    #[serde(default)]
    pub max_bytes_per_batch: Option<ByteSize>,
    /// Keep this pipeline's table a copy of the source (its live rows equal the source's at
    /// each delivered version, matched by `key_columns`) instead of the change log.
    #[serde(default)]
    pub mirror: bool,
    /// The columns that identify a row (with `mirror`).
    #[serde(default)]
    pub key_columns: Vec<String>,
    /// Join this consumer group: the processes in it share the source's changes, slice by
    /// slice (positions per slice; `start` is then a version or `latest`).
    #[serde(default)]
    pub group: Option<String>,
    /// This member's id in the group (default: unique to the process).
    #[serde(default)]
    pub member: Option<String>,
    /// Slices of a new group (default 16).
    #[serde(default)]
    pub slices: Option<u32>,
    /// Columns choosing a row's slice in a new group (default: the file a row comes from).
    #[serde(default)]
    pub group_key: Vec<String>,
    /// How long a member's slices stay its own without a heartbeat.
    #[serde(default = "default_lease")]
    pub lease: HumanDuration,
}

fn default_lease() -> HumanDuration {
    HumanDuration::from_secs(10)
}

fn default_delta_start() -> String {
    "snapshot".into()
}
fn default_poll() -> HumanDuration {
    HumanDuration::from_secs(1)
}

/// `[pipelines.<name>.upsert]`: each record upserts its row by key, or deletes the key.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpsertConfig {
    /// The key columns (integer or string columns of the table).
    pub key_columns: Vec<String>,
    /// `plain` (the payload is the row) or `debezium` (a change-event envelope).
    #[serde(default)]
    pub format: UpsertFormat,
    /// Plain payloads: a column whose value `d` or `delete` makes the record a delete of its
    /// key (the column is part of the table like any other).
    #[serde(default)]
    pub op_field: Option<String>,
    /// Memory the table's key index may keep resident (buckets beyond it are evicted and read
    /// again from their sidecar files when a flush needs them): about 24 bytes a key.
    #[serde(default = "default_index_memory")]
    pub index_memory: ByteSize,
}

/// The default of `upsert.index_memory`.
pub const DEFAULT_INDEX_MEMORY: ByteSize = ByteSize::mib(512);

fn default_index_memory() -> ByteSize {
    DEFAULT_INDEX_MEMORY
}

/// What a keyed record's payload is (`upsert.format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum UpsertFormat {
    /// The payload is the row.
    #[default]
    Plain,
    /// A Debezium change-event envelope (`before`, `after`, `op`).
    Debezium,
}

setting_values!(UpsertFormat { "plain" => Plain, "debezium" => Debezium });

impl DeltaSourceConfig {
    /// The follower options these settings describe (`source` aside): the one translation of
    /// follower settings, used for `[delta]` pipelines and the `tail` / `follow` flags alike.
    ///
    /// # Errors
    /// The key (as in this struct) and why its value is refused.
    pub fn options(
        &self,
        follower_id: Option<String>,
    ) -> std::result::Result<crate::common::follow::FollowerOptions, (&'static str, String)> {
        let mut o = crate::common::follow::FollowerOptions::new(self.start.parse().map_err(|e: Error| match e {
            Error::InvalidArgument(m) => ("start", m),
            e => ("start", e.to_string()),
        })?);
        o.poll = self.poll_interval.get().max(Duration::from_millis(1));
        o.filter = self
            .filter
            .as_deref()
            .map(|f| crate::delta::predicate::parse(f).map_err(|e| ("filter", e.to_string())))
            .transpose()?;
        o.follower_id = follower_id;
        o.allow_stale = self.allow_stale;
        o.skip_gaps = self.skip_gaps;
        o.skip_change_commits = self.skip_change_commits;
        o.ignore_deletes = self.ignore_deletes;
        o.max_files = self.max_files_per_batch;
        o.max_bytes = self.max_bytes_per_batch.map(ByteSize::get);
        Ok(o)
    }
}

/// A Delta source, checked.
#[derive(Debug, Clone)]
pub struct ResolvedDeltaSource {
    pub source: String,
    pub follower_id: String,
    pub options: crate::common::follow::FollowerOptions,
    /// The key columns of a mirror.
    pub mirror: Option<Vec<String>>,
    pub group: Option<crate::common::follow::GroupOptions>,
}
