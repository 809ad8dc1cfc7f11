//! OffsetCommit and OffsetFetch: a consumer group's committed offsets, kept where followers'
//! positions live (`_deltabus/followers/<id>.json` in the topic's table), so `deltabus
//! followers` lists them and VACUUM and log cleanup keep the commits they still need.
//!
//! Contract:
//! - The id of group g's position on partition p of topic t is `kafka-group.<g>.<t>.<p>`, g
//!   spelled with letters, digits and `-` as they are and every other byte (`_` and `.`
//!   included) as `_XX` (hex), so any group name maps to one file name, no two to the same
//!   one, and g holds no `.`. An id over
//!   200 bytes (a very long group name) is refused (INVALID_GROUP_ID).
//! - A commit writes the offset, its metadata and the version it needs (`next_version`, the
//!   offset's commit); OffsetFetch reads it back (-1 when the group has none). A partition
//!   the topic does not have is UNKNOWN_TOPIC_OR_PARTITION; an offset that is not a position
//!   of the feed (negative, before its first version, past its end) OFFSET_OUT_OF_RANGE, and
//!   nothing is written.
//! - A registration expires `offsets_retention` after the group's last commit (Kafka's
//!   `offsets.retention.minutes`): VACUUM and log cleanup then keep nothing for it, and
//!   `deltabus followers` shows it expired. A commit renews it.
//! - Only simple consumers (assign, seek, poll, commit) are served: generation and member ids
//!   are not checked, and JoinGroup/SyncGroup/Heartbeat are not spoken (a subscribing consumer
//!   fails at JoinGroup with the connection closed and a log line naming it).

use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_fetch_response::{OffsetFetchResponsePartition, OffsetFetchResponseTopic};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse};
use kafka_protocol::protocol::StrBytes;

use super::acl::TopicOp;
use super::feed::position_of;
use super::wire::{Head, Reply, Step};
use super::{Caller, Shared};
use crate::beside::followers::{record_path, FollowerRecord};
use crate::storage::Table;

/// The registration id of a group's position on one partition (`None`: too long).
pub(crate) fn position_id(group: &str, topic: &str, partition: i32) -> Option<String> {
    let mut g = String::with_capacity(group.len());
    for b in group.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            g.push(char::from(b));
        } else {
            g.push_str(&format!("_{b:02X}"));
        }
    }
    let id = format!("kafka-group.{g}.{topic}.{partition}");
    (id.len() <= 200).then_some(id)
}

/// Takes an OffsetCommit request.
pub(crate) fn take_commit(shared: &Arc<Shared>, head: &Head, request: OffsetCommitRequest, caller: Caller) -> Step {
    let (shared, head) = (shared.clone(), *head);
    Step::Later(Box::pin(async move { Reply::answer(head.encode(&commit(&shared, &caller, request).await)) }))
}

/// Takes an OffsetFetch request.
pub(crate) fn take_fetch(shared: &Arc<Shared>, head: &Head, request: OffsetFetchRequest, caller: Caller) -> Step {
    let (shared, head) = (shared.clone(), *head);
    Step::Later(Box::pin(async move { Reply::answer(head.encode(&fetch(&shared, &caller, request).await)) }))
}

fn table_of<'a>(shared: &'a Shared, topic: &str) -> Option<&'a Table> {
    let t = shared.config.topics.get(topic)?;
    shared.state.tables.get(&t.table).map(|h| &h.table)
}

async fn commit(shared: &Shared, caller: &Caller, request: OffsetCommitRequest) -> OffsetCommitResponse {
    let group = request.group_id.0.to_string();
    let group_denied = !shared.may_group(caller, &group);
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let topic_denied =
            !group_denied && shared.feeds.contains_key(&name) && !shared.may(caller, TopicOp::Fetch, &name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in topic.partitions {
            let code = async {
                if group_denied {
                    return ResponseError::GroupAuthorizationFailed.code();
                }
                if topic_denied {
                    return ResponseError::TopicAuthorizationFailed.code();
                }
                let (Some(table), Some(feed)) = (table_of(shared, &name), shared.feeds.get(&name)) else {
                    return ResponseError::UnknownTopicOrPartition.code();
                };
                let partitions = shared.config.topics.get(&name).map_or(0, |t| t.partitions);
                if !u32::try_from(p.partition_index).is_ok_and(|i| i < partitions) {
                    return ResponseError::UnknownTopicOrPartition.code();
                }
                let Some(id) = position_id(&group, &name, p.partition_index) else {
                    return ResponseError::InvalidGroupId.code();
                };
                let index = usize::try_from(p.partition_index).unwrap_or(0);
                let version = match servable(feed, index, p.committed_offset).await {
                    Ok(Some(version)) => version,
                    Ok(None) => {
                        tracing::info!(group = %group, topic = %name, partition = p.partition_index, offset = p.committed_offset, "kafka.offset_commit_refused: not a position of the feed");
                        return ResponseError::OffsetOutOfRange.code();
                    }
                    Err(e) => {
                        tracing::info!(group = %group, topic = %name, error = %e, "kafka.offset_commit_failed");
                        return ResponseError::CoordinatorNotAvailable.code();
                    }
                };
                let now = table.clock().now_ms();
                let retention = i64::try_from(shared.config.offsets_retention.as_millis()).unwrap_or(i64::MAX);
                let record = FollowerRecord {
                    follower_id: id,
                    next_version: version,
                    updated_at: now,
                    kind: "kafka-group".into(),
                    offset: Some(p.committed_offset),
                    metadata: p.committed_metadata.as_ref().map(ToString::to_string),
                    expires_at: Some(now.saturating_add(retention)),
                };
                match crate::storage::followers::register(table, &record).await {
                    Ok(()) => 0,
                    Err(e) => {
                        tracing::info!(group = %group, topic = %name, error = %e, "kafka.offset_commit_failed");
                        ResponseError::CoordinatorNotAvailable.code()
                    }
                }
            };
            let code = code.await;
            partitions.push(
                OffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(code),
            );
        }
        topics.push(OffsetCommitResponseTopic::default().with_name(topic.name).with_partitions(partitions));
    }
    OffsetCommitResponse::default().with_topics(topics)
}

