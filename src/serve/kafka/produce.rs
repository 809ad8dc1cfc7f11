//! Produce: each partition's batches decoded into rows and handed to their table's group
//! committer (the push server's: its commit window, size bound and dead letters), answered
//! after the commit that holds them.
//!
//! Contract:
//! - `acks=-1` (all) and `acks=1` are both answered after the commit landed (a table has no
//!   replicas to wait for); `acks=0` is not answered, and a batch the server loses before its
//!   commit is lost (at most once).
//! - A request holds `HOLD_FACTOR` times its bytes of `server.max_buffered` from when its
//!   frame is read until it is answered (`frame`): the frame, and its partitions' records
//!   `HOLD_FACTOR - 1` times their bytes as sent. Records that inflate take `HOLD_FACTOR - 1`
//!   times the bytes they grew by more once inflated. A request that cannot get that room
//!   within its `timeout_ms` gets REQUEST_TIMED_OUT for the partitions concerned (the client
//!   retries the same sequences), one larger than the whole budget MESSAGE_TOO_LARGE.
//! - Outcomes: committed → NONE with the commit's feed position as base offset; already in
//!   the table → NONE (a retry of a batch that landed, base offset -1); a batch of an older
//!   epoch than the table holds → INVALID_PRODUCER_EPOCH; a sequence gap →
//!   OUT_OF_ORDER_SEQUENCE_NUMBER; records that do not decode → INVALID_RECORD naming them
//!   (or dead letters, as the topic says); a commit that failed or whose outcome is unknown →
//!   KAFKA_STORAGE_ERROR, which the client retries with the same sequences.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_request::PartitionProduceData;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::oneshot;

use super::acl::TopicOp;
use super::frame::Held;
use super::records::{self, Batch};
use super::registered;
use super::session::Turn;
use super::wire::{Head, Reply, Step};
use super::{Caller, Shared};
use crate::config::kafka::{BadRecords, KafkaTopic};
use crate::serve::attendance::InFlight;
use crate::serve::body::{BadLines, Refusal, Rows};
use crate::serve::group::{KeyedChanges, Outcome, Pending};
use crate::serve::routes::TableHandle;

/// Rows per commit version in a feed position (`version << ROW_BITS | row`).
pub(crate) const ROW_BITS: u32 = 24;

/// Takes a Produce request: its batches go to the committers after those of the connection's
/// request before it (`turn`), and it is answered once every partition's batches are decided.
pub(crate) fn take(shared: &Arc<Shared>, head: &Head, request: ProduceRequest, caller: Caller, turn: Turn) -> Step {
    let (shared, head) = (shared.clone(), *head);
    Step::Later(Box::pin(async move {
        let acks = request.acks;
        let answer = produce(&shared, head.version, request, &caller, turn).await;
        if acks == 0 {
            Reply { frame: None, close: false }
        } else {
            Reply::answer(head.encode(&answer))
        }
    }))
}

async fn produce(
    shared: &Arc<Shared>,
    version: i16,
    request: ProduceRequest,
    caller: &Caller,
    turn: Turn,
) -> ProduceResponse {
    let refuse_all = match request.acks {
        _ if request.transactional_id.as_ref().is_some_and(|t| !t.0.is_empty()) => {
            Some((ResponseError::TransactionalIdAuthorizationFailed, None))
        }
        -1..=1 if turn.held == Held::TimedOut => {
            shared.state.metrics.kafka().refused("overloaded");
            Some(overloaded())
        }
        -1..=1 => None,
        _ => Some((ResponseError::InvalidRequiredAcks, None)),
    };
    // Batches the client waits for count in its connection's attendance (`acks=0`: it waits
    // for nothing).
    let in_flight = (request.acks != 0).then_some(turn.in_flight);
    let timeout = super::frame::request_timeout(request.timeout_ms);
    let held = turn.held;
    // Every partition's batches are handed over (decoded concurrently) once the request
    // before this one's are, then the next request may hand over its own.
    if let Some(before) = turn.wait {
        let _ = before.await;
    }
    let mut topics = Vec::with_capacity(request.topic_data.len());
    for topic in request.topic_data {
        let name = topic.name.0.to_string();
        // A topic the caller may not produce to: every partition refused, nothing decoded.
        let known = shared.config.topics.contains_key(&name);
        let refuse_topic = match &refuse_all {
            None if known && !shared.may(caller, TopicOp::Produce, &name) => {
                Some((ResponseError::TopicAuthorizationFailed, None))
            }
            other => other.clone(),
        };
        let parts = topic.partition_data.into_iter().map(|data| {
            let (shared, name, in_flight, refuse_all) =
                (shared.clone(), name.clone(), in_flight.clone(), refuse_topic.clone());
            async move {
                let index = data.index;
                let handed = match refuse_all {
                    Some(failure) => Err(failure),
                    None => hand_over(&shared, &name, data, timeout, held, in_flight.as_ref()).await,
                };
                (index, handed)
            }
        });
        topics.push((topic.name, futures::future::join_all(parts).await));
    }
    drop(turn.done);
    let mut responses = Vec::with_capacity(topics.len());
    for (topic, parts) in topics {
        let name = topic.0.to_string();
        let answers = parts.into_iter().map(|(index, handed)| {
            let name = name.clone();
            let metrics = shared.state.metrics.kafka();
            async move {
                let answer = match handed {
                    Ok(h) => h.answer(&name, metrics).await,
                    Err(e) => Err(e),
                };
                if let Err((e, detail)) = &answer {
                    let message = detail.as_ref().map_or("", |(m, _)| m.as_str());
                    if *e == ResponseError::KafkaStorageError {
                        // The table's store failed the commit: every producer of it waits.
                        tracing::warn!(topic = %name, partition = index, message, "kafka.produce_failed: the table's commit failed");
                    } else {
                        tracing::info!(topic = %name, partition = index, error = ?e, message, "kafka.produce_refused");
                    }
                }
                answered(index, answer, version)
            }
        });
        let partition_responses = futures::future::join_all(answers).await;
        responses.push(TopicProduceResponse::default().with_name(topic).with_partition_responses(partition_responses));
    }
    ProduceResponse::default().with_responses(responses)
}

