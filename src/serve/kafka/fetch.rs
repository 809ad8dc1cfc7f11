//! Fetch and ListOffsets over topics' change feeds ([`super::feed`]).
//!
//! Contract:
//! - Fetch answers each partition from its offset with its commits' records, in record batches
//!   of at most [`BATCH_BYTES`] (a fetch may end inside a commit: offsets name rows), up to
//!   the partition's `partition_max_bytes` and what is left of the request's `max_bytes`;
//!   only the first partition with records may exceed them, by one batch, so a consumer
//!   always moves on. It reads at most [`MAX_COMMITS_PER_FETCH`] commits. A commit's last
//!   batch spans to the commit's end, and commits without rows in the partition are covered
//!   by an empty batch, so a consumer's position reaches the high watermark. With nothing to
//!   answer it waits up to `max_wait_ms` for new commits.
//! - An offset past the end, or before the first version the log still holds:
//!   OFFSET_OUT_OF_RANGE (the consumer's `auto.offset.reset` decides). Unknown topics and
//!   partitions: UNKNOWN_TOPIC_OR_PARTITION. A topic whose table does not exist yet is an
//!   empty feed.
//! - ListOffsets: latest (-1) is the end of the feed, earliest (-2) its start, a timestamp the
//!   first commit at or after it (-1 when none is).
//! - A fetch's partitions are read concurrently, each on its own task, when their limits
//!   together fit in the request's `max_bytes` (the usual case: a megabyte each of 50 MiB);
//!   otherwise one after another. Either way the answer keeps the limits above.
//! - Fetch sessions are not kept (session id 0): every fetch names its partitions.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

use super::acl::TopicOp;
use super::feed::{offset_of, position_of, Feed};
use super::wire::{Head, Reply, Step};
use super::{Caller, Shared};
use crate::error::Error;

/// Commits one partition's answer reads at most.
pub(crate) const MAX_COMMITS_PER_FETCH: u64 = 1000;

/// Takes a Fetch request.
pub(crate) fn take_fetch(shared: &Arc<Shared>, head: &Head, request: FetchRequest, caller: Caller) -> Step {
    let (shared, head) = (shared.clone(), *head);
    Step::Later(Box::pin(async move {
        let denied = denied_topics(&shared, &caller, request.topics.iter().map(|t| t.topic.0.as_str()));
        Reply::answer(head.encode(&fetch(&shared, head.version, request, &denied).await))
    }))
}

/// Takes a ListOffsets request.
pub(crate) fn take_list_offsets(
    shared: &Arc<Shared>,
    head: &Head,
    request: ListOffsetsRequest,
    caller: Caller,
) -> Step {
    let (shared, head) = (shared.clone(), *head);
    Step::Later(Box::pin(async move {
        let denied = denied_topics(&shared, &caller, request.topics.iter().map(|t| t.name.0.as_str()));
        Reply::answer(head.encode(&list_offsets(&shared, request, &denied).await))
    }))
}

/// The served topics among `names` whose feed `caller` may not fetch (each denial logged
/// once per request).
fn denied_topics<'a>(shared: &Shared, caller: &Caller, names: impl Iterator<Item = &'a str>) -> HashSet<String> {
    let mut out = HashSet::new();
    for name in names {
        if shared.feeds.contains_key(name) && !out.contains(name) && !shared.may(caller, TopicOp::Fetch, name) {
            out.insert(name.to_string());
        }
    }
    out
}

fn partition_error(index: i32, e: ResponseError) -> PartitionData {
    PartitionData::default()
        .with_partition_index(index)
        .with_error_code(e.code())
        .with_high_watermark(-1)
        .with_last_stable_offset(-1)
        .with_log_start_offset(-1)
        .with_preferred_read_replica(BrokerId(-1))
}

