//! Avro payloads in the Confluent wire format (magic byte `0`, a 4-byte big-endian schema
//! id, the Avro binary datum) or Apicurio's (an 8-byte global id), decoded straight into Arrow
//! by `arrow-avro` with the writer schema the registry has under that id.
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
use arrow_avro::reader::{Decoder, DecoderMode, ReaderBuilder};
use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};

use crate::common::record::{DeadLetter, RawRecord};
use crate::decode::registry::{Framing, RegistryClient, SchemaType, Unavailable};

/// One run of records decoded with one writer schema.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct AvroRun {
    pub schema_id: u64,
    pub batch: RecordBatch,
    /// For each row, the index of its record in the input.
    pub rows_from: Vec<usize>,
}

/// What one call decoded.
#[derive(Debug, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct AvroDecoded {
    pub runs: Vec<AvroRun>,
    pub dead_letters: Vec<DeadLetter>,
}

/// The Arrow schema rows of a registered Avro schema decode into.
///
/// # Errors
/// A schema that is not JSON or that `arrow-avro` cannot use.
pub(crate) fn arrow_schema_of(
    schema: &crate::decode::registry::RegisteredSchema,
) -> Result<arrow::datatypes::SchemaRef, String> {
    let text = super::avro_refs::inline_references(schema)?;
    // (Any id serves to build a decoder whose schema is wanted: 8 bytes fit every id.)
    let decoded = decoder_for(schema.id, Framing::Apicurio, &AvroSchema::new(text), 1)?.schema();
    // As the rows will come: uuids as text.
    let fields: Vec<arrow::datatypes::Field> = decoded
        .fields()
        .iter()
        .map(|f| {
            if is_uuid(f) {
                arrow::datatypes::Field::new(f.name(), arrow::datatypes::DataType::Utf8, f.is_nullable())
            } else {
                f.as_ref().clone()
            }
        })
        .collect();
    Ok(Arc::new(arrow::datatypes::Schema::new(fields)))
}

/// Decodes Confluent-framed Avro with writer schemas from a registry.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct AvroDecoder {
    /// `None` for plain datums of the one schema in `schemas[&PLAIN_ID]`.
    registry: Option<Arc<RegistryClient>>,
    /// Writer schemas by id, as `arrow-avro` takes them (or why an id cannot be used).
    schemas: HashMap<u64, Result<AvroSchema, String>>,
}

impl AvroDecoder {
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(registry: Arc<RegistryClient>) -> AvroDecoder {
        AvroDecoder { registry: Some(registry), schemas: HashMap::new() }
    }

