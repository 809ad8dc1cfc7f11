//! Classic (V1) checkpoint content with Spark's Parquet schema (digest §6).
//!
//! The snapshot's reconciled actions are serialised as JSON lines and decoded by `arrow-json`
//! against the checkpoint schema, so field names and nesting come from one declaration and
//! the same serde definitions as commit files. Writing the Parquet bytes is the storage
//! shell's job.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};

use super::actions::{Action, Remove};
use super::snapshot::Snapshot;
use crate::error::{Error, Result};

fn string_map() -> DataType {
    let entries =
        Fields::from(vec![Field::new("key", DataType::Utf8, false), Field::new("value", DataType::Utf8, true)]);
    DataType::Map(Arc::new(Field::new("key_value", DataType::Struct(entries), false)), false)
}

fn string_list() -> DataType {
    DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
}

fn f(name: &str, t: DataType) -> Field {
    Field::new(name, t, true)
}

fn st(fields: Vec<Field>) -> DataType {
    DataType::Struct(Fields::from(fields))
}

fn dv_struct() -> DataType {
    st(vec![
        f("storageType", DataType::Utf8),
        f("pathOrInlineDv", DataType::Utf8),
        f("offset", DataType::Int32),
        f("sizeInBytes", DataType::Int32),
        f("cardinality", DataType::Int64),
        f("maxRowIndex", DataType::Int64),
    ])
}

/// The checkpoint schema Spark writes for V1 checkpoints (all fields nullable).
pub(crate) fn checkpoint_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        f("txn", st(vec![f("appId", Utf8), f("version", Int64), f("lastUpdated", Int64)])),
        f(
            "add",
            st(vec![
                f("path", Utf8),
                f("partitionValues", string_map()),
                f("size", Int64),
                f("modificationTime", Int64),
                f("dataChange", Boolean),
                f("tags", string_map()),
                f("deletionVector", dv_struct()),
                f("baseRowId", Int64),
                f("defaultRowCommitVersion", Int64),
                f("clusteringProvider", Utf8),
                f("stats", Utf8),
            ]),
        ),
        f(
            "remove",
            st(vec![
                f("path", Utf8),
                f("deletionTimestamp", Int64),
                f("dataChange", Boolean),
                f("extendedFileMetadata", Boolean),
                f("partitionValues", string_map()),
                f("size", Int64),
                f("deletionVector", dv_struct()),
                f("baseRowId", Int64),
                f("defaultRowCommitVersion", Int64),
            ]),
        ),
        f(
            "metaData",
            st(vec![
                f("id", Utf8),
                f("name", Utf8),
                f("description", Utf8),
                f("format", st(vec![f("provider", Utf8), f("options", string_map())])),
                f("schemaString", Utf8),
                f("partitionColumns", string_list()),
                f("configuration", string_map()),
                f("createdTime", Int64),
            ]),
        ),
        f(
            "protocol",
            st(vec![
                f("minReaderVersion", Int32),
                f("minWriterVersion", Int32),
                f("readerFeatures", string_list()),
                f("writerFeatures", string_list()),
            ]),
        ),
        f("domainMetadata", st(vec![f("domain", Utf8), f("configuration", Utf8), f("removed", Boolean)])),
    ]))
}

/// The actions a checkpoint of `snapshot` holds: protocol, metadata, txns, domains, live adds
/// (`dataChange=false`) and unexpired tombstones (without stats or tags).
pub(crate) fn checkpoint_actions(snapshot: &Snapshot) -> Vec<Action> {
    let mut actions = vec![Action::Protocol(snapshot.protocol.clone()), Action::Metadata(snapshot.metadata.clone())];
    // Every txn, expired ones included: deltabus's streams read their positions from them
    // whatever the retention (the protocol allows, not requires, dropping expired ones).
    let mut txns: Vec<_> = snapshot.state().txns.values().cloned().collect();
    txns.sort_by(|a, b| a.app_id.cmp(&b.app_id));
    actions.extend(txns.into_iter().map(Action::Txn));
    let mut domains: Vec<_> = snapshot.domains().values().cloned().collect();
    domains.sort_by(|a, b| a.domain.cmp(&b.domain));
    actions.extend(domains.into_iter().map(Action::DomainMetadata));
    actions.extend(snapshot.files().into_iter().map(|a| {
        let mut a = a.clone();
        a.data_change = false;
        Action::Add(a)
    }));
    actions.extend(
        snapshot
            .tombstones()
            .into_iter()
            .map(|r| Action::Remove(Remove { stats: None, tags: None, data_change: false, ..r.clone() })),
    );
    actions
}

