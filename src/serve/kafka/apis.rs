//! The versions spoken and the answers that need no table: ApiVersions, Metadata,
//! FindCoordinator, SaslHandshake, SaslAuthenticate and InitProducerId; and the dispatch of
//! every request (Produce, Fetch, ListOffsets, OffsetCommit, OffsetFetch to their modules).
//!
//! The listener is one broker (node 0, at the advertised address) that leads every partition
//! of every configured topic. Versions are those librdkafka 2.x, the Java client 3.x/4.x and
//! kafka-python negotiate, up to where a version would need what is not built (Fetch and
//! Produce by topic id, batched OffsetFetch). Transactional producers are refused at their
//! first step, FindCoordinator for their transactional id (and at InitProducerId too), with
//! the fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a warning naming the client:
//! transactions are not offered, and AddPartitionsToTxn and EndTxn are not spoken.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, FetchRequest, FindCoordinatorRequest, FindCoordinatorResponse,
    InitProducerIdRequest, InitProducerIdResponse, ListOffsetsRequest, MetadataRequest, MetadataResponse,
    OffsetCommitRequest, OffsetFetchRequest, ProduceRequest, ProducerId, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::scram;
use super::session::{Sasl, Session};
use super::wire::{decode, spoken, Head, Reply, Step, SPOKEN};
use super::Shared;

/// The one broker's node id.
pub(crate) const NODE: i32 = 0;

fn code(e: ResponseError) -> i16 {
    e.code()
}

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// ApiVersions: the versions spoken; a version not spoken is answered at v0 with
/// UNSUPPORTED_VERSION (the client then retries at one it finds in the list).
pub(crate) fn api_versions(head: &Head) -> Reply {
    let keys = SPOKEN
        .iter()
        .map(|(api, lo, hi)| {
            ApiVersion::default().with_api_key(*api as i16).with_min_version(*lo).with_max_version(*hi)
        })
        .collect();
    let mut answer = ApiVersionsResponse::default().with_api_keys(keys);
    if spoken(ApiKey::ApiVersions, head.version) {
        Reply::answer(head.encode(&answer))
    } else {
        answer.error_code = code(ResponseError::UnsupportedVersion);
        Reply::answer(head.encode_as(&answer, 0))
    }
}

/// A request body, decoded for its API.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Request {
    Metadata(MetadataRequest),
    FindCoordinator(FindCoordinatorRequest),
    SaslHandshake(SaslHandshakeRequest),
    SaslAuthenticate(SaslAuthenticateRequest),
    InitProducerId(InitProducerIdRequest),
    Produce(ProduceRequest),
    Fetch(FetchRequest),
    ListOffsets(ListOffsetsRequest),
    OffsetCommit(OffsetCommitRequest),
    OffsetFetch(OffsetFetchRequest),
}

/// Decodes a request body (its header read) for its API and version.
///
/// # Errors
/// A body that does not decode, or an API not dispatched.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_request(head: &Head, body: Bytes) -> Result<Request, String> {
    let v = head.version;
    Ok(match head.api {
        ApiKey::Metadata => Request::Metadata(decode(body, v)?),
        ApiKey::FindCoordinator => Request::FindCoordinator(decode(body, v)?),
        ApiKey::SaslHandshake => Request::SaslHandshake(decode(body, v)?),
        ApiKey::SaslAuthenticate => Request::SaslAuthenticate(decode(body, v)?),
        ApiKey::InitProducerId => Request::InitProducerId(decode(body, v)?),
        ApiKey::Produce => Request::Produce(decode(body, v)?),
        ApiKey::Fetch => Request::Fetch(decode(body, v)?),
        ApiKey::ListOffsets => Request::ListOffsets(decode(body, v)?),
        ApiKey::OffsetCommit => Request::OffsetCommit(decode(body, v)?),
        ApiKey::OffsetFetch => Request::OffsetFetch(decode(body, v)?),
        other => return Err(format!("{other:?} is not dispatched")),
    })
}