    /// A decoder of plain (unframed) datums of one writer schema.
    ///
    /// # Errors
    /// A schema `arrow-avro` cannot use.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn plain(schema_json: &str) -> Result<AvroDecoder, String> {
        let schema = AvroSchema::new(schema_json.to_string());
        plain_decoder(&schema, 1).map_err(|e| format!("kafka.avro_schema: {e}"))?;
        Ok(AvroDecoder { registry: None, schemas: HashMap::from([(PLAIN_ID, Ok(schema))]) })
    }

    async fn writer(&mut self, id: u64) -> Result<AvroSchema, String> {
        if let Some(s) = self.schemas.get(&id) {
            return s.clone();
        }
        let Some(registry) = &self.registry else { return Err(format!("schema id {id} is unknown")) };
        let got = match registry.schema(id).await {
            Err(Unavailable::Unknown(why)) => Err(why),
            Ok(s) if s.schema_type != SchemaType::Avro => {
                Err(format!("schema id {id} is {:?}, not Avro (see the pipeline's format)", s.schema_type))
            }
            Ok(s) => match super::avro_refs::inline_references(&s) {
                Err(e) => Err(format!("schema id {id}: {e}")),
                Ok(text) => {
                    let schema = AvroSchema::new(text);
                    // Parsed once here: a schema arrow-avro cannot use is the records' reason.
                    match decoder_for(id, registry.framing(), &schema, 1) {
                        Ok(_) => Ok(schema),
                        Err(e) => Err(format!("schema id {id} cannot be decoded: {e}")),
                    }
                }
            },
        };
        self.schemas.insert(id, got.clone());
        got
    }

    /// Decodes `raw`; see the module contract.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn decode(&mut self, raw: &[RawRecord<'_>]) -> AvroDecoded {
        let mut out = AvroDecoded::default();
        // The current run: its schema id, decoder, rows (input indexes) and writer schema.
        let mut run: Option<Run> = None;
        for (i, r) in raw.iter().enumerate() {
            let Some(payload) = r.payload else {
                out.dead_letters.push(DeadLetter::of(r, "null payload"));
                continue;
            };
            let framing = self.registry.as_ref().map(|r| r.framing());
            let framed = framing.is_some();
            let id = match framing {
                Some(f) => {
                    let Some((id, _)) = f.split(payload) else {
                        out.dead_letters.push(DeadLetter::of(r, f.unframed()));
                        continue;
                    };
                    id
                }
                None => PLAIN_ID,
            };
            let framing = framing.unwrap_or(Framing::Confluent);
            // The writer schema is looked up when a run starts, not per record.
            if run.as_ref().is_none_or(|(rid, ..)| *rid != id) {
                let schema = match self.writer(id).await {
                    Ok(s) => s,
                    Err(why) => {
                        out.dead_letters.push(DeadLetter::of(r, why));
                        continue;
                    }
                };
                finish(run.take(), raw, &mut out);
                let built = if framed {
                    decoder_for(id, framing, &schema, raw.len())
                } else {
                    plain_decoder(&schema, raw.len())
                };
                match built {
                    Ok(d) => run = Some((id, d, Vec::new(), schema)),
                    Err(e) => {
                        out.dead_letters.push(DeadLetter::of(r, format!("{}: {e}", writer_name(id))));
                        continue;
                    }
                }
            }
            let Some((_, decoder, rows, schema)) = run.as_mut() else { continue };
            match decoder.decode(payload) {
                Ok(n) if n == payload.len() => rows.push(i),
                outcome => {
                    let why = match outcome {
                        Err(e) => format!("the Avro body does not match {}: {e}", writer_name(id)),
                        Ok(_) => format!("the Avro body is shorter than {} needs", writer_name(id)),
                    };
                    out.dead_letters.push(DeadLetter::of(r, why));
                    // The decoder may hold half a row of the bad record: rebuild it from the
                    // run's good records (decoded again, rarely) and go on with the run.
                    let fresh = if framed {
                        decoder_for(id, framing, schema, raw.len())
                    } else {
                        plain_decoder(schema, raw.len())
                    };
                    let replayed = fresh.ok().and_then(|mut d| {
                        let all = rows.iter().all(|j| {
                            let p = raw[*j].payload.unwrap_or_default();
                            d.decode(p).is_ok_and(|n| n == p.len())
                        });
                        all.then_some(d)
                    });
                    match replayed {
                        Some(d) => *decoder = d,
                        None => {
                            // Never dropped: what cannot be decoded again is a dead letter.
                            let why = format!("{}: good records did not decode again", writer_name(id));
                            out.dead_letters.extend(rows.iter().map(|j| DeadLetter::of(&raw[*j], why.clone())));
                            run = None;
                        }
                    }
                }
            }
        }
        finish(run, raw, &mut out);
        out.dead_letters.sort_by_key(|l| l.offset);
        out
    }
}

/// The run id of plain datums (no registry).
pub(crate) const PLAIN_ID: u64 = u64::MAX;

/// How a writer schema is named in reasons: its registry id, or the configured schema.
pub(crate) fn writer_name(id: u64) -> String {
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

/// A decoder of framed datums of the writer schema `id`: a 4-byte id (Confluent) when it fits,
/// else an 8-byte one (Apicurio's global ids; `framing` says which the records carry).
fn decoder_for(id: u64, framing: Framing, schema: &AvroSchema, batch_size: usize) -> Result<Decoder, String> {
    let store = match framing {
        Framing::Confluent => {
            let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
            let id = u32::try_from(id).map_err(|_| format!("schema id {id} does not fit 4 bytes"))?;
            store.set(Fingerprint::Id(id), schema.clone()).map_err(|e| e.to_string())?;
            store
        }
        Framing::Apicurio => {
            let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id64);
            store.set(Fingerprint::Id64(id), schema.clone()).map_err(|e| e.to_string())?;
            store
        }
    };
    ReaderBuilder::new()
        .with_writer_schema_store(store)
        .with_batch_size(batch_size.max(1))
        .build_decoder()
        .map_err(|e| e.to_string())
}

