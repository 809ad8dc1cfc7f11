//! One partition's polled records into what the buffer holds: a decoded Arrow batch, dead
//! letters, and for keyed ingestion the deletes of keys.
//!
//! The decisions made here, over plain [`SourceRecord`]s: a tombstone (no payload) deletes its
//! key; a Debezium envelope's `after` image replaces the payload (or its absence deletes); a
//! key configured as a string column must be UTF-8; payloads decode against the table schema
//! ([`TableSchema::decode`], evolving it when allowed); rows of a plain keyed payload whose
//! op field says `d`/`delete` become deletes; rows giving a generated column a value its
//! expression disagrees with are refused. Records that fail any of these are dead letters
//! with the reason.

use arrow::array::{Array, BooleanArray, RecordBatch, StringArray};

use super::schema::TableSchema;
use crate::common::record::Headers;
use crate::common::record::{DeadLetter, RawRecord};
use crate::config::{KafkaPipeline, UpsertConfig, UpsertFormat};
use crate::decode::columns;
use crate::decode::keyed::{debezium_change, keys_of_batch, KeyColumns, RecordChange};
use crate::decode::keyed_avro::tombstone_keys;
use crate::error::{Error, Result};
use crate::source::kafka::stage::SourceRecord;
use crate::storage::Table;
use crate::write::batch::Consumed;

/// Decodes one partition's records (in offset order, at least one).
///
/// # Errors
/// Storage errors while evolving the schema; Arrow errors.
pub(crate) async fn decode(
    schema: &mut TableSchema,
    table: &Table,
    cfg: &KafkaPipeline,
    partition: i32,
    records: &[SourceRecord<'_>],
) -> Result<Consumed> {
    // Apicurio's header-carried ids framed in band, so every decoder sees one wire format.
    let frames = crate::decode::header_ids::reframe(records);
    let reframed;
    let records = if frames.is_empty() {
        records
    } else {
        reframed = crate::decode::header_ids::with_frames(records, &frames);
        &reframed[..]
    };
    let key_column = cfg.columns.key.is_some();
    // Headers are only gathered when a column wants them.
    let headers_column = cfg.columns.headers.is_some();
    let mut letters = Vec::new();
    let mut deletes = Vec::new();
    // Keyed ingestion: what each record does (Debezium `after` images replace payloads; Avro
    // envelopes are unwrapped by the Avro decoder, Avro keys decoded here).
    let avro = schema.format().is_avro();
    let key_columns =
        cfg.upsert.as_ref().map(|u| KeyColumns::new(&u.key_columns, schema.snapshot.as_ref().map(|s| &s.schema)));
    let mut tombstones = match &key_columns {
        Some(k) => {
            let raws: Vec<RawRecord<'_>> = records.iter().map(|r| r.raw).collect();
            tombstone_keys(schema.keys.as_mut(), &raws, k).await
        }
        None => Default::default(),
    };
    let keyed: Vec<Option<RecordChange>> = match &cfg.upsert {
        None => Vec::new(),
        Some(u) => records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let m = &r.raw;
                let change = match (m.payload, u.format) {
                    (None, _) => tombstones
                        .remove(&i)
                        .unwrap_or_else(|| Err("tombstone without a usable key".into()))
                        .map(RecordChange::Delete),
                    (Some(_), _) if avro => Ok(RecordChange::UpsertAsIs),
                    (Some(p), UpsertFormat::Debezium) => match &key_columns {
                        Some(k) => debezium_change(p, m.key, k),
                        None => Ok(RecordChange::UpsertAsIs),
                    },
                    (Some(_), _) => Ok(RecordChange::UpsertAsIs),
                };
                match change {
                    Ok(RecordChange::Delete(k)) => {
                        deletes.push((m.offset, k));
                        None
                    }
                    Ok(c) => Some(c),
                    Err(reason) => {
                        letters.push(DeadLetter::of(m, reason));
                        None
                    }
                }
            })
            .collect(),
    };
    let mut raw: Vec<RawRecord<'_>> = Vec::with_capacity(records.len());
    let mut headers: Vec<Headers<'_>> = Vec::with_capacity(records.len());
    for (i, record) in records.iter().enumerate() {
        let mut r = record.raw;
        match keyed.get(i) {
            Some(Some(RecordChange::Upsert(after))) => r.payload = Some(after),
            Some(None) => continue, // a delete or a dead letter
            _ => {}
        }
        if key_column && r.key.is_some_and(|k| std::str::from_utf8(k).is_err()) {
            letters.push(DeadLetter::of(&r, "key is not valid UTF-8 (configured as a string column)"));
            continue;
        }
        if headers_column {
            headers.push(record.headers.clone());
        }
        raw.push(r);
    }
    let mut row_offsets = Vec::new();
    let batch = if raw.is_empty() {
        None
    } else {
        let mut decoded = schema.decode(table, cfg, &raw).await?;
        letters.append(&mut decoded.dead_letters);
        deletes.extend(decoded.deletes.drain(..).map(|(i, k)| (raw[i].offset, k)));
        if cfg.upsert.is_some() {
            row_offsets = decoded.rows_from.iter().map(|i| raw[*i].offset).collect();
        }
        match decoded.batch {
            Some(b) => {
                let b = columns::append(b, &cfg.columns, &raw, &headers, &decoded.rows_from)?;
                // (A substring test first: most tables have none, and this runs per poll.)
                let generated = match &schema.snapshot {
                    Some(s) if s.metadata.schema_string.contains(crate::delta::generated::GENERATION_EXPRESSION) => {
                        crate::delta::generated::generated_columns(&s.schema)?
                    }
                    _ => Vec::new(),
                };
                let rows: Vec<&RawRecord<'_>> = decoded.rows_from.iter().map(|i| &raw[*i]).collect();
                refuse_disagreeing(b, &generated, &rows, &mut row_offsets, &mut letters)?
            }
            None => None,
        }
    };
    let batch = match (&cfg.upsert, batch) {
        (Some(u), Some(b)) if u.op_field.is_some() => split_op_deletes(b, u, &mut row_offsets, &mut deletes)?,
        (_, b) => b,
    };
    for l in &letters {
        tracing::debug!(partition, offset = l.offset, reason = %l.reason, "dead letter");
    }
    letters.sort_by_key(|l| l.offset);
    let first = records.first().map(|r| &r.raw);
    let last = records.last().map(|r| &r.raw);
    Ok(Consumed {
        partition,
        batch,
        dead_letters: letters,
        first_offset: first.map_or(0, |r| r.offset),
        last_offset: last.map_or(0, |r| r.offset),
        bytes: records.iter().map(|r| r.raw.payload.map_or(0, <[u8]>::len) as u64).sum(),
        last_timestamp_ms: last.and_then(|r| r.timestamp_ms),
        row_offsets,
        deletes,
        proposal: schema.proposal(),
    })
}

