//! Avro and Protobuf topics: record values framed with a schema registry's ids (Confluent's
//! or Apicurio's wire format, as the topic's `schema_registry.api` says) into rows against the
//! table, through the decoding room's decoders.
//!
//! Contract:
//! - [`TopicDecoders`]: one per registry topic, made at start; its registry client fetches each
//!   schema id once (waiting out outages; the caller bounds the wait), its decoders are reused
//!   across requests (a decoder compiles each id it meets once).
//! - [`prepare`] [async]: each value decoded with its writer schema: Avro into Arrow runs,
//!   Protobuf into the table's columns straight from the wire format (one message type and an
//!   existing table) or else into proto3 JSON. On a keyed table a tombstone deletes its record
//!   key's row (a framed key decoded through the registry, else JSON or text, as keyed
//!   pipelines read keys); on a table without keys a null value is a bad record.
//! - [`rows`] [sync]: a new table takes the configured schema, else the first writer schema
//!   (Avro's types; Protobuf's message type); rows of writer schemas with fields the table
//!   lacks add them (nullable) when the table evolves, else are bad records naming the schema
//!   id and fields. Bad records are dead letters (offset = the record's place in the batch)
//!   for the caller to refuse or keep, as the topic says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

use super::records::Batch;
use crate::common::record::{DeadLetter, RawRecord};
use crate::config::kafka::TopicFormat;
use crate::config::server::ResolvedTable;
use crate::decode::avro::{writer_name, AvroDecoder, AvroRun};
use crate::decode::keyed::KeyColumns;
use crate::decode::keyed_avro::{tombstone_keys, KeyDecoder};
use crate::decode::projection::{extra_fields, project, Mismatch};
use crate::decode::protobuf::ProtoDecoder;
use crate::decode::registry::RegistryClient;
use crate::delta::arrow_schema::{arrow_schema_strict, delta_struct_of};
use crate::delta::evolve::merge_schema;
use crate::delta::schema::StructType;
use crate::serve::body::{json_records, BadLines, Refusal, Rows};
use crate::serve::group::KeyedChanges;

/// Idle decoder sets kept per topic.
const IDLE: usize = 8;

enum Values {
    Avro(AvroDecoder),
    Protobuf(ProtoDecoder),
}

/// A value decoder and a key decoder, used by one request at a time.
struct Set {
    values: Values,
    keys: KeyDecoder,
}

/// A registry topic's registry client and idle decoders.
pub(crate) struct TopicDecoders {
    registry: Arc<RegistryClient>,
    format: TopicFormat,
    idle: Mutex<Vec<Set>>,
}

impl TopicDecoders {
    pub(crate) fn new(registry: Arc<RegistryClient>, format: TopicFormat) -> TopicDecoders {
        TopicDecoders { registry, format, idle: Mutex::new(Vec::new()) }
    }

    fn take(&self) -> Set {
        if let Some(s) = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop() {
            return s;
        }
        match self.format {
            TopicFormat::Protobuf => Set {
                values: Values::Protobuf(ProtoDecoder::new(self.registry.clone())),
                keys: KeyDecoder::Protobuf(ProtoDecoder::new(self.registry.clone())),
            },
            _ => Set {
                values: Values::Avro(AvroDecoder::new(self.registry.clone())),
                keys: KeyDecoder::Avro(AvroDecoder::new(self.registry.clone())),
            },
        }
    }

    fn give(&self, set: Set) {
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < IDLE {
            idle.push(set);
        }
    }
}

/// What the values decoded into.
#[derive(Debug)]
enum Decoded {
    /// Avro runs; `rows_from` are places in the batch.
    Avro(Vec<AvroRun>),
    /// Rows in the table's columns (of the schema given to [`prepare`]), one per record of
    /// `places`.
    Columns(RecordBatch, Vec<usize>),
    /// Each value's proto3 JSON by place, and the first message type's columns.
    Json(Vec<(usize, Vec<u8>)>, Option<StructType>),
}

/// A batch decoded with its registry, before it meets the table.
#[derive(Debug)]
pub(crate) struct Prepared {
    decoded: Decoded,
    /// (place, reason) of records that did not decode.
    bad: Vec<(usize, String)>,
    /// Keyed tables: (place, key) of tombstones.
    deletes: Vec<(u32, String)>,
}

