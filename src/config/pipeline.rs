//! `[pipelines.<name>]`: one source — a Kafka topic (`[...kafka]`) or another Delta table's
//! change feed (`[...delta]`) — into one Delta table, as `deltabus run` executes it.
//!
//! Every field has a default here (pipelines are a map, so the embedded defaults file can only
//! document them); `config/default.toml` shows each with its default value. Values are checked
//! by [`PipelineConfig::validate`], which names the pipeline and key of the first bad value.
//! Kafka client properties and storage secrets are redacted in `Debug` output.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::common::units::{ByteSize, HumanDuration};

pub use super::resolved::{
    DeltaPipeline, KafkaPipeline, PayloadFormat, Pipeline, PipelineSource, ResolvedCompaction, ResolvedKafka,
    ResolvedPipeline, Route, StartPosition, Topics,
};
pub use super::sources::{DeltaSourceConfig, ResolvedDeltaSource, UpsertConfig, UpsertFormat, DEFAULT_INDEX_MEMORY};

/// One pipeline.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// The target table URL or path.
    pub table: String,
    /// Names this pipeline's positions in the table (`txn` appId `<app_id>-<topic>-<partition>`);
    /// default: the pipeline name. Never change it for a running table.
    #[serde(default)]
    pub app_id: Option<String>,
    /// Create the table on the first batch when it does not exist.
    #[serde(default)]
    pub create: bool,
    /// Delta schema JSON (as in `metaData.schemaString`) for a new table; inferred from the
    /// first batch when absent.
    #[serde(default)]
    pub schema: Option<String>,
    #[serde(default)]
    pub partition_by: Vec<String>,
    /// Clustering columns of a new table (at most 4; not with `partition_by`).
    #[serde(default)]
    pub cluster_by: Vec<String>,
    /// Table properties of a new table.
    #[serde(default)]
    pub properties: HashMap<String, String>,
    /// Add new nullable columns found in records to the table schema.
    #[serde(default)]
    pub evolve_schema: bool,
    /// JSON fields that land as `variant` columns whatever their shape (new tables and new
    /// columns; a declared schema types them `variant` itself).
    #[serde(default)]
    pub variant_columns: Vec<String>,
    /// The `variant` column the whole JSON record lands in (a new table has it alone, beside
    /// the record columns); not with `variant_columns`.
    #[serde(default)]
    pub record_variant: Option<String>,
    /// The Kafka source (give this or `delta`).
    #[serde(default)]
    pub kafka: KafkaConfig,
    /// The Delta-table source: its change feed, followed exactly once.
    #[serde(default)]
    pub delta: Option<DeltaSourceConfig>,
    /// Keyed ingestion: records upsert or delete rows by key (Kafka sources only).
    #[serde(default)]
    pub upsert: Option<UpsertConfig>,
    /// The schema registry of `kafka.format = "avro"` topics.
    #[serde(default)]
    pub schema_registry: Option<crate::config::registry::RegistryConfig>,
    #[serde(default)]
    pub flush: FlushConfig,
    #[serde(default)]
    pub columns: RecordColumns,
    #[serde(default)]
    pub dead_letter: DeadLetterConfig,
    #[serde(default)]
    pub compaction: CompactionConfig,
    /// Who commits the flushes: each worker, or one committer per table.
    #[serde(default)]
    pub commit: super::commit::CommitConfig,
    /// Content routing: each record goes to the table named by `table` with `{<field>}`
    /// replaced by this (top-level or dotted) JSON field's value; tables are created on demand.
    #[serde(default)]
    pub route_by: Option<String>,
    /// The most tables a routed pipeline writes; records for more are dead letters.
    #[serde(default = "default_max_tables")]
    pub max_tables: usize,
    /// Where a routed pipeline records the positions all its tables hold (a Delta table of
    /// `txn`s only); default `<directory of the table template>/_deltabus_routes/<app_id>`.
    #[serde(default)]
    pub route_state: Option<String>,
}

fn default_max_tables() -> usize {
    100
}

impl PipelineConfig {
    /// A pipeline with every optional key at its default, as a config file naming only
    /// `table`, `kafka.brokers` and `kafka.topic` gives.
    pub fn new(table: impl Into<String>, brokers: impl Into<String>, topic: impl Into<String>) -> Self {
        PipelineConfig {
            table: table.into(),
            app_id: None,
            create: false,
            schema: None,
            partition_by: Vec::new(),
            cluster_by: Vec::new(),
            properties: HashMap::new(),
            evolve_schema: false,
            variant_columns: Vec::new(),
            record_variant: None,
            kafka: KafkaConfig { brokers: brokers.into(), topic: topic.into(), ..KafkaConfig::default() },
            delta: None,
            upsert: None,
            schema_registry: None,
            flush: FlushConfig::default(),
            columns: RecordColumns::default(),
            dead_letter: DeadLetterConfig::default(),
            compaction: CompactionConfig::default(),
            commit: super::commit::CommitConfig::default(),
            route_by: None,
            max_tables: default_max_tables(),
            route_state: None,
        }
    }
}

