//! Reading a request frame, and the room in `server.max_buffered` it takes first.
//!
//! Contract:
//! - A frame is a 4-byte big-endian size and that many bytes; a size below 8 is an error (the
//!   bytes are not read), and so is one above `server.kafka.max_request`, except an
//!   authenticated client's Produce request, read to its end without being kept and
//!   answered MESSAGE_TOO_LARGE (`oversize`).
//! - The first bytes of a frame (at most [`PREFIX`]) are read before its room is taken. A
//!   Produce request of an authenticated connection takes `HOLD_FACTOR` times its bytes at
//!   once, what its records hold as sent until answered ([`Held::Records`]), waiting at most its
//!   `timeout_ms`: frames waiting for room stay in the socket, not in memory. Once that has
//!   passed the frame is read with room for its bytes alone and every partition is answered
//!   REQUEST_TIMED_OUT ([`Held::TimedOut`]). Other requests, and requests before SASL
//!   authentication, take room for their bytes ([`Held::Frame`]).
//! - While a frame waits for room the connection is not read: the client's own limits hold
//!   its later requests back, as a broker that mutes a connection does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::Decodable;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::OwnedSemaphorePermit;

use crate::config::server::HOLD_FACTOR;
use crate::serve::budget::Budget;

/// Bytes of a frame read before its room is taken: enough for a Produce request's header,
/// transactional id, acks and timeout, unless its client id is very long.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) const PREFIX: usize = 1024;

/// What a frame holds of `server.max_buffered` from when it is read until it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// Its bytes: a Produce request takes the room for its records itself.
    Frame,
    /// `HOLD_FACTOR` times its bytes: room for its records as sent too.
    Records,
    /// Its bytes, after room for its records did not come within its `timeout_ms`.
    TimedOut,
}

/// A request frame with its room in the budget.
pub(crate) struct Frame {
    pub bytes: Bytes,
    pub room: OwnedSemaphorePermit,
    pub held: Held,
    /// A Produce request over `max_request`, read to its end but not kept (`bytes` empty).
    pub oversize: Option<super::oversize::Oversize>,
}

/// Reads one frame once the budget has room for it (see the contract); `None` at a clean end
/// of stream.
///
/// # Errors
/// A size out of bounds, a read that failed, or a server that is stopping.
pub(crate) async fn read<R: AsyncRead + Unpin>(
    rd: &mut R,
    max: usize,
    budget: &Budget,
    authenticated: &AtomicBool,
) -> Result<Option<Frame>, String> {
    let mut size = [0u8; 4];
    match rd.read_exact(&mut size).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(format!("reading a frame: {e}")),
    }
    let size = i32::from_be_bytes(size);
    let len = usize::try_from(size).map_err(|_| format!("a negative frame size ({size})"))?;
    if len < 8 {
        return Err(format!("a frame of {len} bytes is too short for a request header"));
    }
    if len > max {
        let too_large = format!("a request of {len} bytes is over server.kafka.max_request ({max})");
        // An authenticated client's Produce request is answered MESSAGE_TOO_LARGE (which
        // clients do not retry); anything else closes the connection unread.
        if !authenticated.load(Ordering::Acquire) {
            return Err(too_large);
        }
        let mut head = [0u8; PREFIX];
        rd.read_exact(&mut head).await.map_err(|e| format!("reading a frame of {len} bytes: {e}"))?;
        let room = budget.take(PREFIX as u64).await.map_err(|_| "the server is stopping".to_string())?;
        return match super::oversize::drain(rd, &head, len).await {
            Some(o) => Ok(Some(Frame { bytes: Bytes::new(), room, held: Held::Frame, oversize: Some(o) })),
            None => Err(too_large),
        };
    }
    let mut head = [0u8; PREFIX];
    let head = &mut head[..len.min(PREFIX)];
    rd.read_exact(head).await.map_err(|e| format!("reading a frame of {len} bytes: {e}"))?;
    let timeout = if authenticated.load(Ordering::Acquire) { produce_timeout(head) } else { None };
    let permits = |factor: u64| (len as u64).saturating_mul(factor);
    let stopping = |_| "the server is stopping".to_string();
    let (room, held) = match timeout {
        Some(timeout) => match tokio::time::timeout(timeout, budget.take(permits(HOLD_FACTOR))).await {
            Ok(room) => (room.map_err(stopping)?, Held::Records),
            Err(_) => (budget.take(permits(1)).await.map_err(stopping)?, Held::TimedOut),
        },
        None => (budget.take(permits(1)).await.map_err(stopping)?, Held::Frame),
    };
    let mut buf = BytesMut::with_capacity(len);
    buf.extend_from_slice(head);
    buf.resize(len, 0);
    rd.read_exact(&mut buf[head.len()..]).await.map_err(|e| format!("reading a frame of {len} bytes: {e}"))?;
    Ok(Some(Frame { bytes: buf.freeze(), room, held, oversize: None }))
}

