//! Delta log actions with their exact JSON fields (protocol digest §2).
//!
//! Parsing is tolerant: unknown fields and unknown action kinds are ignored, as the protocol
//! requires. Serialisation omits absent optional fields, as Spark does, except
//! `partitionValues` entries, which keep explicit `null`s. Required fields are required: a
//! `metaData` without `schemaString` is an invalid log, not a default.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dv::DeletionVectorDescriptor;
use crate::error::{Error, Result};

/// Partition values as written in the log: physical column name to serialised value.
pub(crate) type PartitionValues = HashMap<String, Option<String>>;

/// `format` of a `metaData` action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    pub provider: String,
    #[serde(default)]
    pub options: HashMap<String, String>,
}

impl Default for Format {
    fn default() -> Self {
        Format { provider: "parquet".to_string(), options: HashMap::new() }
    }
}

/// `metaData`: the table's schema, partitioning and properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub format: Format,
    /// Required by the protocol; an absent value parses as empty so that a superseded
    /// `metaData` does not break replay, and [`Snapshot`](super::snapshot::Snapshot) refuses
    /// a table whose current metadata has none.
    #[serde(default)]
    pub schema_string: String,
    pub partition_columns: Vec<String>,
    #[serde(default, deserialize_with = "map_skip_null_values")]
    pub configuration: HashMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<i64>,
}

/// `protocol`: the reader and writer versions and features.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Protocol {
    pub min_reader_version: i32,
    pub min_writer_version: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_features: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_features: Option<Vec<String>>,
}

/// `add`: a data file that becomes part of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Add {
    pub path: String,
    #[serde(default)]
    pub partition_values: PartitionValues,
    pub size: i64,
    pub modification_time: i64,
    pub data_change: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_vector: Option<DeletionVectorDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_row_commit_version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clustering_provider: Option<String>,
}

impl Add {
    /// The file's `numRecords` statistic, when it has one.
    pub(crate) fn num_records(&self) -> Option<i64> {
        serde_json::from_str::<Value>(self.stats.as_deref()?).ok()?.get("numRecords")?.as_i64()
    }
}

/// `remove`: a logical file leaves the table (a tombstone until vacuum).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Remove {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<i64>,
    pub data_change: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_file_metadata: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_values: Option<PartitionValues>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_vector: Option<DeletionVectorDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_row_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_row_commit_version: Option<i64>,
}

/// `cdc`: a change-data file written by the commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cdc {
    pub path: String,
    #[serde(default)]
    pub partition_values: PartitionValues,
    pub size: i64,
    #[serde(default)]
    pub data_change: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, Option<String>>>,
}

/// `txn`: the application transaction id that makes writes idempotent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Txn {
    pub app_id: String,
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<i64>,
}

/// `domainMetadata`: configuration of a named metadata domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainMetadata {
    pub domain: String,
    pub configuration: String,
    #[serde(default)]
    pub removed: bool,
}

/// `checkpointMetadata`: only inside V2 checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMetadata {
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, Option<String>>>,
}

/// `sidecar`: a file of add/remove actions referenced by a V2 checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sidecar {
    pub path: String,
    pub size_in_bytes: i64,
    pub modification_time: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<HashMap<String, Option<String>>>,
}

/// One line of a commit file or one row of a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Metadata(Metadata),
    Protocol(Protocol),
    Add(Add),
    Remove(Remove),
    Cdc(Cdc),
    Txn(Txn),
    /// `commitInfo` is free-form JSON; see [`CommitInfo`] for typed access.
    CommitInfo(Value),
    DomainMetadata(DomainMetadata),
    CheckpointMetadata(CheckpointMetadata),
    Sidecar(Sidecar),
}