/// A partition's error: the code, and a message with the records it names.
type Failure = (ResponseError, Option<(String, Vec<(i32, String)>)>);

fn answered(index: i32, answer: Result<i64, Failure>, version: i16) -> PartitionProduceResponse {
    let r = PartitionProduceResponse::default().with_index(index).with_log_append_time_ms(-1).with_log_start_offset(-1);
    // Messages and record errors are carried from v8.
    let answer = answer.map_err(|(e, detail)| (e, detail.filter(|_| version >= 8)));
    match answer {
        Ok(base) => r.with_base_offset(base),
        Err((e, detail)) => {
            let r = r.with_error_code(e.code()).with_base_offset(-1);
            match detail {
                None => r,
                Some((message, named)) => {
                    r.with_error_message(Some(StrBytes::from_string(message))).with_record_errors(
                        named
                            .into_iter()
                            .map(|(i, why)| {
                                BatchIndexAndErrorMessage::default()
                                    .with_batch_index(i)
                                    .with_batch_index_error_message(Some(StrBytes::from_string(why)))
                            })
                            .collect(),
                    )
                }
            }
        }
    }
}

fn fail(e: ResponseError, message: impl Into<String>) -> Failure {
    (e, Some((message.into(), Vec::new())))
}

/// A partition's batches handed to their table's committer, waiting for their outcomes; the
/// records keep their room in `server.max_buffered` until then.
struct Handed {
    started: Instant,
    batches: Vec<(Batch, oneshot::Receiver<Outcome>, u64)>,
    _room: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Handed {
    /// The partition's answer: the first batch's base offset, or the first error.
    async fn answer(self, name: &str, metrics: &crate::metrics::kafka::KafkaMetrics) -> Result<i64, Failure> {
        let mut base = -1;
        for (batch, answer, count) in self.batches {
            let outcome = answer.await.unwrap_or(Outcome::Failed("the commit task stopped".into()));
            let seconds = self.started.elapsed().as_secs_f64();
            match outcome_of(&batch, outcome) {
                Ok(offset) => {
                    metrics.produced(name, if offset >= 0 { count } else { 0 }, seconds);
                    if base < 0 {
                        base = offset;
                    }
                }
                Err(e) => {
                    metrics.produce_failed(name, e.0);
                    return Err(e);
                }
            }
        }
        Ok(base)
    }
}

/// `bytes` of room in `server.max_buffered`, waited for until `deadline`.
async fn room(
    shared: &Shared,
    bytes: u64,
    deadline: tokio::time::Instant,
    metrics: &crate::metrics::kafka::KafkaMetrics,
) -> Result<tokio::sync::OwnedSemaphorePermit, Failure> {
    match tokio::time::timeout_at(deadline, shared.state.buffered.take(bytes)).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => {
            metrics.refused("overloaded");
            Err(overloaded())
        }
    }
}

fn overloaded() -> Failure {
    fail(ResponseError::RequestTimedOut, "over capacity: too many bytes in flight")
}

