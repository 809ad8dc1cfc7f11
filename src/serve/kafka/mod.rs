//! The Kafka-protocol listener (`[server.kafka]`): Kafka clients produce into served tables
//! with no broker, exactly once for idempotent producers.
//!
//! Floors, lowest first (a module imports only from its own floor and below):
//! [`wire`] (versions spoken, headers, answers' encoding) → [`frame`] and [`oversize`] (frames
//! read within the memory budget) → [`session`] (a connection's state) → the APIs → [`apis`]
//! (dispatch) → [`conn`] (the connection loop).
//!
//! - [`conn`]: one connection: frames in, requests handled concurrently, answers in request
//!   order; SASL (SCRAM-SHA-256/512 [`scram`], PLAIN over TLS) or a client certificate
//!   ([`identity`]) before anything but ApiVersions; a bad frame closes the connection.
//! - [`acl`] [sync]: per-principal permissions on topics and groups, checked by every API.
//! - [`apis`]: the versions spoken, and the answers that need no table (ApiVersions,
//!   Metadata, FindCoordinator, SASL, InitProducerId); [`producer_ids`]: producer ids claimed
//!   in blocks from a table's root, put-if-absent, so no two servers or restarts hand out one
//!   twice.
//! - [`produce`]: Produce requests into the tables' group committers;
//!   [`records`] [sync]: record batches into sequence ranges and rows; [`inflate`] [sync]:
//!   compressed records inflated within a bound.
//! - [`feed`]: a topic's change feed as partitions and offsets; [`fetch`]: Fetch and
//!   ListOffsets over it; [`offsets`]: OffsetCommit and OffsetFetch, a group's positions kept
//!   as follower registrations of the table (`deltabus followers` lists them, VACUUM keeps what
//!   they still need).
//!
//! Exactly once: an idempotent producer's batch of n records from base sequence b at epoch e,
//! on partition p of topic t, lands in the same commit as
//! `txn(appId = "deltabus-kafka:<producer id>:<p>:<t>", version = e << 32 | (b + n - 1))`, and
//! only when it continues what the table holds for that producer and partition (or starts a
//! newer epoch at sequence 0). The table is the only memory: a retry after a crash, a restart
//! or on another server finds its batch committed and is answered as a success; a batch past
//! the next sequence gets OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch INVALID_PRODUCER_EPOCH.
//! Success is answered only after the commit that holds the batch landed.

internal_mods!(acl);
internal_mods!(apis);
internal_mods!(conn);
internal_mods!(feed);
internal_mods!(fetch);
internal_mods!(frame);
internal_mods!(identity);
internal_mods!(inflate);
internal_mods!(offsets);
internal_mods!(oversize);
internal_mods!(produce);
internal_mods!(producer_ids);
internal_mods!(records);
internal_mods!(registered);
internal_mods!(scram);
internal_mods!(session);
internal_mods!(wire);

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::routes::AppState;
use crate::config::kafka::ResolvedKafka;
use crate::error::Result;

/// What every connection shares.
pub(crate) struct Shared {
    pub state: Arc<AppState>,
    pub config: ResolvedKafka,
    pub producer_ids: producer_ids::ProducerIds,
    /// Each topic's change feed.
    pub feeds: std::collections::BTreeMap<String, Arc<feed::Feed>>,
    /// Avro and Protobuf topics' registry clients and decoders.
    pub registered: registered::ByTopic,
    /// The users' SCRAM credentials.
    pub scram: scram::ScramUsers,
    /// Who may do what.
    pub acls: acl::Acls,
}

/// Who is asking, for permission checks and the log lines of denials.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub principal: String,
    /// The client as log lines name it.
    pub who: String,
}

impl Shared {
    /// Whether `caller` may do `op` to `topic`; a denial is logged with the principal and
    /// counted (`deltabus_kafka_refusals_total{reason="denied"}`).
    pub(crate) fn may(&self, caller: &Caller, op: acl::TopicOp, topic: &str) -> bool {
        let ok = self.acls.topic(&caller.principal, op, topic);
        if !ok {
            tracing::warn!(principal = %caller.principal, client = %caller.who, operation = op.name(), topic, "kafka.denied");
            self.state.metrics.kafka().refused("denied");
        }
        ok
    }

