//! A pipeline's settings checked and parsed: what the pipeline, its source stage and its
//! background compactor run on. Nothing downstream reads the raw [`PipelineConfig`]; a
//! pipeline's source is one [`PipelineSource`] (Kafka or Delta), never two options.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::pipeline::{DeadLetterConfig, PipelineConfig, RecordColumns};
use super::sources::{DeltaSourceConfig, ResolvedDeltaSource, UpsertConfig, UpsertFormat};
use crate::common::flush::FlushPolicy;
use crate::common::follow::{GroupOptions, StartAt};
use crate::delta::schema::StructType;
use crate::error::{Error, Result};

/// Where a partition without a recorded position starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartPosition {
    Earliest,
    Latest,
    Timestamp(i64),
    Offsets(BTreeMap<i32, i64>),
}

impl StartPosition {
    /// Parses the `start` setting.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] describing the accepted forms.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "start {s:?}: expected earliest, latest, timestamp:<RFC 3339 or ms> or offsets:<partition>=<offset>,..."
            ))
        };
        Ok(match s.trim() {
            "earliest" => StartPosition::Earliest,
            "latest" => StartPosition::Latest,
            t => {
                if let Some(ms) = t.strip_prefix("timestamp:") {
                    StartPosition::Timestamp(crate::common::follow::parse_timestamp(ms).ok_or_else(bad)?)
                } else if let Some(list) = t.strip_prefix("offsets:") {
                    let mut map = BTreeMap::new();
                    for pair in list.split(',').filter(|p| !p.trim().is_empty()) {
                        let (p, o) = pair.split_once('=').ok_or_else(bad)?;
                        map.insert(p.trim().parse().map_err(|_| bad())?, o.trim().parse().map_err(|_| bad())?);
                    }
                    StartPosition::Offsets(map)
                } else {
                    return Err(bad());
                }
            }
        })
    }
}

/// A pipeline's settings, checked and parsed.
#[derive(Debug, Clone)]
pub struct ResolvedPipeline {
    pub name: String,
    /// Names the pipeline's positions in the table.
    pub app_id: String,
    /// The target table URL or path.
    pub table: String,
    pub source: PipelineSource,
    /// Create the table when missing; with `schema`, or inferred from the first batch.
    pub create: bool,
    pub schema: Option<StructType>,
    pub partition_by: Vec<String>,
    /// Clustering columns of a new table.
    pub cluster_by: Vec<String>,
    /// Table properties of a new table.
    pub properties: HashMap<String, String>,
    pub evolve_schema: bool,
    /// The fields that land as variant columns.
    pub variants: super::variants::Variants,
    pub policy: FlushPolicy,
    /// Data file size (`None`: the table's `delta.targetFileSize`).
    pub target_file_size: Option<u64>,
    /// Rate limits per second; 0 = unlimited.
    pub records_per_second: u32,
    pub bytes_per_second: u32,
    pub columns: RecordColumns,
    pub dead_letter: DeadLetterConfig,
    /// Set for keyed ingestion (Kafka sources only).
    pub upsert: Option<UpsertConfig>,
    /// Set when the background compactor runs beside the pipeline.
    pub compaction: Option<ResolvedCompaction>,
    /// Set for content routing (`route_by`).
    pub route: Option<Route>,
    /// Set when one committer per table commits every worker's flushes.
    pub coordination: Option<super::commit::Coordination>,
}

/// Content routing, checked.
#[derive(Debug, Clone)]
pub struct Route {
    /// The JSON field (dotted for nested) whose value names the table.
    pub field: String,
    pub max_tables: usize,
    /// The table positions of the routed tables are recorded in.
    pub state: String,
}

impl Route {
    /// The table of a route value, or why the value cannot name one.
    ///
    /// # Errors
    /// A value that is empty, longer than 200 bytes, `.`/`..`, or not made of ASCII letters,
    /// digits, `-`, `_`, `.` and `=`.
    pub fn table_of(&self, template: &str, value: &str) -> std::result::Result<String, String> {
        let ok = !value.is_empty()
            && value.len() <= 200
            && value != "."
            && value != ".."
            && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '='));
        if !ok {
            return Err(format!(
                "{}: {value:?} cannot name a table (1 to 200 ASCII letters, digits, '-', '_', '.', '=')",
                self.field
            ));
        }
        Ok(template.replace(&format!("{{{}}}", self.field), value))
    }
}

