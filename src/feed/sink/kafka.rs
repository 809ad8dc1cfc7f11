//! The Kafka sink: change rows as JSON records on a topic, with the follower's position written
//! in the same Kafka transaction to a progress topic.
//!
//! - The producer is transactional with `transactional.id = deltabus.<follower>.<source table
//!   id>`: starting it fences any older instance of the same follower (a zombie can no longer
//!   commit) and completes or aborts its open transaction.
//! - Each source commit with rows is one transaction: its rows (value = the row as JSON with
//!   `_change_type`, `_commit_version`, `_commit_timestamp`; key = the configured key columns;
//!   headers `deltabus.change_type` and `deltabus.commit_version`) and one progress record
//!   (key `<follower>-<source table id>`, value `{"version": v, ...}`) to partition 0 of the
//!   progress topic, which should be compacted with one partition.
//! - On start the position is the last progress record for this key, read with
//!   `isolation.level=read_committed` after the fencing, up to the progress partition's high
//!   watermark taken then (not merely to the first "end of partition": another follower's
//!   open transaction holds the last stable offset back, which would hide our newest record
//!   and make us deliver again). So a crash at any point neither repeats nor skips a commit
//!   for consumers that read committed records.

use std::collections::BTreeMap;
use std::time::Duration;

use arrow::array::{Array, ArrayRef, StructArray};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};

use crate::common::kafka_log::LoggedContext;
use crate::source::kafka::client::{client_config, Role};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};

use super::ChangeSink;
use crate::delta::arrow_value::value_at;
use crate::delta::json_rows::JsonRows;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::change_cursor::CommitChanges;

const TXN_TIMEOUT: Duration = Duration::from_secs(60);

/// Where and how the sink produces.
#[derive(Debug, Clone)]
pub(crate) struct KafkaSinkConfig {
    pub brokers: String,
    pub topic: String,
    pub progress_topic: String,
    pub follower_id: String,
    pub source_table_id: String,
    /// Columns whose values form the record key (none: records without a key).
    pub key_columns: Vec<String>,
    /// librdkafka properties for the producer and the progress reader (security and so on).
    pub properties: BTreeMap<String, String>,
}

impl KafkaSinkConfig {
    fn progress_key(&self) -> String {
        crate::delta::app_id::TxnAppId::Follower {
            follower: self.follower_id.clone(),
            source_table_id: self.source_table_id.clone(),
        }
        .to_string()
    }

    fn client(&self, role: Role) -> ClientConfig {
        client_config(&self.brokers, &self.properties, role)
    }
}

/// The transactional Kafka sink.
pub(crate) struct KafkaSink {
    cfg: KafkaSinkConfig,
    producer: FutureProducer<LoggedContext>,
    /// The producer's context: what the brokers refused, if they did.
    context: LoggedContext,
    /// Transactions committed and rows produced.
    pub transactions: u64,
    pub rows: u64,
}

fn kafka(what: &str) -> impl Fn(KafkaError) -> Error + '_ {
    move |e| Error::Kafka(format!("{what}: {e}"))
}

/// A transaction step's failure: [`Error::Fenced`] when a newer producer with the same
/// transactional id took over (librdkafka's `_FENCED`, `PRODUCER_FENCED` or an old epoch, as the
/// step's own error code or as the code of the producer's fatal error), else [`Error::Kafka`].
fn txn_failure<'a>(what: &'a str, producer: &'a FutureProducer<LoggedContext>) -> impl Fn(KafkaError) -> Error + 'a {
    move |e| classify_txn_failure(what, &e, producer.client().fatal_error().map(|(code, _)| code))
}

fn classify_txn_failure(what: &str, e: &KafkaError, fatal: Option<RDKafkaErrorCode>) -> Error {
    use rdkafka::types::RDKafkaErrorCode as Code;
    let fencing = |c: Option<Code>| matches!(c, Some(Code::Fenced | Code::ProducerFenced | Code::InvalidProducerEpoch));
    if fencing(e.rdkafka_error_code()) || fencing(fatal) {
        Error::Fenced(format!("{what}: {e}"))
    } else {
        Error::Kafka(format!("{what}: {e}"))
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::Internal(format!("blocking Kafka call: {e}")))?
}