async fn fetch(
    shared: &Arc<Shared>,
    request_version: i16,
    request: FetchRequest,
    denied: &HashSet<String>,
) -> FetchResponse {
    let deadline = tokio::time::Instant::now()
        + Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0).min(30_000));
    let max_bytes = usize::try_from(request.max_bytes).unwrap_or(0).max(1);
    loop {
        let mut slots = Vec::with_capacity(request.topics.len());
        for topic in &request.topics {
            if denied.contains(topic.topic.0.as_str()) {
                let refused = ResponseError::TopicAuthorizationFailed;
                slots
                    .push(topic.partitions.iter().map(|p| Slot::Done(partition_error(p.partition, refused))).collect());
                continue;
            }
            slots.push(plan(shared, &topic.topic.0, &topic.partitions, max_bytes).await);
        }
        let limits: Vec<usize> = slots
            .iter()
            .flatten()
            .filter_map(|s| match s {
                Slot::Read { limit, .. } => Some(*limit),
                Slot::Done(_) => None,
            })
            .collect();
        let answers = if limits.len() > 1 && limits.iter().sum::<usize>() <= max_bytes {
            concurrently(shared, slots, max_bytes, request_version).await
        } else {
            in_turn(shared, slots, max_bytes, request_version).await
        };
        let mut any = false;
        let mut responses = Vec::with_capacity(request.topics.len());
        for (topic, partitions) in request.topics.iter().zip(answers) {
            let name = topic.topic.0.to_string();
            let metrics = shared.state.metrics.kafka();
            let mut datas = Vec::with_capacity(partitions.len());
            for a in partitions {
                any |= a.data.records.as_ref().is_some_and(|r| !r.is_empty()) || a.data.error_code != 0;
                if let Some((records, lag)) = a.read {
                    metrics.fetched(&name, records, lag);
                }
                datas.push(a.data);
            }
            responses.push(FetchableTopicResponse::default().with_topic(topic.topic.clone()).with_partitions(datas));
        }
        if any || tokio::time::Instant::now() >= deadline {
            return FetchResponse::default().with_responses(responses);
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// One partition of a fetch: answered already (an error), or to be read from `at` in the
/// feed's `bounds`, at most `limit` bytes (its own limit within the request's).
enum Slot {
    Done(PartitionData),
    Read { topic: Arc<str>, at: At, bounds: Option<(u64, u64)>, limit: usize },
}

/// A partition's answer, and for a read one, the records it answers and the commits left after
/// them.
struct Answer {
    data: PartitionData,
    read: Option<(u64, u64)>,
}

/// The slots of one topic's partitions (the feed's bounds listed once for all of them).
async fn plan(
    shared: &Shared,
    topic: &str,
    partitions: &[kafka_protocol::messages::fetch_request::FetchPartition],
    max_bytes: usize,
) -> Vec<Slot> {
    let Some(feed) = shared.feeds.get(topic) else {
        return partitions
            .iter()
            .map(|p| Slot::Done(partition_error(p.partition, ResponseError::UnknownTopicOrPartition)))
            .collect();
    };
    let count = feed_partitions(shared, topic);
    let valid = |p: i32| u32::try_from(p).is_ok_and(|i| i < count);
    let bounds = if partitions.iter().any(|p| valid(p.partition)) {
        Some(feed.bounds().await.map_err(|e| {
            tracing::info!(topic, error = %e, "kafka.fetch_failed");
        }))
    } else {
        None
    };
    let name: Arc<str> = Arc::from(topic);
    partitions
        .iter()
        .map(|p| match &bounds {
            _ if !valid(p.partition) => {
                Slot::Done(partition_error(p.partition, ResponseError::UnknownTopicOrPartition))
            }
            Some(Ok(b)) => Slot::Read {
                topic: name.clone(),
                at: At { partition: p.partition, offset: p.fetch_offset },
                bounds: *b,
                limit: usize::try_from(p.partition_max_bytes).unwrap_or(0).min(max_bytes),
            },
            _ => Slot::Done(partition_error(p.partition, ResponseError::KafkaStorageError)),
        })
        .collect()
}

/// Reads the partitions one after another, each within what the ones before it left of
/// `max_bytes`; only the first with records may exceed its limit (by one batch).
async fn in_turn(shared: &Shared, slots: Vec<Vec<Slot>>, max_bytes: usize, version: i16) -> Vec<Vec<Answer>> {
    let (mut budget, mut may_exceed) = (max_bytes, true);
    let mut out = Vec::with_capacity(slots.len());
    for topic in slots {
        let mut answers = Vec::with_capacity(topic.len());
        for slot in topic {
            let answer = match slot {
                Slot::Done(data) => Answer { data, read: None },
                Slot::Read { topic, at, bounds, limit } => {
                    let room = Room { limit: limit.min(budget), may_exceed };
                    match shared.feeds.get(&*topic) {
                        Some(feed) => {
                            let (data, read) = read(feed, &topic, at, bounds, room, version).await;
                            Answer { data, read }
                        }
                        None => Answer {
                            data: partition_error(at.partition, ResponseError::UnknownTopicOrPartition),
                            read: None,
                        },
                    }
                }
            };
            let got = answer.data.records.as_ref().map_or(0, Bytes::len);
            may_exceed &= got == 0;
            budget = budget.saturating_sub(got);
            answers.push(answer);
        }
        out.push(answers);
    }
    out
}

/// A partition of a fetch being read at once with the others.
enum Pending {
    Done(Box<PartitionData>),
    Reading { limit: usize, partition: i32, task: tokio::task::JoinHandle<Option<Read>> },
}

/// A partition's answer read from the feed, and the records and lag it counts (see [`read`]).
type Read = (PartitionData, Option<(u64, u64)>);

/// Reads the partitions at once, each on its own task (a fetch names every partition a
/// consumer reads, and converting rows to records is most of its cost), when their limits
/// together fit in `max_bytes`. Each may exceed its limit by one batch; in order, only the
/// first with records keeps such an answer, and any answer that would take the fetch past
/// `max_bytes` after it is answered empty (read again by the next fetch).
async fn concurrently(shared: &Arc<Shared>, slots: Vec<Vec<Slot>>, max_bytes: usize, version: i16) -> Vec<Vec<Answer>> {
    let tasks: Vec<Vec<_>> = slots
        .into_iter()
        .map(|topic| {
            topic
                .into_iter()
                .map(|slot| match slot {
                    Slot::Done(data) => Pending::Done(Box::new(data)),
                    Slot::Read { topic, at, bounds, limit } => {
                        let shared = shared.clone();
                        let task = tokio::spawn(async move {
                            let feed = shared.feeds.get(&*topic)?;
                            Some(read(feed, &topic, at, bounds, Room { limit, may_exceed: true }, version).await)
                        });
                        Pending::Reading { limit, partition: at.partition, task }
                    }
                })
                .collect()
        })
        .collect();
    let (mut used, mut first) = (0, true);
    let mut out = Vec::with_capacity(tasks.len());
    for topic in tasks {
        let mut answers = Vec::with_capacity(topic.len());
        for task in topic {
            let answer = match task {
                Pending::Done(data) => Answer { data: *data, read: None },
                Pending::Reading { limit, partition, task } => match task.await {
                    Ok(Some((mut data, read))) => {
                        let got = data.records.as_ref().map_or(0, Bytes::len);
                        if got > 0 && !first && (got > limit || used + got > max_bytes) {
                            data.records = Some(Bytes::new());
                            Answer { data, read: None }
                        } else {
                            used += got;
                            first &= got == 0;
                            Answer { data, read }
                        }
                    }
                    _ => Answer { data: partition_error(partition, ResponseError::KafkaStorageError), read: None },
                },
            };
            answers.push(answer);
        }
        out.push(answers);
    }
    out
}

fn feed_partitions(shared: &Shared, topic: &str) -> u32 {
    shared.config.topics.get(topic).map_or(0, |t| t.partitions)
}

/// What a partition's answer may hold: `limit` bytes, and its first batch more when
/// `may_exceed` (in the first partition of a fetch with records, so a consumer always moves on,
/// as a broker answers).
#[derive(Debug, Clone, Copy)]
struct Room {
    limit: usize,
    may_exceed: bool,
}

/// Where a partition's answer starts.
#[derive(Debug, Clone, Copy)]
struct At {
    partition: i32,
    offset: i64,
}

/// One partition's answer from `offset`, within `room`, in the feed's `bounds` (first and
/// latest version; `None`: no table yet), and when it read the feed, the records it answers
/// and the commits left after them.
async fn read(
    feed: &Arc<Feed>,
    topic: &str,
    At { partition, offset }: At,
    bounds: Option<(u64, u64)>,
    Room { limit, may_exceed }: Room,
    version: i16,
) -> Read {
    let Some((first, latest)) = bounds else {
        // No table yet: an empty feed at 0.
        if offset != 0 {
            return (partition_error(partition, ResponseError::OffsetOutOfRange), None);
        }
        let empty = PartitionData::default()
            .with_partition_index(partition)
            .with_preferred_read_replica(BrokerId(-1))
            .with_records(Some(Bytes::new()));
        return (empty, None);
    };
    let end = offset_of(latest + 1, 0);
    let start = offset_of(first, 0);
    let answer = PartitionData::default()
        .with_partition_index(partition)
        .with_high_watermark(end)
        .with_last_stable_offset(end)
        .with_log_start_offset(if version >= 5 { start } else { -1 })
        .with_aborted_transactions(Some(Vec::new()))
        .with_preferred_read_replica(BrokerId(-1));
    let Some((mut version, mut row)) = position_of(offset).filter(|_| offset >= start && offset <= end) else {
        return (partition_error(partition, ResponseError::OffsetOutOfRange), None);
    };
    // Sized for the answer (a partition's limit is a megabyte by default), so that it is not
    // copied over while it grows.
    let mut out = BytesMut::with_capacity(limit.min(PREALLOCATED));
    let index = usize::try_from(partition).unwrap_or(0);
    let stop = latest.min(version.saturating_add(MAX_COMMITS_PER_FETCH));
    // Offsets read with nothing to answer in this partition, not yet covered by a batch.
    let mut gap: Option<(i64, i64)> = None;
    let mut answered = 0;
    'versions: while version <= stop {
        let commit = match feed.commit(version, index).await {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(Error::MissingVersion { .. }) => {
                // Log cleanup moved the feed's start: list the log again.
                feed.relist();
                return (partition_error(partition, ResponseError::OffsetOutOfRange), None);
            }
            Err(e) => {
                tracing::info!(topic, partition, version, error = %e, "kafka.fetch_failed");
                if out.is_empty() && gap.is_none() {
                    return (partition_error(partition, ResponseError::KafkaStorageError), None);
                }
                break;
            }
        };
        let rows = commit.rows(index);
        let mut from = usize::try_from(row).unwrap_or(usize::MAX).min(rows);
        if from == rows {
            gap = Some((gap.map_or(offset_of(version, from as u64), |(g, _)| g), commit.timestamp_ms));
        }
        // The commit's rows from `from`, in batches of at most BATCH_BYTES (or what is left of
        // the limit); the last one spans to the end of the commit. Rows become records a chunk
        // at a time, as far as the batch has room.
        while from < rows {
            let oversize = out.is_empty() && gap.is_none() && may_exceed;
            let room = if oversize { limit.max(1) } else { limit.saturating_sub(out.len()) }.min(BATCH_BYTES);
            let (mut taken, mut size, mut full) = (Vec::new(), 0, false);
            while !full && from + taken.len() < rows {
                let at = from + taken.len();
                let chunk = match feed.records(&commit, index, at, (at + RECORD_CHUNK).min(rows)) {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::info!(topic, partition, version, error = %e, "kafka.fetch_failed");
                        if out.is_empty() && gap.is_none() {
                            return (partition_error(partition, ResponseError::KafkaStorageError), None);
                        }
                        break 'versions;
                    }
                };
                for r in chunk {
                    if !taken.is_empty() && size + record_bytes(&r) > room {
                        full = true;
                        break;
                    }
                    size += record_bytes(&r);
                    taken.push(r);
                }
            }
            let to = from + taken.len();
            let records: Vec<Record> = taken
                .iter()
                .enumerate()
                .map(|(i, r)| record(offset_of(version, (from + i) as u64), i, commit.timestamp_ms, r))
                .collect();
            let mut batch = BytesMut::with_capacity(size + EMPTY_BATCH_BYTES);
            let options = RecordEncodeOptions { version: 2, compression: Compression::None };
            if let Err(e) = RecordBatchEncoder::encode(&mut batch, &records, &options) {
                tracing::error!(topic, version, error = %e, "kafka.fetch_not_encoded");
                break 'versions;
            }
            let gap_bytes = if gap.is_some() { EMPTY_BATCH_BYTES } else { 0 };
            if !oversize && out.len() + gap_bytes + batch.len() > limit {
                break 'versions;
            }
            if let Some((g, ts)) = gap.take() {
                out.extend_from_slice(&empty_batch(g, offset_of(version, from as u64) - 1, ts));
            }
            if to == rows {
                span_to(&mut batch, offset_of(version + 1, 0) - 1);
            }
            out.extend_from_slice(&batch);
            answered += records.len() as u64;
            from = to;
            if out.len() >= limit {
                break 'versions;
            }
        }
        version += 1;
        row = 0;
    }
    // Commits read with no rows here still move the consumer on (to the end of the feed when
    // they were the last), as the empty batches compaction leaves in a Kafka log do.
    if let Some((g, ts)) = gap {
        if out.len() + EMPTY_BATCH_BYTES <= limit || (out.is_empty() && may_exceed) {
            out.extend_from_slice(&empty_batch(g, offset_of(version, 0) - 1, ts));
        }
    }
    (answer.with_records(Some(out.freeze())), Some((answered, (latest + 1).saturating_sub(version))))
}

