//! Avro payloads in the Confluent wire format (magic byte `0`, a 4-byte big-endian schema
//! id, the Avro binary datum), decoded straight into Arrow by `arrow-avro` with the writer
//! schema the registry has under that id.
//!
//! - Topics without a registry carry plain Avro datums of one schema given in the
//!   configuration ([`AvroDecoder::plain`]): every record is one unframed datum.
//! - Records are decoded in runs of the same schema id, one Arrow batch per run, in the
//!   writer schema's Arrow form (projection onto the table is the pipeline's business).
//! - A record that is not framed, whose id the registry does not know, whose schema is not
//!   Avro, or whose body does not decode with its schema is a dead letter naming why; the
//!   others go on. A registry that is down makes [`AvroDecoder::decode`] wait.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow_avro::reader::{Decoder, DecoderMode, ReaderBuilder};
use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};

use super::payload::{DeadLetter, RawRecord};
use crate::source::registry::{RegistryClient, SchemaType, Unavailable};

/// One run of records decoded with one writer schema.
#[derive(Debug)]
pub struct AvroRun {
    pub schema_id: u32,
    pub batch: RecordBatch,
    /// For each row, the index of its record in the input.
    pub rows_from: Vec<usize>,
}

/// What one call decoded.
#[derive(Debug, Default)]
pub struct AvroDecoded {
    pub runs: Vec<AvroRun>,
    pub dead_letters: Vec<DeadLetter>,
}

