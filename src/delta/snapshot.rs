//! A validated snapshot: the state of a table at one version, checked for protocol support.
//!
//! Built from replayed [`TableState`]; holds the live files sorted by path, unexpired
//! tombstones, txn versions (after `delta.setTransactionRetentionDuration`), domains, the
//! parsed schema and typed properties.

use std::collections::HashMap;

use super::actions::{Action, Add, DomainMetadata, Metadata, Protocol, Remove, Txn};
use super::features::check_readable;
use super::properties::TableProperties;
use super::replay::TableState;
use super::schema::{ColumnMappingMode, StructType};
use crate::error::{Error, Result};

/// The table at one version.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub version: u64,
    pub protocol: Protocol,
    pub metadata: Metadata,
    pub schema: StructType,
    pub properties: TableProperties,
    /// The checkpoint the snapshot was loaded from, if any.
    pub checkpoint_version: Option<u64>,
    state: TableState,
    now_ms: i64,
}

impl Snapshot {
    /// Validates replayed state. `now_ms` is the clock reading used for retention rules.
    ///
    /// # Errors
    /// [`Error::InvalidLog`] when protocol, metadata or schema are missing or malformed;
    /// [`Error::Unsupported`] when the protocol needs a feature deltabus cannot read.
    pub fn new(state: TableState, checkpoint_version: Option<u64>, now_ms: i64) -> Result<Snapshot> {
        let version = state.version.ok_or_else(|| Error::Internal("snapshot of an empty state".into()))?;
        let protocol = state.protocol.clone().ok_or_else(|| {
            Error::invalid_log("_delta_log", format!("no protocol action found up to version {version}"))
        })?;
        check_readable(&protocol)?;
        let metadata = state.metadata.clone().ok_or_else(|| {
            Error::invalid_log("_delta_log", format!("no metaData action found up to version {version}"))
        })?;
        if !metadata.format.provider.eq_ignore_ascii_case("parquet") {
            return Err(Error::unsupported(format!("data format {:?} (only parquet)", metadata.format.provider)));
        }
        if metadata.schema_string.is_empty() {
            return Err(Error::invalid_log(
                "metaData",
                format!("the table metadata at version {version} has no schemaString"),
            ));
        }
        let schema = StructType::parse(&metadata.schema_string)?;
        super::type_widening::check_recorded(&schema)?;
        for p in &metadata.partition_columns {
            if schema.field(p).is_none() {
                return Err(Error::invalid_log("metaData", format!("partition column {p:?} is not in the schema")));
            }
        }
        let properties = TableProperties::from_config(&metadata.configuration);
        Ok(Snapshot { version, protocol, metadata, schema, properties, checkpoint_version, state, now_ms })
    }

    /// The table as it would be with `metadata` (a schema change a writer is about to commit
    /// together with its rows): same version, files and txns.
    ///
    /// # Errors
    /// The checks of [`Snapshot::new`] (a schema that does not parse, say).
    pub fn with_metadata(&self, metadata: super::actions::Metadata) -> Result<Snapshot> {
        self.with_table(self.protocol.clone(), metadata)
    }

    /// The table as it would be with `protocol` and `metadata` (a schema change that also
    /// adds table features): same version, files and txns.
    ///
    /// # Errors
    /// The checks of [`Snapshot::new`].
    pub fn with_table(&self, protocol: Protocol, metadata: super::actions::Metadata) -> Result<Snapshot> {
        let mut state = self.state.clone();
        state.protocol = Some(protocol);
        state.metadata = Some(metadata);
        Snapshot::new(state, self.checkpoint_version, self.now_ms)
    }

    /// Advances the snapshot by the commit that directly follows it, without replaying the
    /// log: the incremental update a tailer or a streaming writer needs.
    ///
    /// # Errors
    /// As [`TableState::apply_commit`], and the checks of [`Snapshot::new`] when the commit
    /// changes the protocol or metadata. On error the snapshot is unchanged.
    pub fn apply_commit(&mut self, version: u64, actions: Vec<Action>, file: &str) -> Result<()> {
        let changes_table = actions.iter().any(|a| matches!(a, Action::Protocol(_) | Action::Metadata(_)));
        if changes_table {
            let mut state = self.state.clone();
            state.apply_commit_owned(version, actions, file)?;
            *self = Snapshot::new(state, self.checkpoint_version, self.now_ms)?;
        } else {
            self.state.apply_commit_owned(version, actions, file)?;
            self.version = version;
        }
        Ok(())
    }

    /// The snapshot a table will have once its creating commit (with these protocol and
    /// metadata actions) lands: what writers plan new tables against.
    ///
    /// # Errors
    /// As [`Snapshot::new`].
    pub fn for_new_table(protocol: Protocol, metadata: Metadata) -> Result<Snapshot> {
        let state = TableState {
            protocol: Some(protocol),
            metadata: Some(metadata),
            version: Some(0),
            ..TableState::default()
        };
        Snapshot::new(state, None, 0)
    }

    /// A new table's snapshot with `domains` live: what its creation commit makes.
    ///
    /// # Errors
    /// As [`Snapshot::for_new_table`].
    pub fn for_new_table_with(
        protocol: Protocol,
        metadata: Metadata,
        domains: Vec<DomainMetadata>,
    ) -> Result<Snapshot> {
        let state = TableState {
            protocol: Some(protocol),
            metadata: Some(metadata),
            version: Some(0),
            domains: domains.into_iter().map(|d| (d.domain.clone(), d)).collect(),
            ..TableState::default()
        };
        Snapshot::new(state, None, 0)
    }

    /// The live files, sorted by path.
    pub fn files(&self) -> Vec<&Add> {
        let mut files: Vec<&Add> = self.state.files.values().collect();
        files.sort_by(|a, b| {
            a.path.cmp(&b.path).then_with(|| a.deletion_vector.is_some().cmp(&b.deletion_vector.is_some()))
        });
        files
    }