/// Record bytes in a fetched batch: at most this much per batch, so that consumers can take a
/// large commit in parts (offsets name rows, so a fetch may stop inside a commit).
const BATCH_BYTES: usize = 1 << 20;
/// Bytes of a partition's answer allocated up front at most.
const PREALLOCATED: usize = 8 << 20;
/// Rows turned into records at once while a batch fills.
const RECORD_CHUNK: usize = 256;
/// The size of a record batch without records.
const EMPTY_BATCH_BYTES: usize = 61;

/// About what a record takes in a batch.
fn record_bytes(r: &super::feed::FeedRecord) -> usize {
    r.value.len() + r.key.as_ref().map_or(0, Bytes::len) + r.change_type.len() + 32
}

/// Byte positions in a record batch v2 header.
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;

/// Makes the one record batch in `batch` end at offset `last` (past its last record, as a
/// compacted batch does), so a consumer's next offset is the next commit's, and mends its CRC.
fn span_to(batch: &mut BytesMut, last: i64) {
    let base = i64::from_be_bytes(batch[..8].try_into().unwrap_or_default());
    let delta = i32::try_from(last - base).unwrap_or(i32::MAX);
    batch[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4].copy_from_slice(&delta.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// A record batch v2 with no records spanning offsets `first..=last`.
fn empty_batch(first: i64, last: i64, timestamp_ms: i64) -> BytesMut {
    let mut b = BytesMut::with_capacity(61);
    b.extend_from_slice(&first.to_be_bytes());
    b.extend_from_slice(&49i32.to_be_bytes()); // the bytes after this field
    b.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
    b.extend_from_slice(&[2]); // magic
    b.extend_from_slice(&[0; 4]); // CRC, set by span_to
    b.extend_from_slice(&0i16.to_be_bytes()); // attributes
    b.extend_from_slice(&0i32.to_be_bytes()); // last offset delta, set by span_to
    b.extend_from_slice(&timestamp_ms.to_be_bytes());
    b.extend_from_slice(&timestamp_ms.to_be_bytes());
    b.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
    b.extend_from_slice(&(-1i16).to_be_bytes()); // producer epoch
    b.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    b.extend_from_slice(&0i32.to_be_bytes()); // record count
    span_to(&mut b, last);
    b
}

/// The `i`-th record of a batch. Sequences run from -1 so that the encoder keeps a commit's
/// records in one batch (it splits where offset minus sequence changes) with base sequence -1,
/// as a broker writes batches of producers without idempotence.
fn record(offset: i64, i: usize, timestamp_ms: i64, r: &super::feed::FeedRecord) -> Record {
    let mut record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset,
        sequence: i32::try_from(i).unwrap_or(i32::MAX) - 1,
        timestamp: timestamp_ms,
        key: r.key.clone(),
        value: Some(r.value.clone()),
        headers: Default::default(),
    };
    record.headers.insert(StrBytes::from_static_str("change_type"), Some(Bytes::from_static(r.change_type.as_bytes())));
    record
}

async fn list_offsets(shared: &Shared, request: ListOffsetsRequest, denied: &HashSet<String>) -> ListOffsetsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in topic.partitions {
            let answer = ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
            if denied.contains(&name) {
                partitions.push(answer.with_error_code(ResponseError::TopicAuthorizationFailed.code()));
                continue;
            }
            let feed = shared
                .feeds
                .get(&name)
                .filter(|_| u32::try_from(p.partition_index).is_ok_and(|i| i < feed_partitions(shared, &name)));
            let Some(feed) = feed else {
                partitions.push(answer.with_error_code(ResponseError::UnknownTopicOrPartition.code()));
                continue;
            };
            let found = async {
                let Some((first, latest)) = feed.bounds().await? else { return Ok::<_, Error>((0, -1)) };
                Ok(match p.timestamp {
                    -1 => (offset_of(latest + 1, 0), -1),
                    -2 => (offset_of(first, 0), -1),
                    // The found commit's own time, as a broker answers the found record's.
                    t => match feed.version_at(t, first, latest).await? {
                        Some((v, at)) => (offset_of(v, 0), at),
                        None => (-1, -1),
                    },
                })
            };
            partitions.push(match found.await {
                Ok((offset, timestamp)) => answer.with_offset(offset).with_timestamp(timestamp),
                Err(e) => {
                    tracing::info!(topic = %name, error = %e, "kafka.list_offsets_failed");
                    answer.with_error_code(ResponseError::KafkaStorageError.code())
                }
            });
        }
        topics.push(ListOffsetsTopicResponse::default().with_name(topic.name).with_partitions(partitions));
    }
    ListOffsetsResponse::default().with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::RecordBatchDecoder;

    fn last_offset(batch: &[u8]) -> i64 {
        let base = i64::from_be_bytes(batch[..8].try_into().unwrap());
        base + i64::from(i32::from_be_bytes(batch[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4].try_into().unwrap()))
    }

    #[test]
    fn batches_span_to_their_commits_end_and_empty_ones_cover_gaps() {
        let feed_record = |v: &str| super::super::feed::FeedRecord {
            key: None,
            value: Bytes::copy_from_slice(v.as_bytes()),
            change_type: "insert",
        };
        let rows = [feed_record("{\"a\":1}"), feed_record("{\"a\":2}")];
        let records: Vec<Record> =
            rows.iter().enumerate().map(|(i, r)| record(offset_of(3, 5 + i as u64), i, 7, r)).collect();
        let mut batch = BytesMut::new();
        let options = RecordEncodeOptions { version: 2, compression: Compression::None };
        RecordBatchEncoder::encode(&mut batch, &records, &options).unwrap();
        assert_eq!(RecordBatchDecoder::decode_batch_info(&mut batch.clone().freeze()).unwrap().len(), 1, "one batch");
        span_to(&mut batch, offset_of(4, 0) - 1);
        assert_eq!(last_offset(&batch), offset_of(4, 0) - 1);
        // The CRC still holds, the records and their offsets are unchanged, base sequence -1.
        let mut bytes = batch.freeze();
        let info = RecordBatchDecoder::decode_batch_info(&mut bytes.clone()).unwrap();
        assert_eq!((info[0].min_offset, info[0].record_count, info[0].base_sequence), (offset_of(3, 5), 2, -1));
        let set = RecordBatchDecoder::decode(&mut bytes).unwrap();
        let offsets: Vec<i64> = set.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![offset_of(3, 5), offset_of(3, 6)]);
        let empty = empty_batch(offset_of(4, 0), offset_of(9, 0) - 1, 7);
        assert_eq!(empty.len(), EMPTY_BATCH_BYTES);
        assert_eq!(last_offset(&empty), offset_of(9, 0) - 1);
        let mut bytes = empty.freeze();
        let info = RecordBatchDecoder::decode_batch_info(&mut bytes.clone()).unwrap();
        assert_eq!((info[0].min_offset, info[0].record_count), (offset_of(4, 0), 0));
        assert!(RecordBatchDecoder::decode(&mut bytes).unwrap().records.is_empty(), "a valid batch, CRC included");
    }
}