/// Hands a request (header read) to its API.
///
/// # Errors
/// A body that does not decode.
pub(crate) fn dispatch(
    shared: &Arc<Shared>,
    session: &mut Session,
    head: &Head,
    body: Bytes,
    held: super::frame::Held,
) -> Result<Step, String> {
    let head = *head;
    let v = head.version;
    Ok(match decode_request(&head, body)? {
        Request::Metadata(r) => Step::Now(Reply::answer(head.encode(&metadata(shared, &session.caller(), v, r)))),
        Request::FindCoordinator(r) => Step::Now(Reply::answer(head.encode(&find_coordinator(shared, session, v, r)))),
        Request::SaslHandshake(r) => Step::Now(sasl_handshake(shared, session, &head, r)),
        Request::SaslAuthenticate(r) => Step::Now(sasl_authenticate(shared, session, &head, r)),
        Request::InitProducerId(r) => {
            let (shared, who) = (shared.clone(), session.who());
            Step::Later(Box::pin(async move { Reply::answer(head.encode(&init_producer_id(&shared, &who, r).await)) }))
        }
        Request::Produce(r) => super::produce::take(shared, &head, r, session.caller(), session.produce_turn(held)),
        Request::Fetch(r) => super::fetch::take_fetch(shared, &head, r, session.caller()),
        Request::ListOffsets(r) => super::fetch::take_list_offsets(shared, &head, r, session.caller()),
        Request::OffsetCommit(r) => super::offsets::take_commit(shared, &head, r, session.caller()),
        Request::OffsetFetch(r) => super::offsets::take_fetch(shared, &head, r, session.caller()),
    })
}