/// Where a pipeline's records come from.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per pipeline, built once: size does not matter
pub enum PipelineSource {
    Kafka(ResolvedKafka),
    Delta(ResolvedDeltaSource),
}

/// Which topics a Kafka pipeline consumes.
#[derive(Debug, Clone)]
pub enum Topics {
    /// `kafka.topic` (or one topic of a list or pattern, in a pipeline made by
    /// [`ResolvedPipeline::for_topic`]).
    One,
    /// `kafka.topics`.
    List(Vec<String>),
    /// `kafka.topic_pattern` (anchored at both ends), looked at every `refresh`.
    Pattern { regex: regex::Regex, refresh: Duration },
}

/// A Kafka source, checked.
#[derive(Clone)]
pub struct ResolvedKafka {
    pub brokers: String,
    /// The topic this pipeline consumes (empty for a list or pattern not yet expanded).
    pub topic: String,
    pub topics: Topics,
    pub group_id: String,
    pub start: StartPosition,
    pub assignment: super::pipeline::Assignment,
    pub format: PayloadFormat,
    pub max_record_bytes: usize,
    pub fail_on_data_loss: bool,
    pub stop_at_end: bool,
    /// With `stop_at_end`: how long without records or assignment before failing.
    pub stall_timeout: std::time::Duration,
    /// librdkafka properties (values redacted in `Debug`).
    pub properties: BTreeMap<String, String>,
}