    /// Whether `caller` may commit and fetch `group`'s offsets; a denial is logged and counted.
    pub(crate) fn may_group(&self, caller: &Caller, group: &str) -> bool {
        let ok = self.acls.group(&caller.principal, group);
        if !ok {
            tracing::warn!(principal = %caller.principal, client = %caller.who, group, "kafka.denied");
            self.state.metrics.kafka().refused("denied");
        }
        ok
    }
}

/// A running listener.
pub(crate) struct Listener {
    pub local_addr: SocketAddr,
    pub task: tokio::task::JoinHandle<()>,
}

/// Binds the address and serves until `stop` turns true; then connections answer what they
/// took (for up to `grace`) and close.
///
/// # Errors
/// An address that cannot be bound, TLS files that do not read, a table whose root does not
/// open.
pub(crate) async fn start(
    state: Arc<AppState>,
    config: ResolvedKafka,
    stop: watch::Receiver<bool>,
    grace: Duration,
) -> Result<Listener> {
    let tls = match &config.tls {
        Some((cert, key)) => Some(super::listener::tls_acceptor_verifying(
            "server.kafka",
            cert,
            key,
            Vec::new(),
            config.tls_client_ca.as_deref(),
        )?),
        None => None,
    };
    let socket = super::listener::bind(config.listen).await?;
    let local_addr = socket.local_addr()?;
    let mut config = config;
    if config.advertised.1 == 0 {
        // Listening on port 0: tell clients the port chosen.
        config.advertised.1 = local_addr.port();
    }
    let producer_ids = producer_ids::ProducerIds::new(producer_ids::home_table(&state, &config)?);
    let feeds = config
        .topics
        .iter()
        .filter_map(|(name, t)| {
            let table = state.tables.get(&t.table)?.table.clone();
            Some((name.clone(), Arc::new(feed::Feed::new(table, t.partitions, t.format))))
        })
        .collect();
    let registries = crate::decode::registry::Registries::default();
    let mut registered = registered::ByTopic::new();
    for (name, t) in &config.topics {
        if let (true, Some(r)) = (t.format.uses_registry(), &t.schema_registry) {
            registered.insert(name.clone(), registered::TopicDecoders::new(registries.client(r)?, t.format));
        }
    }
    let scram = scram::ScramUsers::new(&config.users);
    let acls = acl::Acls::new(config.acls.clone());
    let shared = Arc::new(Shared { state, config, producer_ids, feeds, registered, scram, acls });
    tracing::info!(addr = %local_addr, tls = tls.is_some(), topics = shared.config.topics.len(),
        sasl = !shared.config.users.is_empty(), acls = shared.acls.enforced(), "kafka.listening");
    let task = tokio::spawn(accept(socket, tls, shared, stop, grace));
    Ok(Listener { local_addr, task })
}

async fn accept(
    socket: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
) {
    let mut connections = JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = socket.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "kafka.accept_failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = super::stopped(&mut stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let _ = tcp.set_nodelay(true);
        let (shared, stop, tls) = (shared.clone(), stop.clone(), tls.clone());
        let span = tracing::info_span!("kafka.conn", %peer);
        connections.spawn(tracing::Instrument::instrument(async move {
            match tls {
                None => conn::serve(tcp, shared, peer, identity::Identity::default(), stop).await,
                Some(acceptor) => match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => {
                        let certificate = stream.get_ref().1.peer_certificates().and_then(|c| c.first()).map(|c| identity::common_name(c));
                        if certificate == Some(None) {
                            tracing::warn!(%peer, "kafka.client_certificate_without_name: the connection is not authenticated by it");
                        }
                        let identity = identity::Identity { tls: true, certificate: certificate.flatten() };
                        conn::serve(stream, shared, peer, identity, stop).await
                    }
                    Ok(Err(e)) => tracing::debug!(%peer, error = %e, "kafka.tls_handshake_failed"),
                    Err(_) => tracing::debug!(%peer, "kafka.tls_handshake_timed_out"),
                },
            }
        }, span));
    }
    drop(socket);
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(grace, drained).await.is_err() {
        tracing::warn!("kafka.drain_timed_out: connections still open were closed");
    }
}