/// Checks, decodes and hands a partition's batches to its table's committer.
async fn hand_over(
    shared: &Arc<Shared>,
    name: &str,
    data: PartitionProduceData,
    timeout: Duration,
    held: Held,
    in_flight: Option<&Arc<InFlight>>,
) -> Result<Handed, Failure> {
    let started = Instant::now();
    let metrics = shared.state.metrics.kafka();
    let Some(topic) = shared.config.topics.get(name) else {
        return Err((ResponseError::UnknownTopicOrPartition, None));
    };
    if data.index < 0 || i64::from(data.index) >= i64::from(topic.partitions) {
        return Err((ResponseError::UnknownTopicOrPartition, None));
    }
    let Some(handle) = shared.state.tables.get(&topic.table) else {
        return Err((ResponseError::UnknownTopicOrPartition, None));
    };
    let Some(bytes) = data.records.filter(|b| !b.is_empty()) else {
        return Ok(Handed { started, batches: Vec::new(), _room: None });
    };
    if !handle.ready.load(Ordering::Acquire) {
        return Err(fail(ResponseError::KafkaStorageError, "the table is not open yet"));
    }
    // Records inflate to at most server.kafka.max_request a batch; they hold their inflated
    // size (or their compressed one, when larger) of the buffer budget until answered. The
    // room for their bytes as sent came with the frame (taken here when the frame was read
    // before authentication), the rest is taken once they are inflated, so that requests
    // waiting for room hold no more than the budget counts.
    let deadline = tokio::time::Instant::now() + timeout;
    let factor = crate::config::server::HOLD_FACTOR - 1;
    let too_large = |inflated: u64| {
        let why = format!("{inflated} bytes of records are over what server.max_buffered can hold");
        fail(ResponseError::MessageTooLarge, why)
    };
    let sent = (bytes.len() as u64).saturating_mul(factor).max(1);
    if sent > shared.state.config.max_buffered {
        return Err(too_large(bytes.len() as u64));
    }
    let mut permit = match held {
        Held::Records => None,
        Held::Frame | Held::TimedOut => Some(room(shared, sent, deadline, metrics).await?),
    };
    let batches =
        records::batches(name, data.index, &bytes, shared.config.max_request).map_err(|(e, why)| fail(e, why))?;
    let inflated: u64 = batches
        .iter()
        .flat_map(|b| &b.records)
        .map(|r| (r.key.as_ref().map_or(0, bytes::Bytes::len) + r.value.as_ref().map_or(0, bytes::Bytes::len)) as u64)
        .sum();
    // The frame holds its own bytes already (`conn`).
    let hold = inflated.max(bytes.len() as u64).saturating_mul(factor).max(1);
    if hold > shared.state.config.max_buffered {
        return Err(too_large(inflated));
    }
    if hold > sent {
        let more = room(shared, hold - sent, deadline, metrics).await?;
        match permit.as_mut() {
            Some(p) => p.merge(more),
            None => permit = Some(more),
        }
    }
    let mut handed = Vec::with_capacity(batches.len());
    for batch in batches {
        let (rows, keyed) = decode(shared, handle, name, topic, &batch, timeout).await?;
        let letters = bad_records(topic, name, data.index, &batch, rows.bad.clone())?;
        let (reply, answer) = oneshot::channel();
        let count = rows.count;
        let pending = Pending {
            producer: batch.producer.clone(),
            rows: rows.batches,
            schema: rows.schema,
            bad_lines: letters,
            bytes: batch.bytes,
            keyed,
            connection: in_flight.map(InFlight::hand),
            door: crate::serve::group::Door::Kafka,
            reply,
        };
        if handle.commits.send(pending).is_err() {
            return Err(fail(ResponseError::KafkaStorageError, "the server is stopping"));
        }
        handed.push((batch, answer, count));
    }
    Ok(Handed { started, batches: handed, _room: permit })
}