/// How long a Produce request waits for room, as its `timeout_ms` says (see
/// [`request_timeout`]); `None` for other requests, versions not spoken, or a head that does
/// not decode from `prefix` (the request is then read as any other and refused or handled as
/// its whole frame says).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn produce_timeout(prefix: &[u8]) -> Option<Duration> {
    let key = i16::from_be_bytes([prefix[0], prefix[1]]);
    let version = i16::from_be_bytes([prefix[2], prefix[3]]);
    if ApiKey::try_from(key) != Ok(ApiKey::Produce) || !super::wire::spoken(ApiKey::Produce, version) {
        return None;
    }
    let mut b = Bytes::copy_from_slice(prefix);
    RequestHeader::decode(&mut b, ApiKey::Produce.request_header_version(version)).ok()?;
    // The body: transactional_id (a nullable string, compact from v9), acks, timeout_ms.
    let id_len = if version >= 9 {
        usize::try_from(varint(&mut b)?).ok()?.saturating_sub(1)
    } else {
        usize::try_from(b.try_get_i16().ok()?).unwrap_or(0)
    };
    if b.remaining() < id_len + 6 {
        return None;
    }
    b.advance(id_len + 2);
    Some(request_timeout(b.get_i32()))
}

/// An unsigned varint, read as the request decoder reads it: at most five bytes, the bits past
/// 32 dropped.
fn varint(b: &mut Bytes) -> Option<u32> {
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        let byte = b.try_get_u8().ok()?;
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    Some(value)
}

/// A Produce request's `timeout_ms` as a wait: 30 s when not positive, at most 5 minutes.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn request_timeout(timeout_ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(timeout_ms).ok().filter(|m| *m > 0).unwrap_or(30_000).min(300_000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::ProduceRequest;
    use kafka_protocol::protocol::Encodable;

    fn frame(version: i16, client: &str, timeout_ms: i32) -> Vec<u8> {
        let mut b = BytesMut::new();
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::Produce as i16)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(kafka_protocol::protocol::StrBytes::from_string(client.into())));
        header.encode(&mut b, ApiKey::Produce.request_header_version(version)).unwrap();
        ProduceRequest::default().with_acks(-1).with_timeout_ms(timeout_ms).encode(&mut b, version).unwrap();
        b.to_vec()
    }

    #[test]
    fn a_produce_request_waits_its_timeout() {
        for version in [3, 8, 9] {
            assert_eq!(produce_timeout(&frame(version, "rdkafka-ü", 1_500)), Some(Duration::from_millis(1_500)));
            assert_eq!(produce_timeout(&frame(version, "c", 0)), Some(Duration::from_secs(30)));
            assert_eq!(produce_timeout(&frame(version, "c", i32::MAX)), Some(Duration::from_secs(300)));
        }
    }

    #[test]
    fn an_overlong_varint_is_read_as_the_request_decoder_reads_it() {
        // v9: the header ends with its tagged fields (one byte, none); the transactional id's
        // length follows, here spelled in five bytes, the last with its continuation bit.
        let plain = frame(9, "c", 1_500);
        let at = 8 + 2 + 1 + 1;
        let mut long = plain[..at].to_vec();
        long.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80]);
        long.extend_from_slice(&plain[at + 1..]);
        let mut b = Bytes::copy_from_slice(&long);
        RequestHeader::decode(&mut b, 2).unwrap();
        let decoded = ProduceRequest::decode(&mut b, 9).unwrap();
        assert_eq!(produce_timeout(&long), Some(request_timeout(decoded.timeout_ms)));
    }

    #[test]
    fn a_head_past_the_prefix_or_another_request_takes_room_for_its_bytes() {
        let long = frame(9, &"x".repeat(2 * PREFIX), 1_000);
        assert_eq!(produce_timeout(&long[..PREFIX]), None);
        let mut fetch = frame(9, "c", 1_000);
        fetch[1] = ApiKey::Fetch as u8;
        assert_eq!(produce_timeout(&fetch), None);
        let mut old = frame(3, "c", 1_000);
        old[3] = 2;
        assert_eq!(produce_timeout(&old), None, "Produce v2 is not spoken");
        assert_eq!(produce_timeout(&[0, 0, 0, 9, 0, 0, 0, 1]), None, "a header cut short");
    }

    #[tokio::test]
    async fn a_produce_frame_without_room_in_time_is_read_as_timed_out() {
        let bytes = frame(9, "c", 50);
        let mut wire = (bytes.len() as i32).to_be_bytes().to_vec();
        wire.extend_from_slice(&bytes);
        let yes = AtomicBool::new(true);
        // Room for six times the frame: its records' room is taken with it.
        let budget = Budget::new(bytes.len() as u64 * 6);
        let f = read(&mut wire.as_slice(), 1 << 20, &budget, &yes).await.unwrap().unwrap();
        assert_eq!((f.held, f.room.num_permits(), &f.bytes[..]), (Held::Records, bytes.len() * 6, &bytes[..]));
        // Room for less: it waits its 50 ms, then is read with room for its bytes.
        let budget = Budget::new(bytes.len() as u64 * 2);
        let f = read(&mut wire.as_slice(), 1 << 20, &budget, &yes).await.unwrap().unwrap();
        assert_eq!((f.held, f.room.num_permits()), (Held::TimedOut, bytes.len()));
        // Before authentication: its bytes only.
        let no = AtomicBool::new(false);
        let f = read(&mut wire.as_slice(), 1 << 20, &budget, &no).await.unwrap().unwrap();
        assert_eq!((f.held, f.room.num_permits()), (Held::Frame, bytes.len()));
    }
}