/// `[pipelines.<name>.compaction]`: the background compactor beside the pipeline.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompactionConfig {
    pub enabled: bool,
    /// A partition is compacted once it holds this many small files (Spark: 50).
    pub min_files: usize,
    /// Files below this size are small; bins aim at it (default: delta.targetFileSize, else 128MiB).
    pub target_file_size: Option<ByteSize>,
    /// How often to look.
    pub interval: HumanDuration,
    /// A file whose deletion vector deletes more than this fraction of its rows is rewritten
    /// (purging them) whatever `min_files` says: keyed pipelines' deleted rows stay bounded.
    pub deleted_rows_ratio: f64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            enabled: false,
            min_files: 50,
            target_file_size: None,
            interval: HumanDuration::from_secs(60),
            deleted_rows_ratio: 0.2,
        }
    }
}

/// `[pipelines.<name>.kafka]`
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaConfig {
    pub brokers: String,
    /// One topic; or several with `topics`, or every topic matching `topic_pattern`.
    #[serde(default)]
    pub topic: String,
    /// Several topics, each consumed by its own consumer of the group into `table` (where
    /// `{topic}` names the topic).
    #[serde(default)]
    pub topics: Vec<String>,
    /// Every topic whose whole name matches this regular expression, now and later.
    #[serde(default)]
    pub topic_pattern: Option<String>,
    /// How often `topic_pattern` looks for new topics.
    #[serde(default = "default_topic_refresh")]
    pub topic_refresh: HumanDuration,
    /// Consumer group; default: the app id.
    #[serde(default)]
    pub group_id: Option<String>,
    /// Where partitions without a position in the table start: `earliest`, `latest`,
    /// `timestamp:<RFC 3339 or ms since epoch>`, or `offsets:<partition>=<offset>,...` (others: earliest).
    #[serde(default = "default_start")]
    pub start: String,
    /// `cooperative-sticky` (incremental rebalances), `range` or `roundrobin` (eager).
    #[serde(default)]
    pub assignment: Assignment,
    /// Payload format: `json`, or `avro` (Confluent wire format with `[schema_registry]`).
    #[serde(default = "default_format")]
    pub format: String,
    /// `format = "avro"` without a registry: every payload is a plain datum of this schema.
    #[serde(default)]
    pub avro_schema: Option<String>,
    /// Records above this size go to the dead-letter destination.
    #[serde(default = "default_max_record")]
    pub max_record_bytes: ByteSize,
    /// A partition whose recorded position the broker no longer holds (records deleted by
    /// retention before ingestion, or a recreated topic) stops the pipeline with an error;
    /// `false` skips to the broker's earliest offset and counts the lost offsets.
    #[serde(default = "default_true")]
    pub fail_on_data_loss: bool,
    /// Ingest up to the partitions' ends as seen when they are assigned, commit, and stop
    /// (backfills and batch jobs): `deltabus run` exits 0 once every pipeline has.
    #[serde(default)]
    pub stop_at_end: bool,
    /// With `stop_at_end`: fail when no record arrives and no partition is assigned for this
    /// long (an unreachable broker, a missing topic) instead of waiting for ever.
    #[serde(default = "default_stall_timeout")]
    pub stall_timeout: HumanDuration,
    /// librdkafka properties passed through (security.protocol, sasl.*, ssl.*, ...).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

fn default_true() -> bool {
    true
}

fn default_stall_timeout() -> HumanDuration {
    HumanDuration::from_secs(60)
}

fn default_topic_refresh() -> HumanDuration {
    HumanDuration::from_secs(30)
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            brokers: String::new(),
            topic: String::new(),
            topics: Vec::new(),
            topic_pattern: None,
            topic_refresh: default_topic_refresh(),
            group_id: None,
            start: default_start(),
            assignment: Assignment::default(),
            format: default_format(),
            avro_schema: None,
            max_record_bytes: default_max_record(),
            fail_on_data_loss: true,
            stop_at_end: false,
            stall_timeout: default_stall_timeout(),
            properties: BTreeMap::new(),
        }
    }
}