/// Decodes `batch`'s values (and, on a keyed table, its tombstones' keys); `columns` is the
/// table's Arrow schema when it exists (Protobuf's direct path builds those columns).
pub(crate) async fn prepare(
    decoders: &TopicDecoders,
    batch: &Batch,
    keys: &[String],
    columns: Option<SchemaRef>,
) -> Prepared {
    let raw: Vec<RawRecord<'_>> = batch
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| RawRecord {
            topic: "",
            partition: 0,
            offset: i as i64,
            timestamp_ms: (r.timestamp >= 0).then_some(r.timestamp),
            key: r.key.as_deref(),
            payload: r.value.as_deref(),
        })
        .collect();
    let mut set = decoders.take();
    let mut bad = Vec::new();
    let mut deletes = Vec::new();
    if !keys.is_empty() {
        let mut found: Vec<(usize, Result<String, String>)> =
            tombstone_keys(Some(&mut set.keys), &raw, &KeyColumns::of_arrow(keys, columns.as_deref()))
                .await
                .into_iter()
                .collect();
        found.sort_by_key(|(i, _)| *i);
        for (i, key) in found {
            match key {
                Ok(k) => deletes.push((u32::try_from(i).unwrap_or(u32::MAX), k)),
                Err(why) => bad.push((i, why)),
            }
        }
    }
    let values: Vec<RawRecord<'_>> = raw.iter().filter(|r| r.payload.is_some() || keys.is_empty()).copied().collect();
    let place = |j: usize| usize::try_from(values[j].offset).unwrap_or(usize::MAX);
    let decoded = match &mut set.values {
        Values::Avro(avro) => {
            let got = avro.decode(&values).await;
            bad.extend(
                got.dead_letters.into_iter().map(|l| (usize::try_from(l.offset).unwrap_or(usize::MAX), l.reason)),
            );
            let runs = got
                .runs
                .into_iter()
                .map(|mut r| {
                    r.rows_from = r.rows_from.iter().map(|j| place(*j)).collect();
                    r
                })
                .collect();
            Decoded::Avro(runs)
        }
        Values::Protobuf(proto) => {
            let payloads: Vec<Option<&[u8]>> = values.iter().map(|r| r.payload).collect();
            let direct = match &columns {
                Some(schema) if !payloads.is_empty() => proto.columns(&payloads, schema).await,
                _ => None,
            };
            match direct {
                Some(b) => Decoded::Columns(b, (0..values.len()).map(place).collect()),
                None => {
                    let first = if columns.is_none() { proto.first_schema(&payloads).await } else { None };
                    let mut json = Vec::with_capacity(values.len());
                    for (j, outcome) in proto.decode(&payloads).await.into_iter().enumerate() {
                        match outcome {
                            Ok((_, text)) => json.push((place(j), text)),
                            Err(why) => bad.push((place(j), why)),
                        }
                    }
                    Decoded::Json(json, first)
                }
            }
        }
    };
    decoders.give(set);
    bad.sort_by_key(|(i, _)| *i);
    Prepared { decoded, bad, deletes }
}

/// The rows of a prepared batch against `current` (the table's schema; `None`: it does not
/// exist yet), with where each row stood among the records and the keys deleted on a keyed
/// table.
///
/// # Errors
/// A [`Refusal`] when the table does not exist and may not be created, or only tombstones
/// would create it.
pub(crate) fn rows(
    prepared: &Prepared,
    batch: &Batch,
    table: &ResolvedTable,
    current: Option<&StructType>,
) -> Result<(Rows, Option<KeyedChanges>), Refusal> {
    let keyed = !table.settings.key_columns.is_empty();
    if current.is_none() && !table.settings.create {
        return Err(Refusal::NoTable(format!("table {:?} does not exist yet and create = false", table.name)));
    }
    let mut letters: Vec<DeadLetter> = prepared.bad.iter().map(|(i, why)| letter(batch, *i, why.clone())).collect();
    let (mut rows, row_places) = match &prepared.decoded {
        Decoded::Avro(runs) => avro_rows(runs, batch, table, current, &mut letters)?,
        Decoded::Columns(b, places) => match current {
            Some(s) => {
                let target = Arc::new(arrow_schema_strict(s));
                let b = project(b, &target).map_err(|m| Refusal::Bad(format!("Protobuf rows: {m:?}")))?;
                let rows = Rows { batches: vec![b], schema: Arc::new(s.clone()), bad: Vec::new(), count: 0 };
                (rows, places.clone())
            }
            None => return Err(Refusal::Bad("Protobuf rows built for a table that is gone".into())),
        },
        Decoded::Json(values, first) => {
            let lines: Vec<(usize, &[u8])> = values.iter().map(|(i, v)| (*i, v.as_slice())).collect();
            let creating_with = match (current, &table.schema, first) {
                (None, None, Some(first)) => Some(ResolvedTable { schema: Some(first.clone()), ..table.clone() }),
                _ => None,
            };
            let rows = match (lines.is_empty(), current) {
                (true, Some(s)) => Rows { batches: Vec::new(), schema: Arc::new(s.clone()), bad: Vec::new(), count: 0 },
                (true, None) => {
                    letters.sort_by_key(|l| l.offset);
                    return Err(Refusal::Bad(only_bad(&letters, &table.name)));
                }
                (false, _) => {
                    json_records(&lines, creating_with.as_ref().unwrap_or(table), current, BadLines::DeadLetter)?
                }
            };
            let refused: std::collections::HashSet<i64> = rows.bad.iter().map(|l| l.offset).collect();
            let places = values.iter().map(|(i, _)| *i).filter(|i| !refused.contains(&(*i as i64))).collect();
            (rows, places)
        }
    };
    letters.append(&mut rows.bad);
    for l in &mut letters {
        if let Some(r) = usize::try_from(l.offset).ok().and_then(|i| batch.records.get(i)) {
            l.payload = r.value.as_ref().map(|v| v.to_vec());
        }
    }
    letters.sort_by_key(|l| l.offset);
    let decoded: usize = rows.batches.iter().map(RecordBatch::num_rows).sum();
    if decoded != row_places.len() {
        return Err(Refusal::Bad(format!("{decoded} rows decoded from {} records", row_places.len())));
    }
    rows.count = (decoded + prepared.deletes.len()) as u64;
    rows.bad = letters;
    let changes = keyed.then(|| KeyedChanges {
        row_records: row_places.iter().map(|i| u32::try_from(*i).unwrap_or(u32::MAX)).collect(),
        deletes: prepared.deletes.clone(),
    });
    Ok((rows, changes))
}