impl Action {
    /// The JSON key naming this action in the log.
    pub fn key(&self) -> &'static str {
        match self {
            Action::Metadata(_) => "metaData",
            Action::Protocol(_) => "protocol",
            Action::Add(_) => "add",
            Action::Remove(_) => "remove",
            Action::Cdc(_) => "cdc",
            Action::Txn(_) => "txn",
            Action::CommitInfo(_) => "commitInfo",
            Action::DomainMetadata(_) => "domainMetadata",
            Action::CheckpointMetadata(_) => "checkpointMetadata",
            Action::Sidecar(_) => "sidecar",
        }
    }

    /// Serialises the action as one log line (no trailing newline).
    ///
    /// # Errors
    /// Only if a field cannot be represented as JSON, which the types here rule out.
    pub fn to_json_line(&self) -> Result<String> {
        let inner = match self {
            Action::Metadata(a) => serde_json::to_value(a),
            Action::Protocol(a) => serde_json::to_value(a),
            Action::Add(a) => serde_json::to_value(a),
            Action::Remove(a) => serde_json::to_value(a),
            Action::Cdc(a) => serde_json::to_value(a),
            Action::Txn(a) => serde_json::to_value(a),
            Action::CommitInfo(v) => Ok(v.clone()),
            Action::DomainMetadata(a) => serde_json::to_value(a),
            Action::CheckpointMetadata(a) => serde_json::to_value(a),
            Action::Sidecar(a) => serde_json::to_value(a),
        }
        .map_err(|e| Error::Internal(format!("serialising {}: {e}", self.key())))?;
        let mut obj = serde_json::Map::with_capacity(1);
        obj.insert(self.key().to_string(), inner);
        Ok(Value::Object(obj).to_string())
    }
}

/// Typed view of the `commitInfo` fields deltabus reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommitInfo {
    pub timestamp: Option<i64>,
    pub in_commit_timestamp: Option<i64>,
    pub operation: Option<String>,
    pub operation_parameters: Option<HashMap<String, Value>>,
    pub operation_metrics: Option<HashMap<String, Value>>,
    pub read_version: Option<i64>,
    pub isolation_level: Option<String>,
    pub is_blind_append: Option<bool>,
    pub engine_info: Option<String>,
    pub txn_id: Option<String>,
    pub user_metadata: Option<String>,
}

impl CommitInfo {
    /// Reads the typed fields, ignoring ones of unexpected types.
    pub(crate) fn from_value(v: &Value) -> CommitInfo {
        serde_json::from_value(v.clone()).unwrap_or_else(|_| CommitInfo {
            timestamp: v.get("timestamp").and_then(Value::as_i64),
            in_commit_timestamp: v.get("inCommitTimestamp").and_then(Value::as_i64),
            operation: v.get("operation").and_then(Value::as_str).map(str::to_string),
            ..CommitInfo::default()
        })
    }
}

/// One log line decoded in a single pass: each known action key is an optional field and
/// unknown keys are ignored by serde.
#[derive(Deserialize)]
struct LogLine {
    #[serde(rename = "metaData")]
    metadata: Option<Metadata>,
    protocol: Option<Protocol>,
    add: Option<Add>,
    remove: Option<Remove>,
    cdc: Option<Cdc>,
    txn: Option<Txn>,
    #[serde(rename = "commitInfo")]
    commit_info: Option<Value>,
    #[serde(rename = "domainMetadata")]
    domain_metadata: Option<DomainMetadata>,
    #[serde(rename = "checkpointMetadata")]
    checkpoint_metadata: Option<CheckpointMetadata>,
    sidecar: Option<Sidecar>,
}

impl LogLine {
    fn into_action(self) -> Option<Action> {
        if let Some(a) = self.add {
            return Some(Action::Add(a));
        }
        if let Some(a) = self.remove {
            return Some(Action::Remove(a));
        }
        self.metadata
            .map(Action::Metadata)
            .or(self.protocol.map(Action::Protocol))
            .or(self.cdc.map(Action::Cdc))
            .or(self.txn.map(Action::Txn))
            .or(self.commit_info.filter(|v| !v.is_null()).map(Action::CommitInfo))
            .or(self.domain_metadata.map(Action::DomainMetadata))
            .or(self.checkpoint_metadata.map(Action::CheckpointMetadata))
            .or(self.sidecar.map(Action::Sidecar))
    }
}

/// Parses one non-empty line of a commit file.
///
/// Returns `Ok(None)` for unknown action kinds, which readers must ignore.
///
/// # Errors
/// [`Error::InvalidLog`] when the line is not a JSON object or a known action is malformed.
pub(crate) fn parse_action_line(line: &str, file: &str) -> Result<Option<Action>> {
    match serde_json::from_str::<LogLine>(line) {
        Ok(parsed) => Ok(parsed.into_action()),
        // Slow path, only on error: find which action is malformed for a precise message.
        Err(e) => match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => {
                for (key, inner) in map {
                    parse_action_value(&key, inner, file)?;
                }
                Err(Error::invalid_log(file, format!("invalid action: {e}")))
            }
            Ok(_) => Err(Error::invalid_log(file, "line is not a JSON object")),
            Err(e) => Err(Error::invalid_log(file, format!("line is not JSON: {e}"))),
        },
    }
}