impl std::fmt::Debug for KafkaConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaConfig")
            .field("brokers", &super::redact::without_userinfo(&self.brokers))
            .field("topic", &self.topic)
            .field("topics", &self.topics)
            .field("topic_pattern", &self.topic_pattern)
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

/// `[pipelines.<name>.flush]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlushConfig {
    pub max_latency: HumanDuration,
    pub max_rows: u64,
    /// Also the bound on buffered memory: consumption stops while a full batch commits.
    pub max_bytes: ByteSize,
    /// Default: the table's `delta.targetFileSize`, else 128MiB.
    pub target_file_size: Option<ByteSize>,
    /// Rate limits; 0 = unlimited.
    pub records_per_second: u32,
    pub bytes_per_second: u32,
}

impl Default for FlushConfig {
    fn default() -> Self {
        FlushConfig {
            max_latency: HumanDuration::from_secs(10),
            max_rows: 1_000_000,
            max_bytes: ByteSize::mib(256),
            target_file_size: None,
            records_per_second: 0,
            bytes_per_second: 0,
        }
    }
}

/// `[pipelines.<name>.columns]`: optional columns filled from the Kafka record rather than the
/// payload; each value is the column name (added to an inferred schema automatically).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RecordColumns {
    /// string (UTF-8; a key that is not UTF-8 makes the record a dead letter)
    pub key: Option<String>,
    /// map<string, string>
    pub headers: Option<String>,
    /// string
    pub topic: Option<String>,
    /// integer
    pub partition: Option<String>,
    /// long
    pub offset: Option<String>,
    /// timestamp (the record's create or log-append time)
    pub timestamp: Option<String>,
}

impl RecordColumns {
    /// The configured column names.
    pub fn names(&self) -> Vec<&str> {
        [&self.key, &self.headers, &self.topic, &self.partition, &self.offset, &self.timestamp]
            .into_iter()
            .filter_map(|c| c.as_deref())
            .collect()
    }
}

/// `[pipelines.<name>.dead_letter]`: where undecodable records go. With neither, they are
/// logged and counted, and skipped.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeadLetterConfig {
    /// A Delta table (created when missing), committed in the same cadence, exactly once.
    pub table: Option<String>,
    /// A Kafka topic on the source cluster (at least once: produced before the table commit).
    pub topic: Option<String>,
}

fn default_start() -> String {
    "earliest".into()
}
fn default_format() -> String {
    "json".into()
}
/// How a consumer group spreads partitions (`kafka.assignment`, `--assignment`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String")]
pub enum Assignment {
    /// Incremental rebalances: members keep what they own.
    #[default]
    #[serde(rename = "cooperative-sticky")]
    CooperativeSticky,
    /// Eager rebalances, ranges of partitions.
    #[serde(rename = "range")]
    Range,
    /// Eager rebalances, partitions dealt in turn.
    #[serde(rename = "roundrobin")]
    RoundRobin,
    /// KIP-848's consumer group protocol (`group.protocol=consumer`, Kafka 4 brokers): the
    /// broker assigns partitions, incrementally, and no member stops the others to rebalance.
    #[serde(rename = "consumer")]
    Consumer,
}

impl Assignment {
    /// librdkafka's `partition.assignment.strategy` (for [`Assignment::Consumer`], the name
    /// of the protocol: the broker chooses).
    pub fn as_str(self) -> &'static str {
        match self {
            Assignment::CooperativeSticky => "cooperative-sticky",
            Assignment::Range => "range",
            Assignment::RoundRobin => "roundrobin",
            Assignment::Consumer => "consumer",
        }
    }
}