/// The schema id of a Confluent-framed payload.
pub fn confluent_id(payload: &[u8]) -> Option<u32> {
    match payload {
        [0, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// Decodes Confluent-framed Avro with writer schemas from a registry.
#[derive(Debug)]
pub struct AvroDecoder {
    /// `None` for plain datums of the one schema in `schemas[&PLAIN_ID]`.
    registry: Option<Arc<RegistryClient>>,
    /// Writer schemas by id, as `arrow-avro` takes them (or why an id cannot be used).
    schemas: HashMap<u32, Result<AvroSchema, String>>,
}

impl AvroDecoder {
    pub fn new(registry: Arc<RegistryClient>) -> AvroDecoder {
        AvroDecoder { registry: Some(registry), schemas: HashMap::new() }
    }

    /// A decoder of plain (unframed) datums of one writer schema.
    ///
    /// # Errors
    /// A schema `arrow-avro` cannot use.
    pub fn plain(schema_json: &str) -> Result<AvroDecoder, String> {
        let schema = AvroSchema::new(schema_json.to_string());
        plain_decoder(&schema, 1).map_err(|e| format!("kafka.avro_schema: {e}"))?;
        Ok(AvroDecoder { registry: None, schemas: HashMap::from([(PLAIN_ID, Ok(schema))]) })
    }

    async fn writer(&mut self, id: u32) -> Result<AvroSchema, String> {
        if let Some(s) = self.schemas.get(&id) {
            return s.clone();
        }
        let Some(registry) = &self.registry else { return Err(format!("schema id {id} is unknown")) };
        let got = match registry.schema(id).await {
            Err(Unavailable::Unknown(why)) => Err(why),
            Ok(s) if s.schema_type != SchemaType::Avro => {
                Err(format!("schema id {id} is {:?}, not Avro (see the pipeline's format)", s.schema_type))
            }
            Ok(s) => {
                let schema = AvroSchema::new(s.schema.clone());
                // Parsed once here: a schema arrow-avro cannot use is the records' reason.
                match decoder_for(id, &schema, 1) {
                    Ok(_) => Ok(schema),
                    Err(e) => Err(format!("schema id {id} cannot be decoded: {e}")),
                }
            }
        };
        self.schemas.insert(id, got.clone());
        got
    }

    /// The Arrow schema of the first usable writer schema among `raw` (a new table's schema).
    pub async fn first_arrow_schema(&mut self, raw: &[RawRecord<'_>]) -> Option<SchemaRef> {
        if self.registry.is_none() {
            let schema = self.schemas.get(&PLAIN_ID)?.clone().ok()?;
            return plain_decoder(&schema, 1).ok().map(|d| d.schema());
        }
        for r in raw {
            let Some(id) = r.payload.and_then(confluent_id) else { continue };
            if let Ok(schema) = self.writer(id).await {
                if let Ok(d) = decoder_for(id, &schema, 1) {
                    return Some(d.schema());
                }
            }
        }
        None
    }

    /// Decodes `raw`; see the module contract.
    pub async fn decode(&mut self, raw: &[RawRecord<'_>]) -> AvroDecoded {
        let mut out = AvroDecoded::default();
        let mut run: Option<(u32, Decoder, Vec<usize>)> = None;
        for (i, r) in raw.iter().enumerate() {
            let Some(payload) = r.payload else {
                out.dead_letters.push(DeadLetter::of(r, "null payload"));
                continue;
            };
            let framed = self.registry.is_some();
            let id = if framed {
                let Some(id) = confluent_id(payload) else {
                    out.dead_letters.push(DeadLetter::of(
                        r,
                        "not in the Confluent wire format (magic byte 0, then a 4-byte schema id)",
                    ));
                    continue;
                };
                id
            } else {
                PLAIN_ID
            };
            let schema = match self.writer(id).await {
                Ok(s) => s,
                Err(why) => {
                    out.dead_letters.push(DeadLetter::of(r, why));
                    continue;
                }
            };
            if run.as_ref().is_some_and(|(rid, _, _)| *rid != id) {
                finish(run.take(), raw, &mut out);
            }
            if run.is_none() {
                let built =
                    if framed { decoder_for(id, &schema, raw.len()) } else { plain_decoder(&schema, raw.len()) };
                match built {
                    Ok(d) => run = Some((id, d, Vec::new())),
                    Err(e) => {
                        out.dead_letters.push(DeadLetter::of(r, format!("schema id {id}: {e}")));
                        continue;
                    }
                }
            }
            let Some((_, decoder, rows)) = run.as_mut() else { continue };
            match decoder.decode(payload) {
                Ok(n) if n == payload.len() => rows.push(i),
                outcome => {
                    let why = match outcome {
                        Err(e) => format!("the Avro body does not match {}: {e}", writer_name(id)),
                        Ok(_) => format!("the Avro body is shorter than {} needs", writer_name(id)),
                    };
                    out.dead_letters.push(DeadLetter::of(r, why));
                    // The decoder may hold half a row: keep what it finished, start afresh.
                    finish(run.take(), raw, &mut out);
                }
            }
        }
        finish(run, raw, &mut out);
        out.dead_letters.sort_by_key(|l| l.offset);
        out
    }
}

/// The run id of plain datums (no registry).
pub const PLAIN_ID: u32 = u32::MAX;

/// How a writer schema is named in reasons: its registry id, or the configured schema.
pub fn writer_name(id: u32) -> String {
    if id == PLAIN_ID {
        "kafka.avro_schema".into()
    } else {
        format!("schema id {id}")
    }
}

fn plain_decoder(schema: &AvroSchema, batch_size: usize) -> Result<Decoder, String> {
    let mut store = SchemaStore::new();
    let fp = store.register(schema.clone()).map_err(|e| e.to_string())?;
    ReaderBuilder::new()
        .with_writer_schema_store(store)
        .with_active_fingerprint(fp)
        .with_decoder_mode(DecoderMode::UnframedDatum)
        .with_batch_size(batch_size.max(1))
        .build_decoder()
        .map_err(|e| e.to_string())
}

fn decoder_for(id: u32, schema: &AvroSchema, batch_size: usize) -> Result<Decoder, String> {
    let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
    store.set(Fingerprint::Id(id), schema.clone()).map_err(|e| e.to_string())?;
    ReaderBuilder::new()
        .with_writer_schema_store(store)
        .with_batch_size(batch_size.max(1))
        .build_decoder()
        .map_err(|e| e.to_string())
}

/// Ends a run: its rows as a batch, or (should the decoder fail to deliver them) its records
/// as dead letters: nothing is ever dropped.
fn finish(run: Option<(u32, Decoder, Vec<usize>)>, raw: &[RawRecord<'_>], out: &mut AvroDecoded) {
    let Some((schema_id, mut decoder, rows_from)) = run else { return };
    if rows_from.is_empty() {
        return;
    }
    match decoder.flush() {
        Ok(Some(batch)) if batch.num_rows() == rows_from.len() => {
            out.runs.push(AvroRun { schema_id, batch, rows_from })
        }
        other => {
            let why = match other {
                Err(e) => format!("schema id {schema_id}: {e}"),
                _ => format!("schema id {schema_id}: the decoder did not deliver every row"),
            };
            out.dead_letters.extend(rows_from.iter().map(|i| DeadLetter::of(&raw[*i], why.clone())));
        }
    }
}