/// The progress topic exists, or is created (one partition, compacted; the broker's default
/// replication) where the cluster allows it.
///
/// # Errors
/// [`Error::Kafka`] naming the topic and how to create it when it is missing and cannot be
/// created.
fn ensure_progress_topic(cfg: &KafkaSinkConfig) -> Result<()> {
    let topic = cfg.progress_topic.as_str();
    let how = format!(
        "create it with one partition and cleanup.policy=compact (e.g. kafka-topics.sh --create --topic {topic} \
         --partitions 1 --config cleanup.policy=compact), or name another with --progress-topic"
    );
    let compact = [("cleanup.policy", "compact")];
    if crate::source::kafka::topics::ensure_one_partition(&cfg.client(Role::Producer), topic, &compact, &how)? {
        tracing::info!(topic, "tail.progress_topic_created: one partition, compacted");
    }
    Ok(())
}

impl KafkaSink {
    /// Creates the producer and fences older instances of this follower.
    ///
    /// # Errors
    /// [`Error::Kafka`] when the producer cannot be created or initialised.
    pub(crate) async fn open(cfg: KafkaSinkConfig) -> Result<KafkaSink> {
        let for_topic = cfg.clone();
        blocking(move || ensure_progress_topic(&for_topic)).await?;
        let mut client = cfg.client(Role::Producer);
        client
            .set("transactional.id", format!("deltabus.{}.{}", cfg.follower_id, cfg.source_table_id))
            .set("enable.idempotence", "true")
            .set("transaction.timeout.ms", TXN_TIMEOUT.as_millis().to_string());
        let context = LoggedContext::default();
        let producer: FutureProducer<LoggedContext> =
            client.create_with_context(context.clone()).map_err(kafka("change producer"))?;
        let (p, c) = (producer.clone(), context.clone());
        blocking(move || p.init_transactions(TXN_TIMEOUT).map_err(|e| c.failure("init transactions", e))).await?;
        Ok(KafkaSink { cfg, producer, context, transactions: 0, rows: 0 })
    }

    /// `e`, or the brokers' refusal of this producer's credentials or permissions when there
    /// was one (a transaction step then fails with a timeout or a transport error).
    fn refused_or(&self, e: Error) -> Error {
        match e {
            Error::Kafka(what) => self.context.failure(&what, ""),
            other => other,
        }
    }