/// A topic id that stays the same for a name (Metadata v10 and later carry one).
pub(crate) fn topic_id(name: &str) -> uuid::Uuid {
    use md5::Digest;
    let digest = md5::Md5::digest(format!("deltabus-topic:{name}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest);
    uuid::Builder::from_md5_bytes(bytes).into_uuid()
}

/// Metadata: the topics asked for (all: those the caller may describe), each known one with
/// its partitions, one it may not describe answered TOPIC_AUTHORIZATION_FAILED.
fn metadata(shared: &Shared, caller: &super::Caller, version: i16, request: MetadataRequest) -> MetadataResponse {
    let (host, port) = &shared.config.advertised;
    let broker = MetadataResponseBroker::default()
        .with_node_id(BrokerId(NODE))
        .with_host(text(host.clone()))
        .with_port(i32::from(*port));
    let names: Vec<String> = match request.topics {
        None => shared
            .config
            .topics
            .keys()
            .filter(|t| shared.acls.topic(&caller.principal, super::acl::TopicOp::Describe, t))
            .cloned()
            .collect(),
        Some(t) if t.is_empty() => Vec::new(),
        Some(t) => t.into_iter().filter_map(|t| t.name.map(|n| n.0.to_string())).collect(),
    };
    let topics = names
        .into_iter()
        .map(|name| {
            let t = MetadataResponseTopic::default().with_name(Some(TopicName(text(name.clone()))));
            match shared.config.topics.get(&name) {
                Some(_) if !shared.may(caller, super::acl::TopicOp::Describe, &name) => {
                    t.with_error_code(code(ResponseError::TopicAuthorizationFailed))
                }
                None => t.with_error_code(code(ResponseError::UnknownTopicOrPartition)),
                Some(topic) => {
                    t.with_topic_id(if version >= 10 { topic_id(&name) } else { uuid::Uuid::nil() }).with_partitions(
                        (0..i32::try_from(topic.partitions).unwrap_or(i32::MAX))
                            .map(|p| {
                                MetadataResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_leader_id(BrokerId(NODE))
                                    .with_leader_epoch(if version >= 7 { 0 } else { -1 })
                                    .with_replica_nodes(vec![BrokerId(NODE)])
                                    .with_isr_nodes(vec![BrokerId(NODE)])
                            })
                            .collect(),
                    )
                }
            }
        })
        .collect();
    MetadataResponse::default()
        .with_brokers(vec![broker])
        .with_cluster_id((version >= 2).then(|| text("deltabus")))
        .with_controller_id(BrokerId(NODE))
        .with_topics(topics)
}

/// Consumer groups are coordinated here. A transactional id is refused at once with
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients treat as fatal (librdkafka's
/// `init_transactions` and the Java client's `initTransactions` fail at once, where a
/// retriable COORDINATOR_NOT_AVAILABLE would keep them asking until their timeout); the
/// warning names the client.
fn find_coordinator(
    shared: &Shared,
    session: &Session,
    version: i16,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let (host, port) = &shared.config.advertised;
    let (error, message) = match request.key_type {
        0 => (0, None),
        1 => {
            let ids: Vec<&str> = std::iter::once(request.key.as_str())
                .chain(request.coordinator_keys.iter().map(|k| k.as_str()))
                .filter(|k| !k.is_empty())
                .collect();
            tracing::warn!(client = %session.who(), transactional_ids = ?ids, "kafka.transactional_producer_refused: deltabus takes idempotent producers, not transactions");
            shared.state.metrics.kafka().refused("transactions");
            let why = "transactions are not offered by deltabus: use an idempotent producer (enable.idempotence) without transactional.id";
            (code(ResponseError::TransactionalIdAuthorizationFailed), Some(text(why)))
        }
        other => {
            (code(ResponseError::InvalidRequest), Some(text(format!("coordinator key type {other} is not known"))))
        }
    };
    let answer = FindCoordinatorResponse::default();
    if version < 4 {
        // One key per request, answered in the top-level fields (the message only from v1).
        return answer
            .with_node_id(BrokerId(NODE))
            .with_host(text(host.clone()))
            .with_port(i32::from(*port))
            .with_error_code(error)
            .with_error_message(if version >= 1 { message } else { None });
    }
    let coordinators = request
        .coordinator_keys
        .into_iter()
        .map(|key| {
            Coordinator::default()
                .with_key(key)
                .with_node_id(BrokerId(NODE))
                .with_host(text(host.clone()))
                .with_port(i32::from(*port))
                .with_error_code(error)
                .with_error_message(message.clone())
        })
        .collect();
    answer.with_coordinators(coordinators)
}

/// The SASL mechanisms offered on this connection: SCRAM always, PLAIN over TLS (or where
/// `plain_without_tls` allows it: PLAIN sends the password itself).
fn mechanisms(shared: &Shared, session: &Session) -> Vec<&'static str> {
    let mut out = vec!["SCRAM-SHA-256", "SCRAM-SHA-512"];
    if session.tls || shared.config.plain_without_tls {
        out.push("PLAIN");
    }
    out
}

fn sasl_handshake(shared: &Shared, session: &mut Session, head: &Head, request: SaslHandshakeRequest) -> Reply {
    let offered = mechanisms(shared, session);
    let mut answer = SaslHandshakeResponse::default().with_mechanisms(offered.iter().map(|m| text(*m)).collect());
    let asked = request.mechanism.as_str();
    match (asked, scram::Mechanism::named(asked)) {
        _ if !matches!(session.sasl, Sasl::None) => answer.error_code = code(ResponseError::IllegalSaslState),
        ("PLAIN", _) if offered.contains(&"PLAIN") => session.sasl = Sasl::Plain,
        (_, Some(m)) => session.sasl = Sasl::Scram(m),
        _ => {
            if asked == "PLAIN" {
                tracing::warn!(client = %session.who(), "kafka.plain_refused: SASL/PLAIN is offered over TLS only (server.kafka.plain_without_tls)");
            }
            shared.state.metrics.kafka().refused("authentication");
            answer.error_code = code(ResponseError::UnsupportedSaslMechanism);
        }
    }
    Reply::answer(head.encode(&answer))
}

/// SASL/PLAIN (`[authzid] NUL authcid NUL password`, compared in constant time per user) or a
/// SCRAM exchange's next step (see [`scram`]). A failure is answered, then the connection
/// closed.
fn sasl_authenticate(shared: &Shared, session: &mut Session, head: &Head, request: SaslAuthenticateRequest) -> Reply {
    let fail = |session: &mut Session, user: &str, why: &str| {
        tracing::info!(peer = %session.peer, user = %user, why, "kafka.authentication_failed");
        shared.state.metrics.kafka().refused("authentication");
        session.sasl = Sasl::Over;
        let answer = SaslAuthenticateResponse::default()
            .with_error_code(code(ResponseError::SaslAuthenticationFailed))
            .with_error_message(Some(text("authentication failed: unknown user or wrong password")));
        Reply { frame: Some(head.encode(&answer)), close: true }
    };
    let done = |session: &mut Session, user: String, reply: Vec<u8>| {
        session.sasl = Sasl::Over;
        session.authenticated.store(true, std::sync::atomic::Ordering::Release);
        session.user = Some(user);
        Reply::answer(head.encode(&SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(reply))))
    };
    match std::mem::take(&mut session.sasl) {
        Sasl::Plain => {
            let parts: Vec<&[u8]> = request.auth_bytes.split(|b| *b == 0).collect();
            let [_, user, password] = parts.as_slice() else {
                return fail(session, "", "a SASL/PLAIN message is authzid NUL user NUL password");
            };
            let (user, password) = (String::from_utf8_lossy(user), String::from_utf8_lossy(password));
            let known =
                shared.config.users.iter().fold(false, |found, (u, p)| found | (same(u, &user) & same(p, &password)));
            if !known {
                return fail(session, &user, "unknown user or wrong password");
            }
            done(session, user.to_string(), Vec::new())
        }
        Sasl::Scram(m) => match shared.scram.first(m, &request.auth_bytes) {
            Ok((exchange, server_first)) => {
                session.sasl = Sasl::ScramProof(Box::new(exchange));
                Reply::answer(
                    head.encode(&SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(server_first))),
                )
            }
            Err(why) => fail(session, "", &why),
        },
        Sasl::ScramProof(exchange) => match exchange.last(&request.auth_bytes) {
            Ok(server_final) => done(session, exchange.user.clone(), server_final),
            Err(why) => fail(session, &exchange.user, &why),
        },
        Sasl::None | Sasl::Over => {
            Reply {
                frame: Some(head.encode(
                    &SaslAuthenticateResponse::default().with_error_code(code(ResponseError::IllegalSaslState)),
                )),
                close: true,
            }
        }
    }
}

