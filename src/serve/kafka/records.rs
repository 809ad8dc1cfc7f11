//! [sync] One partition's record batches of a Produce request into sequence ranges and rows.
//!
//! Contract:
//! - Batches are record batch v2 (the only format idempotence exists in), CRC checked by the
//!   codec, any of the four codecs; a batch that claims more than [`MAX_BATCH_RECORDS`]
//!   records, or a negative count, is refused before it is decoded (a hostile count must not
//!   size an allocation). Transactional and control batches are refused: transactions are not
//!   offered.
//! - An idempotent batch (producer id ≥ 0) becomes a [`Sequenced`] range `e << 32 | b ..=
//!   e << 32 | (b + n - 1)` for producer id, partition and topic; its sequence must not wrap
//!   past `i32::MAX` (the producer is told to start a new epoch).
//! - JSON topics: each value is one JSON object decoded against the table as push ingest
//!   decodes a line (a record's number is its place in the batch, from 0). A null value is a
//!   bad record. Bytes topics: `key`, `value` and `timestamp` as they came.

use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryArray, RecordBatch, TimestampMicrosecondArray};
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::records::{Record, RecordBatchDecoder};

use crate::common::record::DeadLetter;
use crate::config::kafka::TopicFormat;
use crate::config::server::ResolvedTable;
use crate::decode::keyed::KeyColumns;
use crate::delta::app_id::TxnAppId;
use crate::delta::arrow_schema::arrow_schema_strict;
use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::serve::body::{json_records, BadLines, Refusal, Rows};
use crate::serve::group::KeyedChanges;
use crate::serve::sequence::Sequenced;

/// Records one batch may claim.
pub(crate) const MAX_BATCH_RECORDS: i32 = 1_000_000;

/// One decoded batch.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Batch {
    pub producer: Option<Sequenced>,
    pub epoch: i16,
    pub records: Vec<Record>,
    /// Bytes of the batch as sent.
    pub bytes: u64,
}

/// Why a partition's data is refused: the error code and a message for the client.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) type Refused = (ResponseError, String);

/// Splits a partition's records into batches, each inflating to at most `limit` bytes.
///
/// # Errors
/// CORRUPT_MESSAGE for bytes that are not record batches v2, MESSAGE_TOO_LARGE for records
/// inflating past `limit`, INVALID_RECORD for what the contract refuses.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn batches(topic: &str, partition: i32, records: &Bytes, limit: usize) -> Result<Vec<Batch>, Refused> {
    let corrupt = |e: &dyn std::fmt::Display| (ResponseError::CorruptMessage, format!("record batch: {e}"));
    let infos = RecordBatchDecoder::decode_batch_info(&mut records.clone()).map_err(|e| corrupt(&e))?;
    if let Some(i) = infos.iter().find(|i| !(0..=MAX_BATCH_RECORDS).contains(&i.record_count)) {
        let why = format!("a batch of {} records (at most {MAX_BATCH_RECORDS})", i.record_count);
        return Err((ResponseError::InvalidRecord, why));
    }
    if infos.iter().any(|i| i.transactional || i.control) {
        let why = "transactional batches are refused: deltabus takes idempotent producers, not transactions";
        return Err((ResponseError::InvalidRecord, why.into()));
    }
    let mut rest = records.clone();
    let mut out = Vec::with_capacity(infos.len());
    for info in &infos {
        let before = rest.len();
        // kafka-protocol's decompressor callback returns `anyhow::Result`: the one place the
        // crate meets `anyhow`, and the typed error is taken back out at once.
        let inflate = |c: &mut Bytes, codec| super::inflate::inflate(c, codec, limit).map_err(anyhow::Error::from);
        let set = RecordBatchDecoder::decode_with_custom_compression(&mut rest, Some(&inflate)).map_err(|e| {
            match e.downcast_ref::<super::inflate::InflateError>() {
                Some(past @ super::inflate::InflateError::Past(_)) => {
                    (ResponseError::MessageTooLarge, format!("record batch: {past}"))
                }
                _ => corrupt(&e),
            }
        })?;
        let bytes = (before - rest.len()) as u64;
        let producer = if info.producer_id >= 0 {
            if info.producer_epoch < 0 || info.base_sequence < 0 {
                return Err((ResponseError::InvalidRecord, "an idempotent batch without epoch or sequence".into()));
            }
            let last = i64::from(info.base_sequence) + i64::from(info.record_count.max(1)) - 1;
            if last > i64::from(i32::MAX) {
                let why = "the batch's sequence passes 2^31: start a new epoch".to_string();
                return Err((ResponseError::OutOfOrderSequenceNumber, why));
            }
            let epoch = i64::from(info.producer_epoch) << 32;
            let app = TxnAppId::KafkaProducer { producer_id: info.producer_id, topic: topic.to_string(), partition };
            let base = i64::from(info.base_sequence);
            Some(Sequenced::range(app, epoch | base, epoch | last, base == 0))
        } else {
            None
        };
        out.push(Batch { producer, epoch: info.producer_epoch, records: set.records, bytes });
    }
    if !rest.is_empty() || out.len() != infos.len() {
        let why = format!("{} bytes after {} batches (of {} with a v2 header)", rest.len(), out.len(), infos.len());
        return Err(corrupt(&why));
    }
    Ok(out)
}