/// Ends a run: its rows as a batch, or (should the decoder fail to deliver them) its records
/// as dead letters: nothing is ever dropped.
/// A run in progress: schema id, decoder, rows (input indexes), writer schema.
type Run = (u64, Decoder, Vec<usize>, AvroSchema);

fn finish(run: Option<Run>, raw: &[RawRecord<'_>], out: &mut AvroDecoded) {
    let Some((schema_id, mut decoder, rows_from, _)) = run else { return };
    if rows_from.is_empty() {
        return;
    }
    match decoder.flush() {
        Ok(Some(batch)) if batch.num_rows() == rows_from.len() => {
            out.runs.push(AvroRun { schema_id, batch: uuids_as_text(batch), rows_from })
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

/// Whether a decoded column is an Avro `uuid` (16 bytes in Arrow).
fn is_uuid(f: &arrow::datatypes::Field) -> bool {
    *f.data_type() == arrow::datatypes::DataType::FixedSizeBinary(16)
        && (f.metadata().get("ARROW:extension:name").is_some_and(|n| n == "arrow.uuid")
            || f.metadata().get("logicalType").is_some_and(|n| n == "uuid"))
}

/// Top-level `uuid` columns (16 bytes in Arrow) as their text form, as Avro writes them and
/// Spark reads them (a Delta string).
fn uuids_as_text(batch: RecordBatch) -> RecordBatch {
    use arrow::array::{Array, AsArray, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = batch.schema();
    if !schema.fields().iter().any(|f| is_uuid(f)) {
        return batch;
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        if is_uuid(f) {
            let bytes = c.as_fixed_size_binary();
            let text: StringArray = (0..bytes.len())
                .map(|i| {
                    bytes.is_valid(i).then(|| {
                        uuid::Uuid::from_slice(bytes.value(i))
                            .map_or_else(|_| hex::encode(bytes.value(i)), |u| u.to_string())
                    })
                })
                .collect();
            fields.push(Field::new(f.name(), DataType::Utf8, f.is_nullable()));
            columns.push(std::sync::Arc::new(text) as arrow::array::ArrayRef);
        } else {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
        }
    }
    RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), columns).unwrap_or(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(payload: &[u8], offset: i64) -> RawRecord<'_> {
        RawRecord { topic: "t", partition: 0, offset, timestamp_ms: None, key: None, payload: Some(payload) }
    }

    /// A bad record in the middle of a run costs only itself: the good ones around it land.
    #[tokio::test]
    async fn a_bad_datum_mid_run_is_a_dead_letter_and_the_rest_decode() {
        let schema =
            r#"{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"s","type":"string"}]}"#;
        let mut d = AvroDecoder::plain(schema).unwrap();
        // id = 1, 2, 3 (zigzag) and s = "a"; the third payload stops after the id.
        let (a, b, bad, c) = ([2u8, 2, 0x61], [4u8, 2, 0x61], [2u8], [6u8, 2, 0x61]);
        let raw = [record(&a, 0), record(&b, 1), record(&bad, 2), record(&c, 3)];
        let out = d.decode(&raw).await;
        assert_eq!(out.dead_letters.iter().map(|l| l.offset).collect::<Vec<_>>(), vec![2]);
        let rows: Vec<usize> = out.runs.iter().flat_map(|r| r.rows_from.clone()).collect();
        assert_eq!(rows, vec![0, 1, 3]);
        assert_eq!(out.runs.iter().map(|r| r.batch.num_rows()).sum::<usize>(), 3);
        assert_eq!(Framing::Confluent.split(&[0, 0, 0, 1, 2, 9]), Some((258, &[9u8][..])));
        assert_eq!(Framing::Confluent.split(&[1, 0, 0, 0, 1]), None);
        assert_eq!(Framing::Apicurio.split(&[0, 0, 0, 0, 0, 0, 0, 1, 2, 9]), Some((258, &[9u8][..])));
        assert_eq!(Framing::Apicurio.split(&[0, 0, 0, 1, 2, 9]), None, "8-byte ids need 8 bytes");
    }
}
