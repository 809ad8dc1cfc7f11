//! [sync] The wire level of the Kafka protocol, below everything else of the listener: the
//! versions spoken, a request's header fields and the encoding of its answer, a request
//! body's decoding. Imports nothing of the listener.

use bytes::{Buf, Bytes, BytesMut};
use futures::future::BoxFuture;
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

/// (API, lowest, highest version) spoken.
pub(crate) const SPOKEN: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 7),
    (ApiKey::Metadata, 1, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::SaslHandshake, 1, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// Whether `version` of `api` is spoken.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn spoken(api: ApiKey, version: i16) -> bool {
    SPOKEN.iter().any(|(a, lo, hi)| *a == api && (*lo..=*hi).contains(&version))
}

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