/// Avro runs onto the table: created from the configured or the first writer schema, evolved
/// by writer fields it lacks when it may be; runs that do not fit are bad records.
fn avro_rows(
    runs: &[AvroRun],
    batch: &Batch,
    table: &ResolvedTable,
    current: Option<&StructType>,
    letters: &mut Vec<DeadLetter>,
) -> Result<(Rows, Vec<usize>), Refusal> {
    let mut schema = match (current, &table.schema, runs.first()) {
        (Some(s), _, _) | (None, Some(s), _) => s.clone(),
        (None, None, Some(first)) => delta_struct_of(&first.batch.schema())
            .map_err(|e| Refusal::Bad(format!("{}: {e}", writer_name(first.schema_id))))?,
        (None, None, None) => {
            letters.sort_by_key(|l| l.offset);
            return Err(Refusal::Bad(only_bad(letters, &table.name)));
        }
    };
    let mut kept: Vec<&AvroRun> = Vec::new();
    for run in runs {
        let target = Arc::new(arrow_schema_strict(&schema));
        let why = match project(&run.batch, &target) {
            Ok(_) => {
                kept.push(run);
                continue;
            }
            Err(Mismatch::Extra(fields)) if table.settings.evolve_schema => {
                let incoming = extra_fields(&run.batch, &fields).map_err(|e| Refusal::Bad(e.to_string()))?;
                match merge_schema(&schema, &incoming) {
                    Ok(Some(merged)) => {
                        schema = merged;
                        kept.push(run);
                        continue;
                    }
                    Ok(None) => format!("{}: fields {fields:?} do not fit the table", writer_name(run.schema_id)),
                    Err(e) => format!("{}: {e}", writer_name(run.schema_id)),
                }
            }
            Err(Mismatch::Extra(f)) => format!(
                "{}: fields {f:?} are not in the table (set evolve_schema = true to add them)",
                writer_name(run.schema_id)
            ),
            Err(Mismatch::Refused(r)) => format!("{}: {r}", writer_name(run.schema_id)),
        };
        letters.extend(run.rows_from.iter().map(|i| letter(batch, *i, why.clone())));
    }
    let target = Arc::new(arrow_schema_strict(&schema));
    let mut batches = Vec::with_capacity(kept.len());
    let mut places = Vec::new();
    for run in kept {
        match project(&run.batch, &target) {
            Ok(b) => {
                batches.push(b);
                places.extend(run.rows_from.iter().copied());
            }
            Err(m) => {
                let why = format!("{}: {m:?}", writer_name(run.schema_id));
                letters.extend(run.rows_from.iter().map(|i| letter(batch, *i, why.clone())));
            }
        }
    }
    Ok((Rows { batches, schema: Arc::new(schema), bad: Vec::new(), count: 0 }, places))
}

/// Why a batch with nothing to write cannot create its table.
fn only_bad(letters: &[DeadLetter], table: &str) -> String {
    match letters.first() {
        Some(l) => format!("record {}: {}", l.offset, l.reason),
        None => format!("only tombstones for table {table:?}, which does not exist yet"),
    }
}

fn letter(batch: &Batch, i: usize, reason: String) -> DeadLetter {
    let r = batch.records.get(i);
    DeadLetter {
        reason,
        topic: String::new(),
        partition: 0,
        offset: i as i64,
        timestamp_ms: r.map(|r| r.timestamp).filter(|t| *t >= 0),
        key: r.and_then(|r| r.key.as_ref().map(|k| k.to_vec())),
        payload: r.and_then(|r| r.value.as_ref().map(|v| v.to_vec())),
    }
}

/// The registry topics' decoders, by topic name.
pub(crate) type ByTopic = HashMap<String, TopicDecoders>;
