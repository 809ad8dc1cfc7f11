//! One Kafka-protocol connection.
//!
//! Contract:
//! - A frame is a 4-byte big-endian size and that many bytes; a size below 8 or above
//!   `server.kafka.max_request` closes the connection (the bytes are not read).
//! - A frame is read once `server.max_buffered` has room for it (a Produce request: for its
//!   records too, see `frame`), which it holds until its request is answered (no room: the
//!   connection is not read).
//! - Requests are handled concurrently (a client keeps several produce requests in flight),
//!   at most [`MAX_IN_FLIGHT`] at once (past it the connection is not read: back-pressure), and
//!   answered in the order they arrived, as the protocol requires.
//! - A request that does not decode, an API or version not spoken (but ApiVersions, which is
//!   answered UNSUPPORTED_VERSION with the versions spoken), or anything but ApiVersions and
//!   SASL before a client authenticated when users are configured: the answers already due are
//!   sent, then the connection closes. A failed authentication is answered, then closed.
//! - `acks=0` produce requests get no answer.
//! - On stop, no new request is read; those taken are answered, then the connection closes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::apis;
use super::frame::{self, Frame, Held};
use super::identity::Identity;
use super::Shared;
use crate::serve::attendance::InFlight;

/// Requests of one connection handled at once.
pub(crate) const MAX_IN_FLIGHT: usize = 32;

/// What a handled request comes to.
pub(crate) struct Reply {
    /// The encoded answer (size prefix included); `None`: no answer (`acks=0`).
    pub frame: Option<Bytes>,
    /// Close the connection once this answer is sent.
    pub close: bool,
}

impl Reply {
    pub(crate) fn answer(frame: Bytes) -> Reply {
        Reply { frame: Some(frame), close: false }
    }
}

/// A request taken: its answer, computed now or later.
pub(crate) enum Step {
    Now(Reply),
    Later(BoxFuture<'static, Reply>),
    /// Close without answering (the reason is logged).
    Close(String),
}

/// The authentication state of a connection.
pub(crate) struct Session {
    pub peer: SocketAddr,
    /// No users configured, or the client authenticated (as `user`); shared with the
    /// connection's reader, which reserves room for a Produce request's records only then.
    pub authenticated: Arc<AtomicBool>,
    pub user: Option<String>,
    /// The client id its first request named (for log lines naming the client).
    pub client: Option<String>,
    /// The connection is TLS.
    pub tls: bool,
    /// Where its SASL exchange stands.
    pub sasl: Sasl,
    /// Signalled once the last Produce request taken has handed its batches to the committers
    /// ([`Session::produce_turn`]).
    pub produced: Option<tokio::sync::oneshot::Receiver<()>>,
    /// The connection's produce batches waiting for answers (see `serve::attendance`).
    pub in_flight: Arc<InFlight>,
}

/// A connection's SASL exchange.
#[derive(Debug, Default)]
pub(crate) enum Sasl {
    /// No handshake yet.
    #[default]
    None,
    /// The handshake chose PLAIN.
    Plain,
    /// The handshake chose a SCRAM mechanism; its first message is next.
    Scram(super::scram::Mechanism),
    /// The server answered the first SCRAM message; the client's proof is next.
    ScramProof(Box<super::scram::Exchange>),
    /// Done (or failed: the connection closes).
    Over,
}

/// A Produce request's place in its connection: it hands its batches over once the request
/// before it has (`wait`), then signals the next one (`done`, sent or dropped).
pub(crate) struct Turn {
    pub wait: Option<tokio::sync::oneshot::Receiver<()>>,
    pub done: tokio::sync::oneshot::Sender<()>,
    /// The connection's count of batches waiting for answers.
    pub in_flight: Arc<InFlight>,
    /// What the request's frame holds of `server.max_buffered`.
    pub held: Held,
}

impl Session {
    /// The client as log lines name it: its client id, address and user.
    pub(crate) fn who(&self) -> String {
        format!(
            "client {:?} at {}{}",
            self.client.as_deref().unwrap_or(""),
            self.peer,
            self.user.as_deref().map(|u| format!(" (user {u:?})")).unwrap_or_default()
        )
    }

