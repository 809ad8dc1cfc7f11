//! The Kafka-protocol listener (`[server.kafka]`): Kafka clients produce into served tables
//! with no broker, exactly once for idempotent producers.
//!
//! - [`conn`]: one connection: frames in, requests handled concurrently, answers in request
//!   order; SASL/PLAIN before anything but ApiVersions; a bad frame closes the connection.
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

internal_mods!(apis);
internal_mods!(conn);
internal_mods!(feed);
internal_mods!(fetch);
internal_mods!(frame);
internal_mods!(inflate);
internal_mods!(offsets);
internal_mods!(produce);
internal_mods!(producer_ids);
internal_mods!(records);
internal_mods!(registered);

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
        Some((cert, key)) => Some(super::listener::tls_acceptor_for("server.kafka", cert, key, Vec::new())?),
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
    let shared = Arc::new(Shared { state, config, producer_ids, feeds, registered });
    tracing::info!(addr = %local_addr, tls = tls.is_some(), topics = shared.config.topics.len(),
        sasl = !shared.config.users.is_empty(), "kafka.listening");
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
                None => conn::serve(tcp, shared, peer, stop).await,
                Some(acceptor) => match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => conn::serve(stream, shared, peer, stop).await,
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