/// Parses the value of one action given its key; `None` for keys that are not actions.
pub(crate) fn parse_action_value(key: &str, inner: Value, file: &str) -> Result<Option<Action>> {
    fn de<T: serde::de::DeserializeOwned>(key: &str, v: Value, file: &str) -> Result<T> {
        serde_json::from_value(v).map_err(|e| Error::invalid_log(file, format!("invalid {key} action: {e}")))
    }
    Ok(Some(match key {
        "metaData" => Action::Metadata(de(key, inner, file)?),
        "protocol" => Action::Protocol(de(key, inner, file)?),
        "add" => Action::Add(de(key, inner, file)?),
        "remove" => Action::Remove(de(key, inner, file)?),
        "cdc" => Action::Cdc(de(key, inner, file)?),
        "txn" => Action::Txn(de(key, inner, file)?),
        "commitInfo" => Action::CommitInfo(inner),
        "domainMetadata" => Action::DomainMetadata(de(key, inner, file)?),
        "checkpointMetadata" => Action::CheckpointMetadata(de(key, inner, file)?),
        "sidecar" => Action::Sidecar(de(key, inner, file)?),
        _ => return Ok(None),
    }))
}

/// Parses a whole commit file (newline-delimited JSON, final newline optional).
///
/// # Errors
/// [`Error::InvalidLog`] naming the file and the first bad line.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn parse_commit(bytes: &[u8], file: &str) -> Result<Vec<Action>> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::invalid_log(file, format!("not UTF-8: {e}")))?;
    let mut actions = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let parsed = parse_action_line(line, file).map_err(|e| match e {
            Error::InvalidLog { message, .. } => Error::invalid_log(file, format!("line {}: {message}", i + 1)),
            other => other,
        })?;
        if let Some(a) = parsed {
            actions.push(a);
        }
    }
    Ok(actions)
}

/// Deserialises a string map whose values may be JSON null (dropping those entries).
fn map_skip_null_values<'de, D>(d: D) -> std::result::Result<HashMap<String, String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let raw: Option<HashMap<String, Option<String>>> = Option::deserialize(d)?;
    Ok(raw.unwrap_or_default().into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_and_ignores_unknown() {
        let log = concat!(
            r#"{"commitInfo":{"timestamp":1,"operation":"WRITE","operationParameters":{"mode":"Append","x":null}}}"#,
            "\n",
            r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#,
            "\n",
            r#"{"someFutureAction":{"a":1}}"#,
            "\n",
            r#"{"add":{"path":"a.parquet","partitionValues":{"p":null},"size":1,"modificationTime":2,"dataChange":true,"futureField":3}}"#,
        );
        let actions = parse_commit(log.as_bytes(), "0.json").unwrap();
        assert_eq!(actions.len(), 3);
        let Action::Add(add) = &actions[2] else { panic!("not an add") };
        assert_eq!(add.partition_values.get("p"), Some(&None));
        let ci = CommitInfo::from_value(match &actions[0] {
            Action::CommitInfo(v) => v,
            _ => panic!(),
        });
        assert_eq!(ci.operation.as_deref(), Some("WRITE"));
    }

    #[test]
    fn metadata_without_id_is_invalid() {
        let line = r#"{"metaData":{"format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}"#;
        assert!(matches!(parse_action_line(line, "0.json"), Err(Error::InvalidLog { .. })));
    }

    #[test]
    fn round_trips_add_without_nulls() {
        let line =
            r#"{"add":{"path":"a","partitionValues":{"p":null},"size":1,"modificationTime":2,"dataChange":true}}"#;
        let a = parse_action_line(line, "f").unwrap().unwrap();
        let out = a.to_json_line().unwrap();
        assert!(!out.contains("stats"));
        assert!(out.contains(r#""p":null"#));
        assert_eq!(parse_action_line(&out, "f").unwrap().unwrap(), a);
    }
}