    fn read_position(cfg: &KafkaSinkConfig) -> Result<Option<u64>> {
        let consumer: BaseConsumer<LoggedContext> = cfg
            .client(Role::Consumer)
            .set("group.id", format!("deltabus.progress.{}", cfg.follower_id))
            .set("isolation.level", "read_committed")
            .set("enable.partition.eof", "true")
            .set("enable.auto.commit", "false")
            .create_with_context(LoggedContext::default())
            .map_err(kafka("progress reader"))?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&cfg.progress_topic, 0, Offset::Beginning).map_err(kafka("progress reader"))?;
        consumer.assign(&tpl).map_err(kafka("progress reader"))?;
        let key = cfg.progress_key();
        // Everything written to the progress partition before now must be read (our own last
        // record included). read_committed stops at the last stable offset, which another
        // follower's open transaction holds back: "end of partition" there is not the end,
        // so reading goes on until the position passes the high watermark taken now.
        let (_, high) = consumer
            .fetch_watermarks(&cfg.progress_topic, 0, TXN_TIMEOUT)
            .map_err(|e| consumer.context().failure("progress watermarks", e))?;
        let mut version = None;
        let deadline = tokio::time::Instant::now() + TXN_TIMEOUT.saturating_mul(2);
        loop {
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Kafka(format!(
                    "reading {} did not reach offset {high} (a transaction stays open on it)",
                    cfg.progress_topic
                )));
            }
            match consumer.poll(Duration::from_millis(200)) {
                None => continue,
                Some(Err(KafkaError::PartitionEOF(_))) => {
                    let at = consumer
                        .position()
                        .ok()
                        .and_then(|tpl| tpl.find_partition(&cfg.progress_topic, 0).map(|e| e.offset()));
                    match at {
                        Some(Offset::Offset(o)) if o >= high => return Ok(version),
                        _ if high == 0 => return Ok(version),
                        _ => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
                Some(Err(e)) => return Err(consumer.context().failure("progress reader", e)),
                Some(Ok(m)) if m.key() == Some(key.as_bytes()) => {
                    let value: Value = m
                        .payload()
                        .and_then(|p| serde_json::from_slice(p).ok())
                        .ok_or_else(|| Error::Kafka(format!("unreadable progress record at offset {}", m.offset())))?;
                    version = value.get("version").and_then(Value::as_u64);
                }
                Some(Ok(_)) => {}
            }
        }
    }

    /// The key of row `i`: one key column's value as text (strings unquoted), several as a
    /// JSON array; `null` for a missing or null value.
    fn key_at(keys: &[Option<ArrayRef>], i: usize) -> Option<String> {
        let value = |c: &Option<ArrayRef>| c.as_ref().map_or(Value::Null, |c| value_at(c.as_ref(), i));
        match keys {
            [] => None,
            [one] => Some(match value(one) {
                Value::String(s) => s,
                v => v.to_string(),
            }),
            many => Some(Value::Array(many.iter().map(value).collect()).to_string()),
        }
    }

    async fn send(&self, record: FutureRecord<'_, str, str>) -> Result<()> {
        let mut record = record;
        loop {
            match self.producer.send_result(record) {
                // The delivery is confirmed by the transaction commit.
                Ok(_) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err((e, _)) => return Err(txn_failure("produce", &self.producer)(e)),
            }
        }
    }

    async fn produce(&self, changes: &CommitChanges) -> Result<u64> {
        let mut rows = 0;
        let version = changes.version.to_string();
        for batch in &changes.batches {
            let array = StructArray::from(batch.clone());
            let json = JsonRows::new(&array);
            let change = batch.column_by_name("_change_type");
            let keys: Vec<Option<ArrayRef>> =
                self.cfg.key_columns.iter().map(|c| batch.column_by_name(c).cloned()).collect();
            let mut text = Vec::with_capacity(1024);
            for i in 0..array.len() {
                let change_type = match change.map(|c| value_at(c.as_ref(), i)) {
                    Some(Value::String(s)) => s,
                    _ => String::new(),
                };
                text.clear();
                json.write(i, &mut text);
                // JSON text from `str`s and ASCII is UTF-8.
                let payload = String::from_utf8_lossy(&text);
                let key = Self::key_at(&keys, i);
                let headers = OwnedHeaders::new()
                    .insert(Header { key: "deltabus.change_type", value: Some(change_type.as_bytes()) })
                    .insert(Header { key: "deltabus.commit_version", value: Some(version.as_bytes()) });
                let mut record = FutureRecord::<str, str>::to(&self.cfg.topic).payload(&*payload).headers(headers);
                if let Some(k) = &key {
                    record = record.key(k.as_str());
                }
                self.send(record).await?;
                rows += 1;
            }
        }
        let progress = json!({"version": changes.version, "followerId": self.cfg.follower_id,
            "sourceTableId": self.cfg.source_table_id, "rows": rows})
        .to_string();
        let key = self.cfg.progress_key();
        self.send(
            FutureRecord::<str, str>::to(&self.cfg.progress_topic)
                .partition(0)
                .key(key.as_str())
                .payload(progress.as_str()),
        )
        .await?;
        Ok(rows)
    }
}

impl ChangeSink for KafkaSink {
    async fn position(&mut self) -> Result<Option<u64>> {
        let cfg = self.cfg.clone();
        blocking(move || KafkaSink::read_position(&cfg)).await
    }

    async fn deliver(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        if changes.rows() == 0 {
            return Ok(());
        }
        self.mark(source, changes).await
    }

    /// One transaction with the rows (none for a mark) and the progress record.
    async fn mark(&mut self, _source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.producer
            .begin_transaction()
            .map_err(|e| self.refused_or(txn_failure("begin transaction", &self.producer)(e)))?;
        let produced = self.produce(changes).await;
        let p = self.producer.clone();
        match produced {
            Ok(rows) => {
                let committed =
                    blocking(move || p.commit_transaction(TXN_TIMEOUT).map_err(txn_failure("commit transaction", &p)));
                committed.await.map_err(|e| self.refused_or(e))?;
                self.transactions += 1;
                self.rows += rows;
                Ok(())
            }
            Err(e) => {
                let _ = blocking(move || p.abort_transaction(TXN_TIMEOUT).map_err(kafka("abort transaction"))).await;
                Err(e)
            }
        }
    }

    fn name(&self) -> &'static str {
        "kafka"
    }
}