    /// The next Produce request's turn. Requests are taken concurrently, but a producer's
    /// batches must reach the committers in the order it sent them, as a broker appends them:
    /// otherwise a batch could be decided before the one ahead of it and answered
    /// OUT_OF_ORDER_SEQUENCE_NUMBER while its predecessor succeeds, which idempotent
    /// producers take as a fatal loss of state.
    pub(crate) fn produce_turn(&mut self, held: Held) -> Turn {
        let (done, next) = tokio::sync::oneshot::channel();
        Turn { wait: self.produced.replace(next), done, in_flight: self.in_flight.clone(), held }
    }

    pub(crate) fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// Whom permissions are checked for: the user it logged in as (SASL or certificate), or
    /// `ANONYMOUS`; with the client's description for log lines.
    pub(crate) fn caller(&self) -> super::Caller {
        super::Caller { principal: self.user.as_deref().unwrap_or(super::acl::ANONYMOUS).to_string(), who: self.who() }
    }
}

/// Serves one connection until the client closes it, it breaks a rule, or `stop` turns true.
pub(crate) async fn serve<S>(
    stream: S,
    shared: Arc<Shared>,
    peer: SocketAddr,
    identity: Identity,
    mut stop: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut rd, mut wr) = tokio::io::split(stream);
    let max = shared.config.max_request;
    let (tx, mut frames) = mpsc::channel::<Result<Frame, String>>(2);
    let budget = shared.state.buffered.clone();
    // A verified client certificate authenticates the connection as its common name.
    let authenticated = Arc::new(AtomicBool::new(shared.config.users.is_empty() || identity.certificate.is_some()));
    let reader_authenticated = authenticated.clone();
    let reader = tokio::spawn(async move {
        loop {
            let frame = frame::read(&mut rd, max, &budget, &reader_authenticated).await;
            let last = !matches!(frame, Ok(Some(_)));
            let sent = match frame {
                Ok(Some(f)) => tx.send(Ok(f)).await,
                Ok(None) => return,
                Err(e) => tx.send(Err(e)).await,
            };
            if sent.is_err() || last {
                return;
            }
        }
    });
    let mut session = Session {
        peer,
        authenticated,
        user: identity.certificate,
        client: None,
        tls: identity.tls,
        sasl: Sasl::None,
        produced: None,
        in_flight: InFlight::new(),
    };
    let mut pending: FuturesOrdered<BoxFuture<'static, Reply>> = FuturesOrdered::new();
    let mut closing = false;
    shared.state.metrics.kafka().connections.inc();
    loop {
        if closing && pending.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            Some(reply) = pending.next(), if !pending.is_empty() => {
                if let Some(frame) = reply.frame {
                    if frame.is_empty() {
                        break;
                    }
                    if let Err(e) = wr.write_all(&frame).await {
                        tracing::debug!(%peer, error = %e, "kafka.write_failed");
                        break;
                    }
                }
                if reply.close {
                    closing = true;
                    pending.clear();
                }
            }
            frame = frames.recv(), if !closing && pending.len() < MAX_IN_FLIGHT => match frame {
                // The frame's room in the buffer budget is held until its request is answered.
                Some(Ok(Frame { oversize: Some(o), .. })) => {
                    tracing::info!(%peer, bytes = o.len, client = %session.who(), "kafka.produce_too_large");
                    shared.state.metrics.kafka().refused("too_large");
                    let reply = super::oversize::answer(&o, shared.config.max_request);
                    pending.push_back(Box::pin(async move { reply }));
                }
                Some(Ok(Frame { bytes, room, held, oversize: None })) => match take(&shared, &mut session, bytes, held) {
                    Step::Now(reply) => pending.push_back(Box::pin(async move { reply })),
                    Step::Later(fut) => pending.push_back(Box::pin(async move {
                        let reply = fut.await;
                        drop(room);
                        reply
                    })),
                    Step::Close(why) => {
                        tracing::info!(%peer, reason = %why, "kafka.connection_closed");
                        shared.state.metrics.kafka().refused("bad_request");
                        closing = true;
                    }
                },
                Some(Err(why)) => {
                    tracing::info!(%peer, reason = %why, "kafka.connection_closed");
                    shared.state.metrics.kafka().refused("bad_frame");
                    closing = true;
                }
                None => closing = true,
            },
            () = super::super::stopped(&mut stop), if !closing => closing = true,
        }
    }
    let _ = wr.shutdown().await;
    reader.abort();
    session.in_flight.close();
    shared.state.metrics.kafka().connections.dec();
}