    /// Number of live files.
    pub fn file_count(&self) -> usize {
        self.state.files.len()
    }

    /// Sum of live file sizes in bytes.
    pub fn total_bytes(&self) -> i64 {
        // Saturating: a damaged log's sizes must not wrap into a negative total.
        self.state.files.values().fold(0i64, |t, a| t.saturating_add(a.size.max(0)))
    }

    /// Tombstones not yet expired by `delta.deletedFileRetentionDuration`.
    pub fn tombstones(&self) -> Vec<&Remove> {
        let cutoff = self.now_ms - self.properties.deleted_file_retention.as_millis() as i64;
        self.state.tombstones.values().filter(|r| r.deletion_timestamp.unwrap_or(0) > cutoff).collect()
    }

    /// Transaction versions per appId, honouring `delta.setTransactionRetentionDuration`.
    pub fn txns(&self) -> HashMap<&str, &Txn> {
        let cutoff = self.properties.set_transaction_retention.map(|d| super::retention::cutoff_ms(self.now_ms, d));
        self.state
            .txns
            .iter()
            .filter(|(_, t)| cutoff.is_none_or(|c| t.last_updated.is_some_and(|lu| lu > c)))
            .map(|(k, t)| (k.as_str(), t))
            .collect()
    }

    /// This writer's own position: the txn version recorded for `app_id`, expired or not.
    ///
    /// Every deltabus stream (Kafka partitions, push producers, followers, slices, mirrors,
    /// dead letters, `write --app-id`) asks this: `delta.setTransactionRetentionDuration` lets
    /// readers forget abandoned appIds, but a stream's own position must never be forgotten
    /// just because its source was idle (forgetting it would write its next batch twice).
    /// Checkpoints keep expired txns for the same reason. One map lookup.
    pub fn txn_version(&self, app_id: &str) -> Option<i64> {
        self.state.txns.get(app_id).map(|t| t.version)
    }

    /// A foreign appId's txn version as the protocol's readers see it: `None` once it is older
    /// than `delta.setTransactionRetentionDuration` (or has no `lastUpdated` under a
    /// retention). For reporting other engines' streams, never for deciding what to skip.
    pub fn live_txn_version(&self, app_id: &str) -> Option<i64> {
        let cutoff = self.properties.set_transaction_retention.map(|d| super::retention::cutoff_ms(self.now_ms, d));
        self.state
            .txns
            .get(app_id)
            .filter(|t| cutoff.is_none_or(|c| t.last_updated.is_some_and(|lu| lu > c)))
            .map(|t| t.version)
    }

    /// Live domain metadata.
    pub fn domains(&self) -> &HashMap<String, DomainMetadata> {
        &self.state.domains
    }

    /// The column-mapping mode.
    pub fn column_mapping(&self) -> ColumnMappingMode {
        self.properties.column_mapping_mode
    }

    /// The replayed state, for incremental updates by a tailer.
    pub fn state(&self) -> &TableState {
        &self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::actions::parse_commit;

    fn state(config: &str, extra: &[&str]) -> TableState {
        let mut lines = vec![
            r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#.to_string(),
            format!(
                r#"{{"metaData":{{"id":"t","format":{{"provider":"parquet","options":{{}}}},"schemaString":"{{\"type\":\"struct\",\"fields\":[]}}","partitionColumns":[],"configuration":{config},"createdTime":1}}}}"#
            ),
        ];
        lines.extend(extra.iter().map(|s| s.to_string()));
        let mut s = TableState::default();
        s.apply_commit(0, &parse_commit(lines.join("\n").as_bytes(), "0").unwrap(), "0").unwrap();
        s
    }

    const DAY: i64 = 86_400_000;

    #[test]
    fn txn_retention_only_when_configured() {
        let txns =
            [r#"{"txn":{"appId":"old","version":1,"lastUpdated":1000}}"#, r#"{"txn":{"appId":"none","version":2}}"#];
        let now = 100 * DAY;
        let keep_all = Snapshot::new(state("{}", &txns), None, now).unwrap();
        assert_eq!(keep_all.live_txn_version("old"), Some(1));
        assert_eq!(keep_all.live_txn_version("none"), Some(2));
        let expiring =
            Snapshot::new(state(r#"{"delta.setTransactionRetentionDuration":"interval 1 days"}"#, &txns), None, now)
                .unwrap();
        assert_eq!(expiring.live_txn_version("old"), None, "expired by lastUpdated");
        assert_eq!(expiring.live_txn_version("none"), None, "no lastUpdated: dropped, as Spark does");
        // A stream's own position never expires, whatever the retention.
        assert_eq!((expiring.txn_version("old"), expiring.txn_version("none")), (Some(1), Some(2)));
    }

    #[test]
    fn tombstones_expire_after_the_retention() {
        let now = 30 * DAY;
        let rm =
            |p: &str, ts: i64| format!(r#"{{"remove":{{"path":"{p}","deletionTimestamp":{ts},"dataChange":true}}}}"#);
        let (old, recent) = (rm("old", now - 8 * DAY), rm("recent", now - DAY));
        let s = Snapshot::new(state("{}", &[&old, &recent]), None, now).unwrap();
        let kept: Vec<&str> = s.tombstones().iter().map(|r| r.path.as_str()).collect();
        assert_eq!(kept, vec!["recent"]);
    }

    #[test]
    fn refuses_partition_columns_missing_from_the_schema() {
        let mut st = state("{}", &[]);
        if let Some(m) = st.metadata.as_mut() {
            m.partition_columns = vec!["ghost".into()];
        }
        assert!(Snapshot::new(st, None, 0).is_err());
    }
}