/// The version a committed offset needs next, when the offset is a position of the feed: not
/// before its first version, not past its end (the next commit's first row); `None` when it
/// is not.
///
/// # Errors
/// Storage errors reading the feed's bounds.
async fn servable(feed: &Arc<super::feed::Feed>, partition: usize, offset: i64) -> crate::error::Result<Option<u64>> {
    let Some((version, row)) = position_of(offset) else { return Ok(None) };
    let (first, latest) = feed.bounds().await?.unwrap_or((0, 0));
    let end = latest.saturating_add(1);
    if version < first || version > end || (version == end && row > 0) {
        return Ok(None);
    }
    // Past the partition's last row of its commit (a consumer commits the offset after the
    // last record it read): the next commit is what it needs, as at the feed's end.
    if row > 0 && version < end {
        if let Some(commit) = feed.commit(version, partition).await? {
            if row >= commit.rows(partition) as u64 {
                return Ok(Some(version + 1));
            }
        }
    }
    Ok(Some(version))
}

async fn fetch(shared: &Shared, caller: &Caller, request: OffsetFetchRequest) -> OffsetFetchResponse {
    let group = request.group_id.0.to_string();
    if !shared.may_group(caller, &group) {
        return OffsetFetchResponse::default().with_error_code(ResponseError::GroupAuthorizationFailed.code());
    }
    // No topics named: every partition of every topic.
    let asked: Vec<(String, Vec<i32>)> = match request.topics {
        Some(topics) => topics.into_iter().map(|t| (t.name.0.to_string(), t.partition_indexes)).collect(),
        // (Those the caller may see.)
        None => shared
            .config
            .topics
            .iter()
            .filter(|(name, _)| shared.acls.topic(&caller.principal, TopicOp::Describe, name))
            .map(|(name, t)| (name.clone(), (0..i32::try_from(t.partitions).unwrap_or(0)).collect()))
            .collect(),
    };
    let mut topics = Vec::with_capacity(asked.len());
    for (name, indexes) in asked {
        let mut partitions = Vec::with_capacity(indexes.len());
        let denied = shared.feeds.contains_key(&name) && !shared.may(caller, TopicOp::Describe, &name);
        for index in indexes {
            let answer = OffsetFetchResponsePartition::default().with_partition_index(index).with_committed_offset(-1);
            if denied {
                partitions.push(answer.with_error_code(ResponseError::TopicAuthorizationFailed.code()));
                continue;
            }
            let Some(table) = table_of(shared, &name) else {
                partitions.push(answer.with_error_code(ResponseError::UnknownTopicOrPartition.code()));
                continue;
            };
            let Some(id) = position_id(&group, &name, index) else {
                partitions.push(answer.with_error_code(ResponseError::InvalidGroupId.code()));
                continue;
            };
            let read = match table.objects().file_size(&record_path(&id)).await {
                Ok(None) => Ok(None),
                Ok(Some(_)) => table.objects().read_bytes(&record_path(&id)).await.map(Some),
                Err(e) => Err(e),
            };
            partitions.push(match read {
                Ok(None) => answer.with_metadata(Some(StrBytes::from_static_str(""))),
                Ok(Some(bytes)) => match serde_json::from_slice::<FollowerRecord>(&bytes) {
                    Ok(r) => answer
                        .with_committed_offset(r.offset.unwrap_or(-1))
                        .with_metadata(Some(StrBytes::from_string(r.metadata.unwrap_or_default()))),
                    Err(_) => answer.with_error_code(ResponseError::UnknownServerError.code()),
                },
                Err(e) => {
                    tracing::info!(group = %group, topic = %name, error = %e, "kafka.offset_fetch_failed");
                    answer.with_error_code(ResponseError::CoordinatorLoadInProgress.code())
                }
            });
        }
        topics.push(
            OffsetFetchResponseTopic::default()
                .with_name(kafka_protocol::messages::TopicName(StrBytes::from_string(name)))
                .with_partitions(partitions),
        );
    }
    OffsetFetchResponse::default().with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_group_name_is_one_file_name() {
        assert_eq!(position_id("billing", "orders.eu", 3).unwrap(), "kafka-group.billing.orders.eu.3");
        let odd = position_id("Zürich/ops.1", "t", 0).unwrap();
        assert_eq!(odd, "kafka-group.Z_C3_BCrich_2Fops_2E1.t.0");
        assert!(crate::beside::followers::valid_follower_id(&odd));
        assert_ne!(position_id("a.b", "t", 0), position_id("a_2Eb", "t", 0));
        assert_ne!(position_id("a_b", "t", 0), position_id("a_5Fb", "t", 0));
        assert!(crate::beside::followers::valid_follower_id(&position_id("~.~", "t", 0).unwrap()));
        assert!(position_id(&"g".repeat(300), "t", 0).is_none());
    }
}