/// The Kafka sink of a consumer group: one transactional producer per held slice, with
/// `transactional.id = deltabus.<group>.<slice>.<source table id>` and the slice's progress
/// record (key `<group>.<slice>-<source table id>`) in each of its transactions. Taking a
/// slice starts its producer, which fences the slice's previous holder (a paused member that
/// wakes up can no longer commit for it) before its position is read.
pub(crate) struct KafkaGroupSink {
    cfg: KafkaSinkConfig,
    slices: BTreeMap<u32, KafkaSink>,
    /// The group as one follower named after it (opened when first used that way).
    whole: Option<KafkaSink>,
}

impl KafkaGroupSink {
    /// `cfg.follower_id` is the group's name.
    pub(crate) fn new(cfg: KafkaSinkConfig) -> KafkaGroupSink {
        KafkaGroupSink { cfg, slices: BTreeMap::new(), whole: None }
    }

    async fn whole(&mut self) -> Result<&mut KafkaSink> {
        if self.whole.is_none() {
            self.whole = Some(KafkaSink::open(self.cfg.clone()).await?);
        }
        self.whole.as_mut().ok_or_else(|| Error::Internal("the group's producer is not open".into()))
    }
}

/// As a single follower the group is one follower named after it (one transactional producer
/// and progress record); as members it delivers slices, each through its own producer.
impl ChangeSink for KafkaGroupSink {
    async fn position(&mut self) -> Result<Option<u64>> {
        self.whole().await?.position().await
    }

    async fn deliver(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.whole().await?.deliver(source, changes).await
    }

    async fn mark(&mut self, source: &Snapshot, changes: &CommitChanges) -> Result<()> {
        self.whole().await?.mark(source, changes).await
    }

    fn name(&self) -> &'static str {
        "kafka"
    }

    async fn slice_position(&mut self, slice: u32) -> Result<Option<u64>> {
        let cfg = KafkaSinkConfig { follower_id: format!("{}.{slice}", self.cfg.follower_id), ..self.cfg.clone() };
        let mut sink = KafkaSink::open(cfg).await?;
        let position = sink.position().await?;
        self.slices.insert(slice, sink);
        Ok(position.map(|v| v + 1))
    }

    async fn deliver_slices(
        &mut self,
        source: &Snapshot,
        changes: &CommitChanges,
        slices: &BTreeMap<u32, Vec<arrow::array::RecordBatch>>,
    ) -> Result<Vec<u32>> {
        let mut lost = Vec::new();
        for (slice, batches) in slices {
            let sink = self
                .slices
                .get_mut(slice)
                .ok_or_else(|| Error::Internal(format!("slice {slice} delivered before its producer started")))?;
            // A slice without rows keeps its older position: the next holder reads the commits
            // between again and finds nothing for it.
            match sink.deliver(source, &changes.with_batches(batches.clone())).await {
                Ok(()) => {}
                // The slice's next holder started its producer: its transaction was aborted,
                // and the slice is that holder's now. The other slices go on.
                Err(Error::Fenced(why)) => {
                    tracing::warn!(slice, reason = %why, "group.slice_fenced: another member holds it now");
                    self.slices.remove(slice);
                    lost.push(*slice);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::types::RDKafkaErrorCode as Code;

    /// librdkafka's mock cluster gives a second producer of a transactional id a new producer
    /// id instead of bumping the first one's epoch, so it never fences: the classification that
    /// makes a group member give up a fenced slice is checked here on the errors a broker sends.
    #[test]
    fn fencing_errors_are_told_from_other_kafka_errors() {
        let fenced = [
            KafkaError::MessageProduction(Code::ProducerFenced),
            KafkaError::MessageProduction(Code::InvalidProducerEpoch),
            KafkaError::MessageProduction(Code::Fenced),
        ];
        for e in fenced {
            assert!(matches!(classify_txn_failure("produce", &e, None), Error::Fenced(_)));
        }
        // A fatal error ends every later step with `_FATAL`; the producer's fatal error says why.
        let fatal = KafkaError::MessageProduction(Code::Fatal);
        let e = classify_txn_failure("commit transaction", &fatal, Some(Code::ProducerFenced));
        assert!(matches!(e, Error::Fenced(_)), "{e}");
        assert!(matches!(classify_txn_failure("produce", &fatal, None), Error::Kafka(_)));
        let transport = KafkaError::MessageProduction(Code::BrokerTransportFailure);
        let other = classify_txn_failure("commit transaction", &transport, None);
        assert!(matches!(&other, Error::Kafka(m) if m.starts_with("commit transaction: ")), "{other}");
        assert!(!other.is_retryable());
    }
}