/// Rows whose given generated-column values differ from their expressions become dead
/// letters (the data writer computes the columns of the others).
fn refuse_disagreeing(
    batch: RecordBatch,
    generated: &[crate::delta::generated::Generated],
    rows: &[&RawRecord<'_>],
    row_offsets: &mut Vec<i64>,
    letters: &mut Vec<DeadLetter>,
) -> Result<Option<RecordBatch>> {
    let bad = crate::delta::generated::disagreeing_rows(&batch, generated)?;
    if bad.is_empty() {
        return Ok(Some(batch));
    }
    let mut keep = vec![true; batch.num_rows()];
    for (row, why) in bad {
        keep[row] = false;
        if let Some(r) = rows.get(row) {
            letters.push(DeadLetter::of(r, format!("generated column: {why}")));
        }
    }
    if !row_offsets.is_empty() {
        *row_offsets = row_offsets.iter().zip(&keep).filter(|(_, k)| **k).map(|(o, _)| *o).collect();
    }
    let kept = arrow::compute::filter_record_batch(&batch, &BooleanArray::from(keep))
        .map_err(|e| Error::Internal(format!("dropping rows: {e}")))?;
    Ok((kept.num_rows() > 0).then_some(kept))
}

/// Plain keyed payloads with an op field: rows whose op is `d` or `delete` become deletes of
/// their keys and leave the batch.
fn split_op_deletes(
    batch: RecordBatch,
    u: &UpsertConfig,
    row_offsets: &mut Vec<i64>,
    deletes: &mut Vec<(i64, String)>,
) -> Result<Option<RecordBatch>> {
    let Some(field) = &u.op_field else { return Ok(Some(batch)) };
    let Some(ops) = batch.column_by_name(field).and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned()) else {
        return Ok(Some(batch));
    };
    let is_delete = |i: usize| ops.is_valid(i) && matches!(ops.value(i), "d" | "delete");
    if !(0..batch.num_rows()).any(is_delete) {
        return Ok(Some(batch));
    }
    let keys = keys_of_batch(&batch, &u.key_columns);
    let mut kept_offsets = Vec::with_capacity(row_offsets.len());
    let mut keep = Vec::with_capacity(batch.num_rows());
    for (i, key) in keys.into_iter().enumerate() {
        match (is_delete(i), key) {
            (true, Some(k)) => {
                deletes.push((row_offsets[i], k));
                keep.push(Some(false));
            }
            _ => {
                kept_offsets.push(row_offsets[i]);
                keep.push(Some(true));
            }
        }
    }
    *row_offsets = kept_offsets;
    let kept = arrow::compute::filter_record_batch(&batch, &BooleanArray::from(keep))
        .map_err(|e| Error::Internal(format!("splitting deletes: {e}")))?;
    Ok((kept.num_rows() > 0).then_some(kept))
}