/// The rows of a batch for its topic's format; on a keyed table also where each row stood
/// among the batch's records and the keys its tombstones delete.
///
/// # Errors
/// A [`Refusal`] naming the record (JSON) or why the table cannot take bytes.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn rows(
    format: TopicFormat,
    batch: &Batch,
    table: &ResolvedTable,
    current: Option<&StructType>,
    bad: BadLines,
) -> Result<(Rows, Option<KeyedChanges>), Refusal> {
    let keys = &table.settings.key_columns;
    match format {
        TopicFormat::Json if keys.is_empty() => {
            let values: Vec<(usize, &[u8])> =
                batch.records.iter().enumerate().map(|(i, r)| (i, r.value.as_deref().unwrap_or(b"null"))).collect();
            Ok((json_records(&values, table, current, bad)?, None))
        }
        TopicFormat::Json => keyed_json(batch, table, current, bad, keys),
        TopicFormat::Bytes => Ok((bytes_rows(batch, table, current)?, None)),
        // Decoded with their registry first (`registered`).
        TopicFormat::Avro | TopicFormat::Protobuf => {
            Err(Refusal::Bad("registry topics are decoded with their registry first".into()))
        }
    }
}

/// A keyed table's batch: records with a value upsert their row; a tombstone (null value)
/// deletes the row of its record key (a JSON object with the key columns, or for one key
/// column a JSON scalar or plain text), and one whose key names no key is a bad record.
fn keyed_json(
    batch: &Batch,
    table: &ResolvedTable,
    current: Option<&StructType>,
    bad: BadLines,
    keys: &[String],
) -> Result<(Rows, Option<KeyedChanges>), Refusal> {
    let mut values = Vec::new();
    let mut deletes = Vec::new();
    let mut unreadable = Vec::new();
    let columns = KeyColumns::new(keys, current);
    for (i, r) in batch.records.iter().enumerate() {
        match (&r.value, &r.key) {
            (Some(v), _) => values.push((i, v.as_ref())),
            (None, Some(k)) => match columns.of_record_key(k) {
                Ok(key) => deletes.push((index(i), key)),
                Err(why) => unreadable.push((i, why)),
            },
            (None, None) => unreadable.push((i, "no record key".to_string())),
        }
    }
    let why = |detail: &str| format!("a tombstone (null value) whose record key names no key of {keys:?}: {detail}");
    if let (BadLines::Refuse, Some((i, detail))) = (bad, unreadable.first()) {
        return Err(Refusal::Bad(format!("record {i}: {}", why(detail))));
    }
    let mut rows = match current {
        None if values.is_empty() => {
            return Err(Refusal::Bad(format!("only tombstones for table {:?}, which does not exist yet", table.name)))
        }
        Some(s) if values.is_empty() => {
            Rows { batches: Vec::new(), schema: Arc::new(s.clone()), bad: Vec::new(), count: 0 }
        }
        _ => json_records(&values, table, current, bad)?,
    };
    let refused: std::collections::HashSet<i64> = rows.bad.iter().map(|l| l.offset).collect();
    let row_records: Vec<u32> =
        values.iter().map(|(i, _)| *i).filter(|i| !refused.contains(&(*i as i64))).map(index).collect();
    let decoded: usize = rows.batches.iter().map(RecordBatch::num_rows).sum();
    if decoded != row_records.len() {
        return Err(Refusal::Bad(format!("{decoded} rows decoded from {} records", row_records.len())));
    }
    for (i, detail) in unreadable {
        let r = &batch.records[i];
        rows.bad.push(DeadLetter {
            reason: why(&detail),
            topic: table.name.clone(),
            partition: 0,
            offset: i as i64,
            timestamp_ms: (r.timestamp >= 0).then_some(r.timestamp),
            key: r.key.as_ref().map(|k| k.to_vec()),
            payload: None,
        });
    }
    rows.count += deletes.len() as u64;
    Ok((rows, Some(KeyedChanges { row_records, deletes })))
}

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The schema of a bytes topic's table.
pub(crate) fn bytes_schema() -> StructType {
    let field = |name: &str, t: PrimitiveType| StructField::new(name, DataType::Primitive(t), true);
    StructType::new(vec![
        field("key", PrimitiveType::Binary),
        field("value", PrimitiveType::Binary),
        field("timestamp", PrimitiveType::Timestamp),
    ])
}

