//! Push ingest over HTTP: producers write JSON lines (or Arrow IPC streams) into Delta
//! tables, exactly once per producer, with no Kafka in between.
//!
//! - [`sequence`] [sync]: which requests of a group may land (producer id and sequence
//!   against the table's `txn` versions).
//! - [`body`] [sync]: a request body into rows against the table schema.
//! - [`group`]: one task per table that commits the requests of each window together and
//!   answers each after its commit; [`latest`]: the table as the server knows it, read fresh
//!   for every answer about a position; [`attendance`] [sync]: when a group may close before its
//!   window ends; [`dead_letters`]: bad lines a request sends there.
//! - [`budget`]: the room requests in flight take of `server.max_buffered`; [`routes`]: the
//!   endpoints; [`listener`]: HTTP/1.1 and HTTP/2, TLS, graceful stop.
//!
//! Exactly once: a request with `Producer-Id: P` and `Producer-Sequence: n` lands in the same
//! commit as `txn(appId = "deltabus-push:P", version = n)`, and only when the table's version
//! for P is n - 1 (or P is new and n is 0). The table is the only memory: a restarted server,
//! or another server on the same table, answers a retry of n "already committed" and a jump
//! past the next sequence 409. Success is answered only after the commit landed.

internal_mods!(attendance);
internal_mods!(body);
internal_mods!(budget);
internal_mods!(dead_letters);
internal_mods!(decoders);
internal_mods!(group);
internal_mods!(kafka);
internal_mods!(latest);
internal_mods!(listener);
internal_mods!(routes);
internal_mods!(sequence);

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use self::group::GroupCommitter;
use self::routes::{AppState, TableHandle};
use crate::config::server::ResolvedServer;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::storage::{StorageOptions, Table};

/// A running server.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Server {
    /// Where it listens (the port chosen when `listen` said 0).
    pub local_addr: SocketAddr,
    /// Where the Kafka-protocol listener listens, when `[server.kafka]` is set.
    pub kafka_addr: Option<SocketAddr>,
    listener: tokio::task::JoinHandle<()>,
    kafka: Option<tokio::task::JoinHandle<()>>,
    committers: JoinSet<()>,
    stop_committers: watch::Sender<bool>,
}

/// Opens the tables, binds the address and starts serving; stops when `stop` turns true
/// (then [`Server::stopped`] returns once the last answer is sent).
///
/// # Errors
/// A table URL that does not open, an address that cannot be bound, TLS files that do not
/// read.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn start(
    config: ResolvedServer,
    storage: StorageOptions,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
    grace: Duration,
) -> Result<Server> {
    if config.tables.is_empty() {
        return Err(Error::InvalidArgument(
            "no tables to serve: add a [server.tables.<name>] section, or --table NAME=URL".into(),
        ));
    }
    let tls = match &config.tls {
        Some((cert, key)) => Some(listener::tls_acceptor(cert, key)?),
        None => None,
    };
    let (stop_committers, committers_stop) = watch::channel(false);
    let mut committers = JoinSet::new();
    let mut tables = BTreeMap::new();
    for (name, settings) in &config.tables {
        let table = Table::open_for_write(&settings.settings.table, storage.clone())
            .map_err(|e| Error::InvalidArgument(format!("server.tables.{name}: {e}")))?;
        let dead_letters = match &settings.settings.dead_letters {
            Some(url) => Some(
                Table::open_for_write(url, storage.clone())
                    .map_err(|e| Error::InvalidArgument(format!("server.tables.{name}.dead_letters: {e}")))?,
            ),
            None => None,
        };
        let latest = self::latest::Latest::new(table.clone());
        let (tx, rx) = mpsc::unbounded_channel();
        let ready = Arc::new(AtomicBool::new(false));
        let push = metrics.push_table(name);
        let committer = GroupCommitter {
            table: table.clone(),
            settings: settings.clone(),
            window: config.commit_window,
            max_bytes: config.max_commit_bytes,
            metrics: push.clone(),
            latest: latest.clone(),
            dead_letters,
        };
        let (flag, stop) = (ready.clone(), committers_stop.clone());
        let span = tracing::info_span!("push.table", table = %name);
        committers.spawn(tracing::Instrument::instrument(
            async move {
                if committer.open(&flag, stop.clone()).await {
                    committer.run(rx, stop).await;
                }
            },
            span,
        ));
        tables.insert(
            name.clone(),
            TableHandle { settings: settings.clone(), table, latest, ready, commits: tx, metrics: push },
        );
    }
    let socket = listener::bind(config.listen).await?;
    let local_addr = socket.local_addr()?;
    let (read_timeout, max_buffered) = (config.read_timeout, config.max_buffered);
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let state = Arc::new(AppState {
        config,
        tables,
        buffered: budget::Budget::new(max_buffered),
        decoders: decoders::Decoders::start(cores)?,
        metrics,
    });
    tracing::info!(
        addr = %local_addr,
        tls = tls.is_some(),
        tables = state.tables.len(),
        auth = state.config.auth_required(),
        "push.listening"
    );
    let kafka = match state.config.kafka.clone() {
        Some(k) => Some(kafka::start(state.clone(), k, stop.clone(), grace).await?),
        None => None,
    };
    let kafka_addr = kafka.as_ref().map(|k| k.local_addr);
    let listener = listener::spawn(socket, tls, routes::router(state), read_timeout, grace, stop);
    Ok(Server { local_addr, kafka_addr, listener, kafka: kafka.map(|k| k.task), committers, stop_committers })
}

/// Resolves once `stop` is true (or its sender is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

impl Server {
    /// Waits until the server has stopped: connections drained, then every table's queued
    /// requests committed and answered.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn stopped(mut self) {
        let _ = (&mut self.listener).await;
        if let Some(kafka) = self.kafka.take() {
            let _ = kafka.await;
        }
        let _ = self.stop_committers.send(true);
        while self.committers.join_next().await.is_some() {}
    }
}

impl GroupCommitter {
    /// Reads the table until it opens (retrying a failing store every second), publishes it
    /// and marks the table ready (a table that does not exist yet opens too); `false` when
    /// stopped first.
    async fn open(&self, ready: &AtomicBool, mut stop: watch::Receiver<bool>) -> bool {
        loop {
            match self.latest.fresh().await {
                Ok(_) => {
                    ready.store(true, Ordering::Release);
                    return true;
                }
                Err(e) => tracing::warn!(error = %e, "push.table_not_open: retrying"),
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                () = stopped(&mut stop) => return false,
            }
        }
    }
}
