//! The pipeline's view of its table: the latest snapshot it knows, the payload decoder for
//! that snapshot's schema, table creation and additive schema evolution.
//!
//! - A missing table is an error unless `create = true`; with a configured schema it is created
//!   at start, otherwise from the first batch: the schema is inferred from the payloads that
//!   are JSON objects (rules in `delta::create`), plus the configured record columns.
//! - Decoding never commits: a table inferred from the first records, or new fields the
//!   records carry, become a *proposal* (the schema the records are decoded in until the flush
//!   that carries them commits it; [`crate::write::schema_change`], the one rule every writer
//!   of rows follows). The flush creates the table or grows its schema in the rows' commit.
//! - With `evolve_schema = true`, records refused only because they carry new top-level
//!   fields propose those fields (nullable), and are decoded again.
//! - The decoder follows the table: whenever a refresh shows another schema (another worker
//!   evolved it), a proposal is merged onto it (or dropped when the table already holds it)
//!   and the decoder is rebuilt.
//! - Avro topics (`kafka.format = "avro"`): a new table takes the first writer schema's
//!   columns and types; rows decoded with each writer schema are projected onto the table by
//!   name ([`crate::decode::projection`]); writer fields the table lacks are added (nullable) with
//!   `evolve_schema`, otherwise their records are dead letters naming the fields.

use std::sync::Arc;

use crate::common::record::{DeadLetter, RawRecord};
use crate::config::KafkaPipeline;
use crate::decode::avro::writer_name;
use crate::decode::format::Format;
use crate::decode::json::{Decoded, PayloadDecoder};
use crate::decode::registry::{Registries, RegistryClient};

use crate::delta::app_id::TxnAppId;
use crate::delta::arrow_schema::arrow_schema_strict;
use crate::delta::arrow_schema::delta_struct_of;
use crate::delta::create::{infer_schema, merge_schema};
use crate::delta::schema::StructType;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{commit_exactly_once, Plan, PlanFn, RetryPolicy, Table};
use crate::write::schema_change::{change, grown, NewTable};

use crate::decode::projection::{project, Mismatch};

/// Schema proposals tried per decoded chunk before its remaining records become dead letters.
const EVOLVE_ATTEMPTS: u32 = crate::common::retry::SCHEMA_CHANGES;

/// The table as the pipeline last saw it.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct TableSchema {
    pub snapshot: Option<Snapshot>,
    /// The schema records are decoded in while it differs from the table's: a new table's, or
    /// the table's grown by new fields. The flush that carries the rows commits it.
    proposal: Option<Arc<StructType>>,
    /// The JSON decoder of the schema records are decoded in (every format ends in JSON or Arrow rows
    /// checked against it), with the schema string it was made for.
    decoder: Option<(String, PayloadDecoder)>,
    /// The topic's payload format.
    format: Format,
    /// Keyed registry topics: the decoder of framed record keys.
    pub keys: Option<crate::decode::keyed_avro::KeyDecoder>,
    record_columns: Vec<String>,
    /// The variant column each whole payload lands in (`record_variant`), if one does.
    record_variant: Option<String>,
    max_record_bytes: usize,
}