fn bytes_rows(batch: &Batch, table: &ResolvedTable, current: Option<&StructType>) -> Result<Rows, Refusal> {
    let schema = bytes_schema();
    match current {
        Some(s) if *s != schema => {
            return Err(Refusal::Bad(format!(
            "a bytes topic writes a table of columns key binary, value binary, timestamp timestamp; {:?} has others",
            table.name
        )))
        }
        None if !table.settings.create => {
            return Err(Refusal::NoTable(format!("table {:?} does not exist yet and create = false", table.name)))
        }
        _ => {}
    }
    let keys = BinaryArray::from_iter(batch.records.iter().map(|r| r.key.as_deref()));
    let values = BinaryArray::from_iter(batch.records.iter().map(|r| r.value.as_deref()));
    let times = TimestampMicrosecondArray::from_iter(
        batch.records.iter().map(|r| (r.timestamp >= 0).then(|| r.timestamp.saturating_mul(1000))),
    )
    .with_timezone("UTC");
    let columns: Vec<ArrayRef> = vec![Arc::new(keys), Arc::new(values), Arc::new(times)];
    let arrow = Arc::new(arrow_schema_strict(&schema));
    let rows = RecordBatch::try_new(arrow, columns).map_err(|e| Refusal::Bad(format!("bytes rows: {e}")))?;
    let count = rows.num_rows() as u64;
    Ok(Rows { batches: vec![rows], schema: Arc::new(schema), bad: Vec::<DeadLetter>::new(), count })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

    fn record(pid: i64, epoch: i16, seq: i32, value: &str) -> Record {
        Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i64::from(seq),
            sequence: seq,
            timestamp: 1_700_000_000_000,
            key: Some(Bytes::from_static("ключ".as_bytes())),
            value: Some(Bytes::from(value.to_string())),
            headers: Default::default(),
        }
    }

    fn encode(records: &[Record], compression: Compression) -> Bytes {
        let mut buf = bytes::BytesMut::new();
        RecordBatchEncoder::encode(&mut buf, records, &RecordEncodeOptions { version: 2, compression }).unwrap();
        buf.freeze()
    }

    #[test]
    fn idempotent_batches_become_ranges_in_every_codec() {
        for c in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let recs: Vec<Record> = (5..8).map(|s| record(4096, 2, s, &format!("{{\"n\":{s}}}"))).collect();
            let got = batches("orders", 3, &encode(&recs, c), 1 << 20).unwrap();
            assert_eq!(got.len(), 1);
            let p = got[0].producer.as_ref().unwrap();
            assert_eq!((p.first, p.last, p.restarts), (2 << 32 | 5, 2 << 32 | 7, false));
            assert_eq!(p.key, "deltabus-kafka:4096:3:orders");
            assert_eq!(got[0].records.len(), 3);
        }
    }

    #[test]
    fn damaged_and_hostile_batches_are_refused() {
        let good = encode(&[record(-1, -1, -1, "{}")], Compression::None);
        let mut flipped = good.to_vec();
        let last = flipped.len() - 1;
        flipped[last] ^= 0xff;
        assert_eq!(batches("t", 0, &Bytes::from(flipped), 1 << 20).unwrap_err().0, ResponseError::CorruptMessage);
        assert_eq!(
            batches("t", 0, &good.slice(..good.len() - 3), 1 << 20).unwrap_err().0,
            ResponseError::CorruptMessage
        );
        // A record count far past the bytes (offset 57 in the v2 header).
        let mut huge = good.to_vec();
        huge[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(batches("t", 0, &Bytes::from(huge), 1 << 20).is_err());
        let mut tx = record(7, 0, 0, "{}");
        tx.transactional = true;
        assert_eq!(
            batches("t", 0, &encode(&[tx], Compression::None), 1 << 20).unwrap_err().0,
            ResponseError::InvalidRecord
        );
    }

    #[test]
    fn keyed_tables_take_tombstones_as_deletes_in_record_order() {
        use crate::config::server::ServerTable;
        let keyed = |keys: &[&str]| ResolvedTable {
            name: "t".into(),
            settings: ServerTable {
                create: true,
                key_columns: keys.iter().map(|k| k.to_string()).collect(),
                ..ServerTable::default()
            },
            schema: None,
            variants: Default::default(),
            tokens: Vec::new(),
        };
        let with_key = |key: Option<&str>, value: Option<&str>| {
            let mut r = record(7, 0, 0, "{}");
            r.key = key.map(|k| Bytes::from(k.to_string()));
            r.value = value.map(|v| Bytes::from(v.to_string()));
            r
        };
        let batch = Batch {
            producer: None,
            epoch: 0,
            records: vec![
                with_key(Some("1"), Some(r#"{"id":1,"v":"ä"}"#)),
                with_key(Some("2"), None),
                with_key(Some(r#"{"id":3}"#), None),
                with_key(None, None),
                with_key(Some("4"), Some(r#"{"id":4,"v":"not json"#)),
                with_key(Some("5"), Some(r#"{"id":5,"v":"b"}"#)),
            ],
            bytes: 0,
        };
        let (got, changes) = rows(TopicFormat::Json, &batch, &keyed(&["id"]), None, BadLines::DeadLetter).unwrap();
        let changes = changes.unwrap();
        assert_eq!(changes.row_records, vec![0, 5], "rows keep their records' places");
        assert_eq!(changes.deletes, vec![(1, "[2]".to_string()), (2, "[3]".to_string())]);
        let bad: Vec<i64> = got.bad.iter().map(|l| l.offset).collect();
        assert_eq!(bad, vec![4, 3], "a bad value and a tombstone without a key are bad records");
        assert_eq!(got.batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 2);
        assert_eq!(got.count, 4, "two upserts and two deletes");
        // Refused as a whole when bad records are refused; only tombstones need a table.
        let e = rows_refused(&batch, &keyed(&["id"]));
        assert!(e.contains("record 3"), "{e}");
        let only = Batch { records: vec![with_key(Some("2"), None)], ..batch };
        assert!(rows(TopicFormat::Json, &only, &keyed(&["id"]), None, BadLines::DeadLetter).is_err());
        let table = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        let (got, changes) = rows(TopicFormat::Json, &only, &keyed(&["id"]), Some(&table), BadLines::Refuse).unwrap();
        assert!(got.batches.is_empty());
        assert_eq!(changes.unwrap().deletes, vec![(0, "[2]".to_string())]);
    }

    fn rows_refused(batch: &Batch, table: &ResolvedTable) -> String {
        match rows(TopicFormat::Json, batch, table, None, BadLines::Refuse) {
            Err(Refusal::Bad(why)) => why,
            other => panic!("{other:?}"),
        }
    }
}