/// Encodes checkpoint actions as Arrow batches of at most `batch_rows` rows.
///
/// # Errors
/// [`Error::Internal`] if an action does not fit the schema, which would be a bug.
pub(crate) fn checkpoint_batches(actions: &[Action], batch_rows: usize) -> Result<Vec<RecordBatch>> {
    let schema = checkpoint_schema();
    // The decoder reserves its tape for a whole batch up front (tens of bytes per field of the
    // flattened schema per row: ~19 MiB at 16 Ki rows), so a small table asks for its size.
    let batch_rows = batch_rows.min(actions.len()).max(1);
    let mut decoder = arrow_json::ReaderBuilder::new(schema)
        .with_batch_size(batch_rows)
        .build_decoder()
        .map_err(|e| Error::Internal(format!("checkpoint decoder: {e}")))?;
    let mut batches = Vec::new();
    for chunk in actions.chunks(batch_rows) {
        let mut text = String::new();
        for a in chunk {
            text.push_str(&a.to_json_line()?);
            text.push('\n');
        }
        let mut buf = text.as_bytes();
        while !buf.is_empty() {
            let n = decoder.decode(buf).map_err(|e| Error::Internal(format!("checkpoint row: {e}")))?;
            if n == 0 {
                break;
            }
            buf = &buf[n..];
        }
        if let Some(b) = decoder.flush().map_err(|e| Error::Internal(format!("checkpoint batch: {e}")))? {
            batches.push(b);
        }
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::actions::parse_commit;
    use crate::delta::checkpoint_read::batch_to_actions;
    use crate::delta::replay::TableState;

    #[test]
    fn round_trips_through_the_reader() {
        let log = [
            r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors","domainMetadata"]}}"#,
            r#"{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":["p"],"configuration":{"delta.enableDeletionVectors":"true"},"createdTime":1}}"#,
            r#"{"txn":{"appId":"app","version":42,"lastUpdated":7}}"#,
            r#"{"domainMetadata":{"domain":"d","configuration":"{\"x\":1}","removed":false}}"#,
            r#"{"add":{"path":"p=a/f1","partitionValues":{"p":"a"},"size":10,"modificationTime":5,"dataChange":true,"stats":"{\"numRecords\":3}","tags":{"k":"v"},"deletionVector":{"storageType":"u","pathOrInlineDv":"vBn[lx{q8@P<9BNH/isA","offset":1,"sizeInBytes":36,"cardinality":2}}}"#,
            r#"{"add":{"path":"p=__HIVE_DEFAULT_PARTITION__/f2","partitionValues":{"p":null},"size":11,"modificationTime":6,"dataChange":true}}"#,
        ]
        .join("\n");
        let mut state = TableState::default();
        state.apply_commit(0, &parse_commit(log.as_bytes(), "0").unwrap(), "0").unwrap();
        let snap = Snapshot::new(state, None, 0).unwrap();
        let actions = checkpoint_actions(&snap);
        let batches = checkpoint_batches(&actions, 2).unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), actions.len());
        let mut back = Vec::new();
        for b in &batches {
            back.extend(batch_to_actions(b, "cp").unwrap());
        }
        let mut restored = TableState::default();
        restored.apply_checkpoint(0, back, "cp").unwrap();
        let snap2 = Snapshot::new(restored, Some(0), 0).unwrap();
        assert_eq!(snap2.protocol, snap.protocol);
        assert_eq!(snap2.metadata, snap.metadata);
        assert_eq!(snap2.txn_version("app"), Some(42));
        assert_eq!(snap2.domains().len(), 1);
        let (a, b): (Vec<_>, Vec<_>) = (snap.files(), snap2.files());
        assert_eq!(a, b);
    }
}