impl TableSchema {
    /// Reads the table, creating it now when it is missing and a schema is configured.
    ///
    /// # Errors
    /// A missing table without `create`; storage and protocol errors.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn open(table: &Table, cfg: &KafkaPipeline, registries: &Registries) -> Result<TableSchema> {
        let snapshot = match table.snapshot(None).await {
            Ok(s) => Some(s),
            Err(Error::NotATable { .. }) if cfg.create => None,
            Err(Error::NotATable { location }) => {
                return Err(Error::InvalidArgument(format!(
                    "pipeline {}: there is no table at {location} (create it with `create = true`, or `--create` on `deltabus ingest`)",
                    cfg.name
                )))
            }
            Err(e) => return Err(e),
        };
        if let Some(s) = &snapshot {
            crate::delta::features::check_writable(&s.protocol, &s.metadata)?;
            shapes_agree(s, cfg)?;
            cfg.variants
                .check(&s.schema)
                .map_err(|why| Error::InvalidArgument(format!("pipeline {}: {why}", cfg.name)))?;
        }
        let mut me = TableSchema {
            snapshot,
            proposal: None,
            decoder: None,
            keys: Format::keys(cfg, registries)?,
            format: Format::of(cfg, registries)?,
            record_columns: cfg.columns.names().into_iter().map(String::from).collect(),
            record_variant: cfg.variants.record().map(String::from),
            max_record_bytes: cfg.kafka.max_record_bytes,
        };
        if me.snapshot.is_none() {
            if let Some(schema) = &cfg.schema {
                me.create(table, cfg, schema.clone()).await?;
            } else if let Some(schema) = crate::decode::registry_schema::subject_schema(cfg, registries).await? {
                let schema = me.without_record_columns(schema);
                me.create(table, cfg, schema).await?;
            }
        }
        me.sync_decoder();
        Ok(me)
    }

    /// The topic's payload format.
    pub(crate) fn format(&self) -> &Format {
        &self.format
    }

    /// Catches up with the table (incrementally).
    ///
    /// # Errors
    /// Storage and log errors; a protocol deltabus cannot write.
    pub(crate) async fn refresh(&mut self, table: &Table) -> Result<()> {
        table.refresh(&mut self.snapshot).await?;
        if let (Some(p), Some(s)) = (&self.proposal, &self.snapshot) {
            let widen = crate::delta::type_widening::enabled(&s.metadata.configuration);
            self.proposal = match grown(&s.schema, p, widen) {
                Ok(None) => None,
                Ok(Some(g)) => Some(Arc::new(g)),
                Err(why) => {
                    tracing::warn!(%why, "the table changed under a schema proposal; decoding against the table");
                    None
                }
            };
        }
        self.sync_decoder();
        Ok(())
    }

    /// The schema records are decoded in (`None`: no table and no proposal yet).
    pub(crate) fn view(&self) -> Option<&StructType> {
        self.proposal.as_deref().or(self.snapshot.as_ref().map(|s| &s.schema))
    }

    /// The proposal the next decoded rows are in, for the flush that carries them.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn proposal(&self) -> Option<Arc<StructType>> {
        self.proposal.clone()
    }

    /// Decodes from now on in `schema` (a proposal the rows' commit makes real).
    fn propose(&mut self, schema: StructType) {
        self.proposal = Some(Arc::new(schema));
        self.sync_decoder();
    }

    /// Proposes a new table of `schema` (the payload's columns) plus the record columns,
    /// checked now as the flush will create it.
    ///
    /// # Errors
    /// A schema the pipeline's `partition_by` or `properties` cannot create a table of.
    fn propose_new(&mut self, cfg: &KafkaPipeline, schema: StructType) -> Result<()> {
        let schema = with_record_columns(cfg, cfg.variants.applied(schema));
        change(None, schema.clone(), &NewTable::of_pipeline(cfg))?;
        self.propose(schema);
        Ok(())
    }

    /// Whether the table's schema (as `snapshot` shows it) differs from the one the pipeline
    /// last read, or a proposal waits for it.
    pub(crate) fn differs_from(&self, snapshot: Option<&Snapshot>) -> bool {
        match (snapshot, &self.snapshot) {
            (Some(s), Some(mine)) => s.metadata.schema_string != mine.metadata.schema_string || self.proposal.is_some(),
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The table's position for a partition (its `txn` version).
    pub(crate) fn position(&self, app: &str, topic: &str, partition: i32) -> Option<i64> {
        let id = TxnAppId::KafkaPartition { app: app.into(), topic: topic.into(), partition };
        self.snapshot.as_ref().and_then(|s| id.version_in(s))
    }

    fn sync_decoder(&mut self) {
        let key = match (&self.proposal, &self.snapshot) {
            (Some(p), _) => serde_json::to_string(p.as_ref()).unwrap_or_default(),
            (None, Some(s)) => s.metadata.schema_string.clone(),
            (None, None) => return,
        };
        if self.decoder.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        let Some(view) = self.view() else { return };
        let payload_fields = view.fields.iter().filter(|f| !self.record_columns.contains(&f.name)).cloned();
        let payload = StructType::new(payload_fields.collect());
        let decoder = PayloadDecoder::new(Arc::new(arrow_schema_strict(&payload)), self.max_record_bytes);
        let decoder = match &self.record_variant {
            Some(column) => decoder.with_record_variant(column),
            None => decoder,
        };
        self.decoder = Some((key, decoder));
    }

    /// Decodes records, proposing a new table or new fields when configured (never committing).
    ///
    /// # Errors
    /// Storage errors re-reading the table; a new table's schema the pipeline cannot create.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn decode(
        &mut self,
        table: &Table,
        cfg: &KafkaPipeline,
        raw: &[RawRecord<'_>],
    ) -> Result<Decoded> {
        match &self.format {
            Format::Avro(_) => self.decode_avro(table, cfg, raw).await,
            Format::JsonSchema(registry) => {
                let registry = registry.clone();
                self.decode_json_schema(&registry, table, cfg, raw).await
            }
            Format::Protobuf(_) => self.decode_protobuf(table, cfg, raw).await,
            Format::Json => self.decode_json(table, cfg, raw).await,
        }
    }

    /// Confluent-framed JSON: the frame checked against the registry (a JSON Schema under that
    /// id), the table created from the first record's JSON Schema, the JSON decoded as usual;
    /// rows and dead letters refer to the original records (with their original bytes).
    async fn decode_json_schema(
        &mut self,
        registry: &RegistryClient,
        table: &Table,
        cfg: &KafkaPipeline,
        raw: &[RawRecord<'_>],
    ) -> Result<Decoded> {
        use crate::decode::registry::{SchemaType, Unavailable};
        let mut letters = Vec::new();
        let mut kept: Vec<usize> = Vec::with_capacity(raw.len());
        let mut inner: Vec<RawRecord<'_>> = Vec::with_capacity(raw.len());
        let mut first_schema = None;
        for (i, r) in raw.iter().enumerate() {
            let framing = registry.framing();
            let Some((id, body)) = r.payload.and_then(|p| framing.split(p)) else {
                letters.push(DeadLetter::of(r, framing.unframed()));
                continue;
            };
            match registry.schema(id).await {
                Ok(s) if s.schema_type == SchemaType::Json => {
                    first_schema.get_or_insert(s);
                    kept.push(i);
                    inner.push(RawRecord { payload: Some(body), ..*r });
                }
                Ok(s) => {
                    letters.push(DeadLetter::of(r, format!("schema id {id} is {:?}, not a JSON Schema", s.schema_type)))
                }
                Err(Unavailable::Unknown(why)) => letters.push(DeadLetter::of(r, why)),
            }
        }
        if self.view().is_none() {
            if let Some(s) = &first_schema {
                match crate::decode::json_schema::delta_schema(&s.schema) {
                    Ok(schema) => self.propose_new(cfg, self.without_record_columns(schema))?,
                    Err(e) => {
                        tracing::warn!(error = %e, "the registry's JSON Schema has no Delta form; inferring the table from the records")
                    }
                }
            }
        }
        let decoded = self.decode_json(table, cfg, &inner).await?;
        Ok(back_to_records(decoded, &kept, raw, letters))
    }

    /// Confluent-framed Protobuf: messages decoded with the registry's `.proto` schema into
    /// proto3 JSON, the table created from the first message's descriptor, the JSON decoded as
    /// for JSON topics; rows and dead letters refer to the original records.
    async fn decode_protobuf(&mut self, table: &Table, cfg: &KafkaPipeline, raw: &[RawRecord<'_>]) -> Result<Decoded> {
        let creating = self.view().is_none();
        let Format::Protobuf(proto) = &mut self.format else {
            return Err(Error::Internal("no Protobuf decoder".into()));
        };
        let payloads: Vec<Option<&[u8]>> = raw.iter().map(|r| r.payload).collect();
        // Fastest: one message type the columns are built from directly (no dynamic messages).
        if let (Some((_, decoder)), false) = (&self.decoder, creating) {
            if let Some(batch) = proto.columns(&payloads, decoder.schema()).await {
                return Ok(Decoded {
                    batch: Some(batch),
                    rows_from: (0..raw.len()).collect(),
                    dead_letters: Vec::new(),
                    deletes: Vec::new(),
                });
            }
        }
        let first = if creating { proto.first_schema(&payloads).await } else { None };
        let messages = proto.messages(&payloads).await;
        if let Some(schema) = first {
            self.propose_new(cfg, self.without_record_columns(schema))?;
        }
        // Fast path: every message fits the table; straight into Arrow, no JSON text.
        if let (Some((_, decoder)), true) = (&self.decoder, messages.iter().all(Result::is_ok)) {
            let options = crate::decode::protobuf::proto3_options();
            let rows: Vec<_> =
                messages.iter().flatten().map(|(_, m)| crate::decode::protobuf::Proto3(m, &options)).collect();
            if let Some(batch) = decoder.decode_serialized(&rows) {
                return Ok(Decoded {
                    batch: Some(batch),
                    rows_from: (0..raw.len()).collect(),
                    dead_letters: Vec::new(),
                    deletes: Vec::new(),
                });
            }
        }
        // Otherwise through proto3 JSON text: per-record errors, schema evolution.
        let options = crate::decode::protobuf::proto3_options();
        let outcomes: Vec<Result<(u64, Vec<u8>), String>> = messages
            .into_iter()
            .map(|m| {
                let (id, m) = m?;
                Ok((id, crate::decode::protobuf::to_json(&m, &options, 256)?))
            })
            .collect();
        let mut letters = Vec::new();
        let mut kept = Vec::with_capacity(raw.len());
        let mut bodies = Vec::with_capacity(raw.len());
        for (i, o) in outcomes.into_iter().enumerate() {
            match o {
                Ok((_, json)) => {
                    kept.push(i);
                    bodies.push(json);
                }
                Err(why) => letters.push(DeadLetter::of(&raw[i], why)),
            }
        }
        let inner: Vec<RawRecord<'_>> =
            kept.iter().zip(&bodies).map(|(i, b)| RawRecord { payload: Some(b.as_slice()), ..raw[*i] }).collect();
        let decoded = self.decode_json(table, cfg, &inner).await?;
        Ok(back_to_records(decoded, &kept, raw, letters))
    }

    async fn decode_json(&mut self, table: &Table, cfg: &KafkaPipeline, raw: &[RawRecord<'_>]) -> Result<Decoded> {
        if self.view().is_none() {
            match self.inferred(cfg, raw)? {
                Some(schema) => self.propose_new(cfg, schema)?,
                // Nothing to infer from: every record is a dead letter (no decoder yet).
                None => return Ok(all_dead(raw)),
            }
        }
        let mut decoded = self.decoder()?.decode(raw);
        if decoded.dead_letters.is_empty() {
            return Ok(decoded);
        }
        // A refusal is judged against the table as it is, not as last seen: catch up first
        // (another writer may have added the column meanwhile, and with evolution ours must
        // not lose to our own appends), then decode again.
        let seen = self.snapshot.as_ref().map(|s| s.version);
        self.refresh(table).await?;
        if self.snapshot.as_ref().map(|s| s.version) != seen {
            decoded = self.decoder()?.decode(raw);
        }
        if !cfg.evolve_schema || decoded.dead_letters.is_empty() {
            return Ok(decoded);
        }
        // New fields (nested ones too) may take more than one proposal to settle.
        for _ in 0..EVOLVE_ATTEMPTS {
            let rejected: Vec<&str> = decoded
                .dead_letters
                .iter()
                .filter_map(|l| l.payload.as_deref().and_then(|p| std::str::from_utf8(p).ok()))
                .filter(|p| p.trim_start().starts_with('{'))
                .collect();
            let Some(current) = self.view() else { return Ok(decoded) };
            let incoming = infer_schema(&rejected).ok().map(|s| cfg.variants.applied(self.without_record_columns(s)));
            let Some(incoming) = incoming else {
                return Ok(decoded);
            };
            match merge_schema(current, &incoming)? {
                Some(merged) => {
                    tracing::info!(pipeline = %cfg.name, columns = ?added(current, &merged), "new columns proposed");
                    self.propose(merged);
                }
                None => {
                    let payloads: Vec<&[u8]> = rejected.iter().map(|p| p.as_bytes()).collect();
                    let widened = self.widens(cfg).then(|| {
                        crate::decode::widening::widened(
                            current,
                            &self.record_columns,
                            &payloads,
                            self.max_record_bytes,
                        )
                    });
                    let Some(widened) = widened.flatten() else { return Ok(decoded) };
                    tracing::info!(pipeline = %cfg.name, columns = ?widened_columns(current, &widened), "wider column types proposed");
                    self.propose(widened);
                }
            }
            decoded = self.decoder()?.decode(raw);
            if decoded.dead_letters.is_empty() {
                break;
            }
        }
        Ok(decoded)
    }

    /// The Avro path of [`TableSchema::decode`]: the table from the first writer schema, rows
    /// projected onto it, new writer fields added when evolution is on.
    async fn decode_avro(&mut self, table: &Table, cfg: &KafkaPipeline, raw: &[RawRecord<'_>]) -> Result<Decoded> {
        let Format::Avro(avro) = &mut self.format else { return Err(Error::Internal("no Avro decoder".into())) };
        let mut decoded = avro.decode(raw).await;
        let mut deletes = Vec::new();
        if cfg.upsert.as_ref().is_some_and(|u| u.format == crate::config::UpsertFormat::Debezium) {
            let names = cfg.upsert.as_ref().map(|u| u.key_columns.clone()).unwrap_or_default();
            let columns = crate::decode::keyed::KeyColumns::new(&names, self.view());
            let mut runs = Vec::new();
            for run in std::mem::take(&mut decoded.runs) {
                let u = crate::decode::keyed_avro::unwrap_debezium(run, &columns);
                runs.extend(u.rows);
                deletes.extend(u.deletes);
                decoded.dead_letters.extend(u.refused.into_iter().map(|(i, why)| DeadLetter::of(&raw[i], why)));
            }
            decoded.runs = runs;
        }
        if self.view().is_none() {
            let first = decoded.runs.first().map(|r| r.batch.schema());
            let Some(arrow) = first else {
                return Ok(Decoded { batch: None, rows_from: Vec::new(), dead_letters: decoded.dead_letters, deletes });
            };
            let schema = self.without_record_columns(delta_struct_of(&arrow)?);
            self.propose_new(cfg, schema)?;
        }
        let mut letters = decoded.dead_letters;
        let mut batches = Vec::new();
        let mut rows_from = Vec::new();
        let mut refreshed = false;
        for run in decoded.runs {
            let mut attempts = 0;
            loop {
                let target = self.payload_arrow_schema()?;
                match project(&run.batch, &target) {
                    Ok(b) => {
                        batches.push(b);
                        rows_from.extend(run.rows_from.iter().copied());
                        break;
                    }
                    // Judged against the table as it is: another writer may have added them.
                    Err(Mismatch::Extra(_)) if !refreshed => {
                        refreshed = true;
                        self.refresh(table).await?;
                    }
                    Err(Mismatch::Extra(fields)) if cfg.evolve_schema && attempts < EVOLVE_ATTEMPTS => {
                        attempts += 1;
                        let Some(current) = self.view() else { break };
                        let incoming =
                            cfg.variants.applied(crate::decode::projection::extra_fields(&run.batch, &fields)?);
                        if let Some(merged) = merge_schema(current, &incoming)? {
                            tracing::info!(pipeline = %cfg.name, columns = ?fields, "new columns proposed");
                            self.propose(merged);
                        }
                    }
                    Err(mismatch) => {
                        let why = match mismatch {
                            Mismatch::Extra(f) => format!(
                                "{}: fields {f:?} are not in the table (set evolve_schema = true to add them)",
                                writer_name(run.schema_id)
                            ),
                            Mismatch::Refused(r) => format!("{}: {r}", writer_name(run.schema_id)),
                        };
                        letters.extend(run.rows_from.iter().map(|i| DeadLetter::of(&raw[*i], why.clone())));
                        break;
                    }
                }
            }
        }
        // Runs projected before a later run evolved the table get its new columns (null).
        if batches.len() > 1 {
            let target = self.payload_arrow_schema()?;
            batches = batches
                .iter()
                .map(|b| project(b, &target))
                .collect::<std::result::Result<_, _>>()
                .map_err(|m| Error::Internal(format!("re-projecting after a schema change: {m:?}")))?;
        }
        // Runs follow the input order; after refusals, rows_from stays ascending.
        let batch = match batches.len() {
            0 => None,
            1 => batches.pop(),
            _ => Some(
                arrow::compute::concat_batches(&batches[0].schema(), &batches)
                    .map_err(|e| Error::Internal(format!("joining Avro batches: {e}")))?,
            ),
        };
        letters.sort_by_key(|l| l.offset);
        Ok(Decoded { batch, rows_from, dead_letters: letters, deletes })
    }

    /// The Arrow form of the table's payload columns (record columns excluded).
    /// Whether schema evolution may widen the table's columns: its `delta.enableTypeWidening`
    /// (a table still to be created: the pipeline's `properties`).
    fn widens(&self, cfg: &KafkaPipeline) -> bool {
        let properties = match &self.snapshot {
            Some(s) => &s.metadata.configuration,
            None => &cfg.properties,
        };
        crate::delta::type_widening::enabled(properties)
    }

    fn payload_arrow_schema(&self) -> Result<arrow::datatypes::SchemaRef> {
        let s = self.view().ok_or_else(|| Error::Internal("no table yet".into()))?;
        let fields = s.fields.iter().filter(|f| !self.record_columns.contains(&f.name)).cloned().collect();
        Ok(Arc::new(arrow_schema_strict(&StructType::new(fields))))
    }

    fn decoder(&self) -> Result<&PayloadDecoder> {
        self.decoder.as_ref().map(|(_, d)| d).ok_or_else(|| Error::Internal("decoder without a table".into()))
    }

    fn without_record_columns(&self, s: StructType) -> StructType {
        StructType::new(s.fields.into_iter().filter(|f| !self.record_columns.contains(&f.name)).collect())
    }

    /// A new table's payload columns from the records (the configured variant columns typed
    /// `variant`; with `record_variant`, that column alone), `None` without a record to go by.
    fn inferred(&self, cfg: &KafkaPipeline, raw: &[RawRecord<'_>]) -> Result<Option<StructType>> {
        if cfg.variants.record().is_some() {
            let any = raw.iter().any(|r| r.payload.is_some());
            return Ok(any.then(|| cfg.variants.applied(StructType::new(Vec::new()))));
        }
        let sample: Vec<&str> = raw
            .iter()
            .filter_map(|r| r.payload.and_then(|p| std::str::from_utf8(p).ok()))
            .filter(|p| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(p).is_ok())
            .take(1000)
            .collect();
        if sample.is_empty() {
            return Ok(None);
        }
        Ok(Some(cfg.variants.applied(self.without_record_columns(infer_schema(&sample)?))))
    }

    /// Creates the table at start (a configured or registered schema), before any record.
    async fn create(&mut self, table: &Table, cfg: &KafkaPipeline, schema: StructType) -> Result<()> {
        let created = change(None, with_record_columns(cfg, schema), &NewTable::of_pipeline(cfg))?;
        let txn = Transaction::new(Operation::CreateTable, created.actions)
            .with_parameter("isManaged", "false")
            .with_parameter("partitionBy", serde_json::to_string(&cfg.partition_by).unwrap_or_default());
        // Another worker created it first: use theirs.
        let create = |s: Option<&Snapshot>| {
            Ok(if s.is_some() { Plan::Nothing(()) } else { Plan::commit(txn.clone(), Vec::new(), Vec::new(), ()) })
        };
        let landed = commit_exactly_once(table, &mut None, &RetryPolicy::riding_faults(), &mut PlanFn(create)).await?;
        if landed.version().is_some() {
            tracing::info!(pipeline = %cfg.name, table = %table.url(), "table created");
        }
        self.snapshot = Some(table.snapshot(None).await?);
        Ok(())
    }
}

/// A decode of transformed records (`kept[i]` is the record behind row source `i`) in terms of
/// the original records: row indexes mapped back, dead letters carrying the original bytes
/// (frame included) and joined with `letters`.
fn back_to_records(
    mut decoded: Decoded,
    kept: &[usize],
    raw: &[RawRecord<'_>],
    mut letters: Vec<DeadLetter>,
) -> Decoded {
    decoded.rows_from = decoded.rows_from.iter().map(|i| kept[*i]).collect();
    for l in &mut decoded.dead_letters {
        if let Some(r) = raw.iter().find(|r| r.offset == l.offset && r.partition == l.partition) {
            l.payload = r.payload.map(<[u8]>::to_vec);
        }
    }
    letters.append(&mut decoded.dead_letters);
    letters.sort_by_key(|l| l.offset);
    decoded.dead_letters = letters;
    decoded
}

/// `schema` with the pipeline's record columns (key, headers, ...) it lacks.
fn with_record_columns(cfg: &KafkaPipeline, schema: StructType) -> StructType {
    let mut fields = schema.fields;
    for f in cfg.columns.fields() {
        if !fields.iter().any(|x| x.name == f.name) {
            fields.push(f);
        }
    }
    StructType::new(fields)
}

/// The top-level fields `merged` adds to `current`.
fn widened_columns(current: &StructType, widened: &StructType) -> Vec<String> {
    crate::delta::type_widening::changes(current, widened)
        .iter()
        .map(|c| format!("{}: {} -> {}", c.column(), c.from, c.to))
        .collect()
}

fn added(current: &StructType, merged: &StructType) -> Vec<String> {
    merged.fields.iter().filter(|f| current.field(&f.name).is_none()).map(|f| f.name.clone()).collect()
}

fn all_dead(raw: &[RawRecord<'_>]) -> Decoded {
    Decoded {
        batch: None,
        rows_from: Vec::new(),
        deletes: Vec::new(),
        dead_letters: raw
            .iter()
            .map(|r| {
                crate::common::record::DeadLetter::of(
                    r,
                    "not a JSON object (nothing to infer the new table's schema from)",
                )
            })
            .collect(),
    }
}

/// A pipeline's `partition_by` and `properties` shape the table it creates; on an existing
/// table they must say what the table already is, or the pipeline refuses to start (they are
/// never ignored silently).
fn shapes_agree(s: &Snapshot, cfg: &KafkaPipeline) -> Result<()> {
    if !cfg.partition_by.is_empty() {
        let mut wanted = Vec::with_capacity(cfg.partition_by.len());
        for spec in &cfg.partition_by {
            match crate::delta::generated::parse_partition_spec(spec)? {
                Some(g) => wanted.push(g.column),
                None => wanted.push(spec.clone()),
            }
        }
        if wanted != s.metadata.partition_columns {
            return Err(Error::InvalidArgument(format!(
                "pipeline {}: partition_by [{}] cannot apply: the table exists and is partitioned by [{}] (partitioning is set when a table is created)",
                cfg.name,
                wanted.join(", "),
                s.metadata.partition_columns.join(", ")
            )));
        }
    }
    crate::delta::clustering::check_configured(s, &cfg.cluster_by, &format!("pipeline {}: cluster_by", cfg.name))?;
    let wanted = crate::delta::properties::checked_properties(&cfg.properties)?;
    let mut differ: Vec<String> = wanted
        .iter()
        .filter(|(k, v)| {
            !s.metadata.configuration.iter().any(|(tk, tv)| tk.eq_ignore_ascii_case(k) && tv.eq_ignore_ascii_case(v))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !differ.is_empty() {
        differ.sort();
        return Err(Error::InvalidArgument(format!(
            "pipeline {}: properties {} cannot apply: the table exists without them (properties apply when a pipeline creates its table; set them with `deltabus write --property` or remove them from the pipeline)",
            cfg.name,
            differ.join(", ")
        )));
    }
    Ok(())
}