setting_values!(Assignment {
    "cooperative-sticky" => CooperativeSticky,
    "range" => Range,
    "roundrobin" => RoundRobin,
    "consumer" => Consumer,
});
fn default_max_record() -> ByteSize {
    ByteSize::mib(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal() -> PipelineConfig {
        toml_pipeline("table = \"/tmp/t\"\n[kafka]\nbrokers = \"127.0.0.1:9092\"\ntopic = \"events\"\n")
    }

    #[test]
    fn new_gives_the_file_defaults() {
        let built = format!("{:?}", PipelineConfig::new("/tmp/t", "127.0.0.1:9092", "events"));
        assert_eq!(built, format!("{:?}", minimal()));
    }

    fn toml_pipeline(s: &str) -> PipelineConfig {
        config::Config::builder()
            .add_source(config::File::from_str(s, config::FileFormat::Toml))
            .build()
            .unwrap()
            .try_deserialize()
            .unwrap()
    }

    #[test]
    fn defaults_resolve() {
        let r = minimal().validate("orders").unwrap();
        let Pipeline::Kafka(kafka) = r.clone().kind() else { panic!("a Kafka pipeline") };
        let k = &kafka.kafka;
        assert_eq!((r.app_id.as_str(), k.group_id.as_str()), ("orders", "orders"));
        assert_eq!(k.start, StartPosition::Earliest);
        assert_eq!(r.policy.max_bytes, 256 << 20);
        assert_eq!(r.policy.max_latency, std::time::Duration::from_secs(10));
        assert_eq!(k.max_record_bytes, 1 << 20);
        assert_eq!(k.assignment, Assignment::CooperativeSticky);
        assert!(r.compaction.is_none());
    }

    #[test]
    fn a_delta_source_replaces_kafka() {
        let c = toml_pipeline(
            "table = \"/tmp/replica\"\n[delta]\nsource = \"/tmp/orders\"\nstart = \"7\"\nfilter = \"n > 3\"\n",
        );
        let r = c.validate("replica").unwrap();
        let PipelineSource::Delta(d) = r.source else { panic!("a Delta source") };
        assert_eq!((d.source.as_str(), d.follower_id.as_str()), ("/tmp/orders", "replica"));
        assert_eq!(d.options.start, crate::common::follow::StartAt::Version(7));
        assert!(d.options.filter.is_some());
        let mut both = c.clone();
        both.kafka.brokers = "b:9092".into();
        assert!(both.validate("x").unwrap_err().to_string().contains("not both"));
        let mut bad = c.clone();
        bad.delta.as_mut().unwrap().start = "soon".into();
        assert!(bad.validate("x").unwrap_err().to_string().contains("pipelines.x.delta.start"));
        let none = toml_pipeline("table = \"/tmp/t\"\n");
        assert!(none.validate("x").unwrap_err().to_string().contains("pipelines.x.kafka"));
    }

    #[test]
    fn upsert_settings_are_checked() {
        let mut c = minimal();
        c.upsert = Some(UpsertConfig {
            key_columns: vec!["id".into()],
            format: UpsertFormat::Debezium,
            op_field: None,
            index_memory: crate::config::DEFAULT_INDEX_MEMORY,
        });
        assert_eq!(c.validate("p").unwrap().upsert.unwrap().key_columns, vec!["id".to_string()]);
        assert_eq!("avro".parse::<UpsertFormat>().unwrap_err(), "\"avro\" is not plain or debezium");
        c.upsert = Some(UpsertConfig {
            key_columns: vec![],
            format: UpsertFormat::Plain,
            op_field: None,
            index_memory: crate::config::DEFAULT_INDEX_MEMORY,
        });
        assert!(c.validate("p").unwrap_err().to_string().contains("upsert.key_columns"));
    }

    #[test]
    fn start_positions_parse() {
        assert_eq!(StartPosition::parse("latest").unwrap(), StartPosition::Latest);
        assert_eq!(
            StartPosition::parse("timestamp:1700000000000").unwrap(),
            StartPosition::Timestamp(1_700_000_000_000)
        );
        assert_eq!(
            StartPosition::parse("offsets:0=5, 2=7").unwrap(),
            StartPosition::Offsets(BTreeMap::from([(0, 5), (2, 7)]))
        );
        assert!(StartPosition::parse("offsets:0").is_err());
        assert!(StartPosition::parse("beginning").is_err());
    }

    #[test]
    fn bad_values_name_their_key_and_secrets_stay_hidden() {
        assert_eq!(
            "sticky".parse::<Assignment>().unwrap_err(),
            "\"sticky\" is not cooperative-sticky, range, roundrobin or consumer"
        );
        assert_eq!("consumer".parse::<Assignment>(), Ok(Assignment::Consumer));
        let parsed = toml::from_str::<PipelineConfig>("table = \"/t\"\n[kafka]\nassignment = \"sticky\"\n");
        let e = parsed.unwrap_err().to_string();
        assert!(e.contains("assignment") && e.contains("cooperative-sticky"), "{e}");
        let parsed = toml::from_str::<PipelineConfig>("table = \"/t\"\n[flush]\nmax_bytes = \"lots\"\n");
        assert!(parsed.unwrap_err().to_string().contains("\"lots\" is not a size"));
        let mut c = minimal();
        c.kafka.properties.insert("group.id".into(), "x".into());
        assert!(c.validate("p").is_err());
        let mut c = minimal();
        c.columns.key = Some("k".into());
        c.columns.offset = Some("k".into());
        assert!(c.validate("p").unwrap_err().to_string().contains("used twice"));
        let mut c = minimal();
        c.kafka.properties.insert("sasl.password".into(), "hunter2".into());
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