/// Decodes a request's header and hands it to its API.
fn take(shared: &Arc<Shared>, session: &mut Session, mut frame: Bytes, held: Held) -> Step {
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let Ok(api) = ApiKey::try_from(key) else { return Step::Close(format!("unknown API key {key}")) };
    if api == ApiKey::ApiVersions && !apis::spoken(api, version) {
        // A version not spoken may have a header not known either: only the correlation id
        // is read, and the answer is v0.
        let correlation = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        shared.state.metrics.kafka().request(api);
        return Step::Now(apis::api_versions(&Head { api, version, correlation }));
    }
    if session.client.is_none() {
        session.client = client_id(&frame);
    }
    let head = match read_head(&mut frame) {
        Ok(h) => h,
        Err(why) => return Step::Close(why),
    };
    shared.state.metrics.kafka().request(api);
    if api == ApiKey::ApiVersions {
        return Step::Now(apis::api_versions(&head));
    }
    if !apis::spoken(api, version) {
        return Step::Close(format!("{api:?} v{version} is not spoken here (see ApiVersions)"));
    }
    if !session.is_authenticated() && !matches!(api, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) {
        return Step::Close(format!("{api:?} before SASL authentication"));
    }
    let body = frame;
    match apis::dispatch(shared, session, &head, body, held) {
        Ok(Step::Later(fut)) => {
            use tracing::Instrument;
            Step::Later(Box::pin(fut.instrument(tracing::info_span!("kafka.request", api = ?api, version))))
        }
        Ok(step) => step,
        Err(e) => Step::Close(format!("a {api:?} v{version} request that does not decode: {e}")),
    }
}

/// Reads a request frame's header (the frame is at least 8 bytes), leaving the body.
///
/// # Errors
/// An unknown API key, or a header that does not decode.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn read_head(frame: &mut Bytes) -> Result<Head, String> {
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(key).map_err(|()| format!("unknown API key {key}"))?;
    let header = RequestHeader::decode(frame, api.request_header_version(version))
        .map_err(|e| format!("a {api:?} v{version} request header that does not decode: {e}"))?;
    Ok(Head { api, version, correlation: header.correlation_id })
}

/// The client id of a request frame (every header version from 1 spells it as a nullable
/// string after the correlation id).
fn client_id(frame: &[u8]) -> Option<String> {
    let len = usize::try_from(i16::from_be_bytes([*frame.get(8)?, *frame.get(9)?])).ok()?;
    let bytes = frame.get(10..10 + len)?;
    Some(String::from_utf8_lossy(bytes).chars().take(200).collect())
}

/// The header fields an answer needs.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Head {
    pub api: ApiKey,
    pub version: i16,
    pub correlation: i32,
}

impl Head {
    /// Encodes `body` as the answer to this request, size prefix included.
    pub(crate) fn encode<R: Encodable>(&self, body: &R) -> Bytes {
        self.encode_as(body, self.version)
    }

    /// Encodes `body` at `version` (ApiVersions answers an unknown version at 0).
    pub(crate) fn encode_as<R: Encodable>(&self, body: &R, version: i16) -> Bytes {
        let header = ResponseHeader::default().with_correlation_id(self.correlation);
        // Sized up front: a fetch answer of megabytes is not copied over while it grows.
        let size = body.compute_size(version).unwrap_or(0);
        let mut buf = BytesMut::with_capacity(size + 64);
        buf.extend_from_slice(&[0; 4]);
        let encoded = header
            .encode(&mut buf, self.api.response_header_version(version))
            .and_then(|()| body.encode(&mut buf, version));
        if let Err(e) = encoded {
            // Every answer is built from fields of its own version; an answer that does not
            // encode is a bug, answered by closing the connection.
            tracing::error!(api = ?self.api, version, error = %e, "kafka.answer_not_encoded");
            return Bytes::new();
        }
        let size = i32::try_from(buf.len() - 4).unwrap_or(i32::MAX);
        buf[..4].copy_from_slice(&size.to_be_bytes());
        buf.freeze()
    }
}

/// Decodes a request body of `version`; bytes left over are logged and ignored.
pub(crate) fn decode<R: Decodable>(mut body: Bytes, version: i16) -> Result<R, String> {
    let r = R::decode(&mut body, version).map_err(|e| e.to_string())?;
    if body.has_remaining() {
        tracing::debug!(left = body.remaining(), "kafka.request_trailing_bytes");
    }
    Ok(r)
}