/// Decodes on the decoding threads against the table as last seen, and again against the
/// table as it is when that refuses the records (another writer may have added a column).
/// Registry topics first decode their values with the registry's schemas, within `timeout`.
async fn decode(
    shared: &Shared,
    handle: &TableHandle,
    name: &str,
    topic: &KafkaTopic,
    batch: &Batch,
    timeout: Duration,
) -> Result<(Rows, Option<KeyedChanges>), Failure> {
    let bad = match topic.bad_records {
        BadRecords::Refuse | BadRecords::DeadLetter => BadLines::DeadLetter,
    };
    let view = handle.latest.cached();
    let prepared = match shared.registered.get(name) {
        Some(decoders) => {
            let columns = view.as_ref().map(|v| Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&v.schema)));
            let keys = &handle.settings.settings.key_columns;
            match tokio::time::timeout(timeout, registered::prepare(decoders, batch, keys, columns)).await {
                Ok(p) => Some(Arc::new(p)),
                Err(_) => {
                    return Err(fail(ResponseError::KafkaStorageError, "the schema registry did not answer in time"))
                }
            }
        }
        None => None,
    };
    let run = |view: Option<Arc<crate::serve::latest::TableView>>| {
        let (settings, format, prepared) = (handle.settings.clone(), topic.format, prepared.clone());
        let records = Batch { producer: None, epoch: batch.epoch, records: batch.records.clone(), bytes: 0 };
        shared.state.decoders.run(move || {
            let current = view.as_ref().map(|v| &v.schema);
            match &prepared {
                Some(p) => registered::rows(p, &records, &settings, current),
                None => records::rows(format, &records, &settings, current, bad),
            }
        })
    };
    let mut decoded = run(view.clone()).await;
    if matches!(decoded, Some(Err(Refusal::Bad(_) | Refusal::NoTable(_)))) {
        if let Ok(fresh) = handle.latest.fresh().await {
            if fresh.as_ref().map(|v| v.version) != view.as_ref().map(|v| v.version) {
                decoded = run(fresh).await;
            }
        }
    }
    match decoded {
        Some(Ok(rows)) => Ok(rows),
        Some(Err(Refusal::Bad(why) | Refusal::TooLarge(why))) => Err(fail(ResponseError::InvalidRecord, why)),
        Some(Err(Refusal::NoTable(why))) => Err(fail(ResponseError::UnknownTopicOrPartition, why)),
        None => Err(fail(ResponseError::UnknownServerError, "the decoder failed")),
    }
}

/// The dead letters of a batch's bad records, or the batch's refusal naming them.
fn bad_records(
    topic: &KafkaTopic,
    name: &str,
    partition: i32,
    batch: &Batch,
    bad: Vec<crate::common::record::DeadLetter>,
) -> Result<Vec<crate::common::record::DeadLetter>, Failure> {
    if bad.is_empty() {
        return Ok(bad);
    }
    if topic.bad_records == BadRecords::Refuse {
        let named: Vec<(i32, String)> =
            bad.iter().map(|l| (i32::try_from(l.offset).unwrap_or(i32::MAX), l.reason.clone())).collect();
        let message = format!(
            "{} of {} records do not decode; the first ({}): {}",
            bad.len(),
            batch.records.len(),
            named[0].0,
            named[0].1
        );
        return Err((ResponseError::InvalidRecord, Some((message, named))));
    }
    Ok(bad
        .into_iter()
        .map(|mut l| {
            let index = usize::try_from(l.offset).unwrap_or(0);
            let record = batch.records.get(index);
            l.topic = name.to_string();
            l.partition = partition;
            if let (Some(r), Some(_)) = (record, &batch.producer) {
                l.reason = format!(
                    "producer {} epoch {} sequence {}: {}",
                    r.producer_id, r.producer_epoch, r.sequence, l.reason
                );
                l.offset = i64::from(r.sequence);
            }
            l.key = record.and_then(|r| r.key.as_ref().map(|k| k.to_vec()));
            l.timestamp_ms = record.map(|r| r.timestamp).filter(|t| *t >= 0);
            l
        })
        .collect())
}

/// A batch's answer from its commit's outcome.
fn outcome_of(batch: &Batch, outcome: Outcome) -> Result<i64, Failure> {
    let epoch_of = |position: i64| position >> 32;
    let mine = i64::from(batch.epoch);
    match outcome {
        Outcome::Committed { version } => Ok(i64::try_from(version).unwrap_or(i64::MAX) << ROW_BITS),
        Outcome::Already { committed } if batch.producer.is_some() && epoch_of(committed) > mine => Err(fail(
            ResponseError::InvalidProducerEpoch,
            format!("epoch {mine} is older than the table's epoch {} for this producer", epoch_of(committed)),
        )),
        Outcome::Already { .. } => Ok(-1),
        Outcome::Gap { expected } if epoch_of(expected) > mine => Err(fail(
            ResponseError::InvalidProducerEpoch,
            format!("epoch {mine} is older than the table's epoch {} for this producer", epoch_of(expected)),
        )),
        Outcome::Gap { expected } => {
            let got = batch.producer.as_ref().map_or(-1, |p| p.first & 0xffff_ffff);
            Err(fail(
                ResponseError::OutOfOrderSequenceNumber,
                format!("sequence {got} at epoch {mine}: the next sequence is {}", expected & 0xffff_ffff),
            ))
        }
        Outcome::Refused(why) => Err(fail(ResponseError::InvalidRecord, why)),
        Outcome::Failed(why) => Err(fail(ResponseError::KafkaStorageError, format!("not committed (retry): {why}"))),
    }
}