/// Constant-time comparison: how long it takes says nothing about where a guess went wrong.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn init_producer_id(shared: &Shared, who: &str, request: InitProducerIdRequest) -> InitProducerIdResponse {
    let answer = InitProducerIdResponse::default();
    if let Some(id) = request.transactional_id.as_ref().filter(|t| !t.0.is_empty()) {
        tracing::warn!(client = %who, transactional_id = %id.0.as_str(), "kafka.transactional_producer_refused: deltabus takes idempotent producers, not transactions");
        shared.state.metrics.kafka().refused("transactions");
        return answer
            .with_error_code(code(ResponseError::TransactionalIdAuthorizationFailed))
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
    }
    // A producer that asks to bump its epoch keeps its id (its sequences restart at 0).
    if request.producer_id.0 >= 0 && (0..i16::MAX - 1).contains(&request.producer_epoch) {
        return answer.with_producer_id(request.producer_id).with_producer_epoch(request.producer_epoch + 1);
    }
    match shared.producer_ids.next().await {
        Ok(id) => answer.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Err(e) => {
            tracing::warn!(error = %e, "kafka.producer_id_not_allocated");
            answer
                .with_error_code(code(ResponseError::CoordinatorNotAvailable))
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_larger_than_the_frame_are_refused_before_they_size_an_allocation() {
        // Metadata v1 declaring 0x75757575 topics in 14 bytes (a fuzzer's find: unbounded, the
        // decoder asked for hundreds of GiB and the process aborted).
        let mut frame = Bytes::from_static(&[0, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0x75, 0x75, 0x75, 0x75]);
        let head = super::super::conn::read_head(&mut frame).unwrap();
        assert!(decode_request(&head, frame).is_err());
        // Metadata v9 (flexible): a compact array of 2^31 - 2 topics.
        let mut frame = Bytes::from_static(&[0, 3, 0, 9, 0, 0, 0, 7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x07]);
        let head = super::super::conn::read_head(&mut frame).unwrap();
        assert!(decode_request(&head, frame).is_err());
    }
}