impl std::fmt::Debug for ResolvedKafka {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedKafka")
            .field("brokers", &super::redact::without_userinfo(&self.brokers))
            .field("topic", &self.topic)
            .field("topics", &self.topics)
            .field("group_id", &self.group_id)
            .field("start", &self.start)
            .field("assignment", &self.assignment)
            .field("format", &self.format)
            .field("max_record_bytes", &self.max_record_bytes)
            .field("fail_on_data_loss", &self.fail_on_data_loss)
            .field("stop_at_end", &self.stop_at_end)
            .field("stall_timeout", &self.stall_timeout)
            .field("properties", &self.properties.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// How Kafka payloads are encoded.
#[derive(Debug, Clone)]
pub enum PayloadFormat {
    Json,
    /// Confluent wire format, writer schemas from the registry.
    Avro(crate::config::registry::RegistryConfig),
    /// JSON in the Confluent wire format, JSON Schemas from the registry.
    JsonSchema(crate::config::registry::RegistryConfig),
    /// Plain Avro datums of one schema (no registry).
    AvroPlain(String),
    /// Protobuf in the Confluent wire format, `.proto` schemas from the registry.
    Protobuf(crate::config::registry::RegistryConfig),
}

/// The background compactor's settings, checked.
#[derive(Debug, Clone)]
pub struct ResolvedCompaction {
    pub min_files: usize,
    /// Target size (`None`: the table's `delta.targetFileSize`, else 128 MiB).
    pub target_file_size: Option<u64>,
    pub interval: Duration,
    /// Files deleting more than this fraction of their rows are rewritten regardless of
    /// `min_files`.
    pub deleted_rows_ratio: f64,
}

/// A pipeline reading a Kafka topic: its settings, with the Kafka ones at hand (the stages
/// that only run with Kafka take this, never a pipeline that might have another source).
#[derive(Debug, Clone)]
pub struct KafkaPipeline {
    pub pipeline: ResolvedPipeline,
    pub kafka: ResolvedKafka,
}

/// A pipeline following another Delta table's change feed.
#[derive(Debug, Clone)]
pub struct DeltaPipeline {
    pub pipeline: ResolvedPipeline,
    pub delta: ResolvedDeltaSource,
}

/// A pipeline by its source, for the stage that runs it.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per pipeline, built once: size does not matter
pub enum Pipeline {
    Kafka(KafkaPipeline),
    Delta(DeltaPipeline),
}

impl std::ops::Deref for KafkaPipeline {
    type Target = ResolvedPipeline;

    fn deref(&self) -> &ResolvedPipeline {
        &self.pipeline
    }
}

impl std::ops::DerefMut for KafkaPipeline {
    fn deref_mut(&mut self) -> &mut ResolvedPipeline {
        &mut self.pipeline
    }
}

impl KafkaPipeline {
    /// Whether polls gather record headers: for a headers column, or for Apicurio's
    /// header-carried schema ids.
    pub fn reads_headers(&self) -> bool {
        let apicurio = match &self.kafka.format {
            PayloadFormat::Avro(r) | PayloadFormat::Protobuf(r) | PayloadFormat::JsonSchema(r) => {
                r.api == crate::config::registry::RegistryApi::Apicurio
            }
            _ => false,
        };
        self.columns.headers.is_some() || apicurio
    }
}

impl ResolvedPipeline {
    /// The pipeline by its source.
    pub fn kind(self) -> Pipeline {
        match self.source.clone() {
            PipelineSource::Kafka(kafka) => Pipeline::Kafka(KafkaPipeline { pipeline: self, kafka }),
            PipelineSource::Delta(delta) => Pipeline::Delta(DeltaPipeline { pipeline: self, delta }),
        }
    }

    /// The pipeline of one topic of a list or pattern: `{topic}` in the table and dead-letter
    /// table replaced, named `<name>/<topic>` (its metrics and logs). The txn app ids carry
    /// the topic, so several topics may share one table.
    pub fn for_topic(&self, topic: &str) -> ResolvedPipeline {
        let mut p = self.clone();
        p.table = self.table.replace("{topic}", topic);
        if let Some(t) = &mut p.dead_letter.table {
            *t = t.replace("{topic}", topic);
        }
        if let Some(r) = &mut p.route {
            r.state = r.state.replace("{topic}", topic);
        }
        if let PipelineSource::Kafka(k) = &mut p.source {
            if !matches!(k.topics, Topics::One) {
                p.name = format!("{}/{topic}", self.name);
            }
            k.topic = topic.to_string();
            k.topics = Topics::One;
        }
        p
    }

    /// The pipelines to run now: itself, or one per listed topic. A pattern's are found by
    /// the service ([`Topics::Pattern`]).
    pub fn expand(&self) -> Vec<ResolvedPipeline> {
        match &self.source {
            PipelineSource::Kafka(ResolvedKafka { topics: Topics::List(list), .. }) => {
                list.iter().map(|t| self.for_topic(t)).collect()
            }
            PipelineSource::Kafka(ResolvedKafka { topics: Topics::Pattern { .. }, .. }) => Vec::new(),
            PipelineSource::Kafka(k) => vec![self.for_topic(&k.topic)],
            PipelineSource::Delta(_) => vec![self.clone()],
        }
    }
}

impl PipelineConfig {
    /// Checks every value and parses sizes, positions and the schema.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the pipeline and the key.
    pub fn validate(&self, name: &str) -> Result<ResolvedPipeline> {
        let bad = |key: &str, why: String| Error::invalid_config(format!("pipelines.{name}.{key}"), why);
        if self.table.trim().is_empty() {
            return Err(bad("table", "must not be empty".into()));
        }
        if let Some(why) = crate::delta::clustering::settings_refusal(&self.partition_by, &self.cluster_by) {
            return Err(bad("cluster_by", why));
        }
        let app_id = self.app_id.clone().unwrap_or_else(|| name.to_string());
        let delta = match &self.delta {
            Some(d) => {
                if !self.kafka.brokers.is_empty() || self.kafka_topics(&bad)?.is_some() {
                    return Err(bad("delta", "give a kafka or a delta source, not both".into()));
                }
                Some(self.resolve_delta(d, &app_id, &bad)?)
            }
            None if self.kafka.brokers.trim().is_empty() || self.kafka_topics(&bad)?.is_none() => {
                return Err(bad(
                    "kafka",
                    "brokers and topic (or topics, or topic_pattern) are required (or a [delta] source)".into(),
                ));
            }
            None => None,
        };
        for k in self.kafka.properties.keys() {
            if [
                "bootstrap.servers",
                "group.id",
                "enable.auto.commit",
                "partition.assignment.strategy",
                "group.protocol",
            ]
            .contains(&k.as_str())
            {
                return Err(bad("kafka.properties", format!("{k} is set by deltabus; use the pipeline keys")));
            }
        }
        let start = StartPosition::parse(&self.kafka.start).map_err(|e| bad("kafka.start", e.to_string()))?;
        if app_id.is_empty() {
            return Err(bad("app_id", "must not be empty".into()));
        }
        if self.flush.max_latency.get().is_zero() || self.flush.max_rows == 0 {
            return Err(bad("flush", "max_latency and max_rows must be positive".into()));
        }
        let schema = match &self.schema {
            Some(s) => Some(StructType::parse(s).map_err(|e| bad("schema", e.to_string()))?),
            None => None,
        };
        let variants = super::variants::Variants::new(&self.variant_columns, self.record_variant.as_deref())
            .and_then(|v| schema.as_ref().map_or(Ok(()), |s| v.check(s)).map(|()| v))
            .map_err(|e| bad("variant_columns", e))?;
        let columns = self.columns.names();
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = columns.iter().find(|c| !seen.insert(**c)) {
            return Err(bad("columns", format!("{dup:?} is used twice")));
        }
        if self.dead_letter.table.is_some() && self.dead_letter.topic.is_some() {
            return Err(bad("dead_letter", "give a table or a topic, not both".into()));
        }
        let target_file_size = self.flush.target_file_size.map(|s| s.get());
        let policy = FlushPolicy {
            max_latency: self.flush.max_latency.get(),
            max_rows: self.flush.max_rows,
            max_bytes: self.flush.max_bytes.get(),
            target_file_size: target_file_size.unwrap_or(128 << 20),
        };
        let c = &self.compaction;
        if c.enabled && (c.min_files < 2 || c.interval.get().is_zero()) {
            return Err(bad("compaction", "min_files must be at least 2 and interval positive".into()));
        }
        if !(c.deleted_rows_ratio > 0.0 && c.deleted_rows_ratio <= 1.0) {
            return Err(bad("compaction.deleted_rows_ratio", "a fraction above 0 and at most 1, e.g. 0.2".into()));
        }
        let compaction = c.enabled.then(|| ResolvedCompaction {
            min_files: c.min_files,
            target_file_size: c.target_file_size.map(|s| s.get()),
            interval: c.interval.get(),
            deleted_rows_ratio: c.deleted_rows_ratio,
        });
        let format = match (self.kafka.format.as_str(), &self.schema_registry) {
            ("json", _) => PayloadFormat::Json,
            ("avro", None) if self.kafka.avro_schema.is_some() => {
                PayloadFormat::AvroPlain(self.kafka.avro_schema.clone().unwrap_or_default())
            }
            ("avro", Some(_)) if self.kafka.avro_schema.is_some() => {
                return Err(bad("kafka.avro_schema", "give a schema registry or an Avro schema, not both".into()))
            }
            ("avro", Some(r)) if !r.url.trim().is_empty() => PayloadFormat::Avro(r.clone()),
            ("json-schema", Some(r)) if !r.url.trim().is_empty() => PayloadFormat::JsonSchema(r.clone()),
            ("protobuf", Some(r)) if !r.url.trim().is_empty() => PayloadFormat::Protobuf(r.clone()),
            (f @ ("avro" | "json-schema" | "protobuf"), _) => {
                return Err(bad("schema_registry.url", format!("kafka.format = {f:?} needs the registry's URL")))
            }
            (other, _) => return Err(bad("kafka.format", format!("{other:?}: json, avro, protobuf or json-schema"))),
        };
        if variants.record().is_some() && !matches!(format, PayloadFormat::Json) {
            let why = "lands each JSON payload whole; name the fields of Avro, Protobuf and JSON Schema records in variant_columns";
            return Err(bad("record_variant", why.into()));
        }
        let source = match delta {
            Some(d) => PipelineSource::Delta(d),
            None => PipelineSource::Kafka(ResolvedKafka {
                brokers: self.kafka.brokers.clone(),
                topic: self.kafka.topic.trim().to_string(),
                topics: self.kafka_topics(&bad)?.unwrap_or(Topics::One),
                group_id: self.kafka.group_id.clone().unwrap_or_else(|| app_id.clone()),
                start,
                assignment: self.kafka.assignment,
                format,
                max_record_bytes: usize::try_from(self.kafka.max_record_bytes.get()).unwrap_or(usize::MAX),
                fail_on_data_loss: self.kafka.fail_on_data_loss,
                stop_at_end: self.kafka.stop_at_end,
                stall_timeout: self.kafka.stall_timeout.get(),
                properties: self.kafka.properties.clone(),
            }),
        };
        let route = self.resolve_route(&app_id, &bad)?;
        let coordination = self.resolve_commit(&bad)?;
        Ok(ResolvedPipeline {
            name: name.to_string(),
            app_id,
            table: self.table.clone(),
            source,
            create: self.create,
            schema,
            partition_by: self.partition_by.clone(),
            cluster_by: self.cluster_by.clone(),
            properties: self.properties.clone(),
            evolve_schema: self.evolve_schema,
            variants,
            policy,
            target_file_size,
            records_per_second: self.flush.records_per_second,
            bytes_per_second: self.flush.bytes_per_second,
            columns: self.columns.clone(),
            dead_letter: self.dead_letter.clone(),
            upsert: self.resolve_upsert(&bad)?,
            compaction,
            route,
            coordination,
        })
    }

    fn resolve_commit(&self, bad: &dyn Fn(&str, String) -> Error) -> Result<Option<super::commit::Coordination>> {
        use super::commit::{CommitMode, Coordination};
        let c = &self.commit;
        if c.mode == CommitMode::Worker {
            return Ok(None);
        }
        let why = if self.delta.is_some() {
            Some("a [delta] source commits its own batches")
        } else if self.upsert.is_some() {
            Some("keyed ingestion (upsert) commits from each worker")
        } else if self.route_by.is_some() {
            Some("a routed pipeline commits from each worker")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(bad("commit.mode", format!("\"coordinated\" is for plain Kafka pipelines: {why}")));
        }
        if c.interval.get().is_zero() || c.request_timeout.get() < std::time::Duration::from_secs(1) {
            return Err(bad("commit", "interval must be positive and request_timeout at least 1s".into()));
        }
        if let Some(t) = &c.control_topic {
            let plain = t.replace("{topic}", "x");
            if plain.is_empty()
                || plain.len() > 249
                || !plain.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            {
                return Err(bad("commit.control_topic", format!("{t:?} is not a Kafka topic name")));
            }
        }
        Ok(Some(Coordination {
            control_topic: c.control_topic.clone(),
            interval: c.interval.get(),
            request_timeout: c.request_timeout.get(),
        }))
    }

    fn resolve_route(&self, app_id: &str, bad: &dyn Fn(&str, String) -> Error) -> Result<Option<Route>> {
        let Some(field) = &self.route_by else { return Ok(None) };
        let field = field.trim();
        if field.is_empty() || field.contains(['{', '}']) {
            return Err(bad("route_by", format!("{field:?} is not a field name")));
        }
        let placeholder = format!("{{{field}}}");
        let Some(at) = self.table.find(&placeholder) else {
            return Err(bad("table", format!("route_by = {field:?} needs {placeholder} in the table template")));
        };
        if self.delta.is_some() || self.upsert.is_some() {
            return Err(bad("route_by", "routes the records of a Kafka source without upsert".into()));
        }
        if self.max_tables == 0 {
            return Err(bad("max_tables", "must be at least 1".into()));
        }
        let state = match &self.route_state {
            Some(s) if !s.trim().is_empty() => s.clone(),
            _ => {
                let dir = self.table[..at].rfind('/').map_or("", |i| &self.table[..=i]);
                if dir.is_empty() || dir.contains('{') {
                    return Err(bad(
                        "route_state",
                        "give a location (the table template has no fixed directory)".into(),
                    ));
                }
                format!("{dir}_deltabus_routes/{app_id}")
            }
        };
        Ok(Some(Route { field: field.to_string(), max_tables: self.max_tables, state }))
    }

    /// `kafka.topic`, `topics` or `topic_pattern` (`None` when none is given).
    fn kafka_topics(&self, bad: &dyn Fn(&str, String) -> Error) -> Result<Option<Topics>> {
        let k = &self.kafka;
        let given = [!k.topic.trim().is_empty(), !k.topics.is_empty(), k.topic_pattern.is_some()];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(bad("kafka", "give one of topic, topics and topic_pattern".into()));
        }
        if let Some(t) = k.topics.iter().find(|t| t.trim().is_empty() || t.contains(['{', '}', '/'])) {
            return Err(bad("kafka.topics", format!("{t:?} is not a topic name")));
        }
        Ok(if given[0] {
            Some(Topics::One)
        } else if given[1] {
            let mut list: Vec<String> = k.topics.iter().map(|t| t.trim().to_string()).collect();
            list.sort();
            list.dedup();
            Some(Topics::List(list))
        } else if let Some(p) = &k.topic_pattern {
            let regex = regex::Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                bad("kafka.topic_pattern", format!("{p:?}: {}", e.to_string().lines().last().unwrap_or("")))
            })?;
            if k.topic_refresh.get().is_zero() {
                return Err(bad("kafka.topic_refresh", "must be positive".into()));
            }
            Some(Topics::Pattern { regex, refresh: k.topic_refresh.get() })
        } else {
            None
        })
    }

    fn resolve_upsert(&self, bad: &dyn Fn(&str, String) -> Error) -> Result<Option<UpsertConfig>> {
        let Some(u) = &self.upsert else { return Ok(None) };
        if self.delta.is_some() {
            return Err(bad("upsert", "keyed ingestion needs a kafka source".into()));
        }
        if u.key_columns.is_empty() || u.key_columns.iter().any(|c| c.trim().is_empty()) {
            return Err(bad("upsert.key_columns", "name at least one column".into()));
        }
        if u.format == UpsertFormat::Debezium && !["json", "avro"].contains(&self.kafka.format.as_str()) {
            return Err(bad(
                "upsert.format",
                format!("Debezium envelopes are read from json or avro topics, not {:?}", self.kafka.format),
            ));
        }
        if u.op_field.is_some() && u.format != UpsertFormat::Plain {
            return Err(bad("upsert.op_field", "only for plain payloads (Debezium carries its op)".into()));
        }
        Ok(Some(u.clone()))
    }

    fn resolve_delta(
        &self,
        d: &DeltaSourceConfig,
        app_id: &str,
        bad: &dyn Fn(&str, String) -> Error,
    ) -> Result<ResolvedDeltaSource> {
        if d.source.trim().is_empty() {
            return Err(bad("delta.source", "must not be empty".into()));
        }
        let follower_id = d.follower_id.clone().unwrap_or_else(|| app_id.to_string());
        if !crate::beside::followers::valid_follower_id(&follower_id) {
            return Err(bad("delta.follower_id", format!("{follower_id:?}: ASCII letters, digits, '-', '_' and '.'")));
        }
        let options = d.options(Some(follower_id.clone())).map_err(|(key, why)| bad(&format!("delta.{key}"), why))?;
        let mirror = match (d.mirror, d.key_columns.is_empty()) {
            (true, true) => match options.file_mirror_refusal() {
                Some(why) => return Err(bad("delta.mirror", why.into())),
                None => Some(Vec::new()),
            },
            (true, false) => Some(d.key_columns.clone()),
            (false, false) => return Err(bad("delta.key_columns", "only with mirror = true".into())),
            (false, true) => None,
        };
        let group = match &d.group {
            None => None,
            Some(_) if mirror.is_some() => return Err(bad("delta.group", "not with mirror = true".into())),
            Some(g) => {
                if !matches!(options.start, StartAt::Version(_) | StartAt::Latest) {
                    return Err(bad("delta.start", "a group starts at a version or \"latest\"".into()));
                }
                if d.lease.get() < std::time::Duration::from_secs(1) {
                    return Err(bad("delta.lease", "at least 1s".into()));
                }
                Some(GroupOptions {
                    group: g.clone(),
                    member: d.member.clone().unwrap_or_else(GroupOptions::default_member),
                    slices: d.slices,
                    key_columns: d.group_key.clone(),
                    lease: d.lease.get(),
                })
            }
        };
        Ok(ResolvedDeltaSource { source: d.source.clone(), follower_id, options, mirror, group })
    }
}
