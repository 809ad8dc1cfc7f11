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
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, StreamExt};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::Decodable;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::apis;
use super::frame::{self, Frame, Held};
use super::identity::Identity;
use super::session::{Sasl, Session};
use super::wire::{Head, Reply, Step};
use super::Shared;
use crate::serve::attendance::InFlight;

/// Requests of one connection handled at once.
pub(crate) const MAX_IN_FLIGHT: usize = 32;

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
    if api == ApiKey::ApiVersions && !super::wire::spoken(api, version) {
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
    if !super::wire::spoken(api, version) {
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
