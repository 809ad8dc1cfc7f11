//! A Produce request larger than `server.kafka.max_request`, answered instead of cut off.
//!
//! A broker answers a request whose records are too large MESSAGE_TOO_LARGE, which clients do
//! not retry; a connection closed unanswered makes them retry until their delivery timeout.
//! So the frame of an authenticated connection's Produce request past the bound is read to
//! its end without being kept: its header, then the topics and partitions it names (their
//! records skipped in 64 KiB reads), in the v3–v8 and the flexible v9 encodings. Its answer
//! is MESSAGE_TOO_LARGE for every partition (nothing of it lands), or none under `acks=0`. A
//! frame this walk cannot read (another API, a version not spoken, counts past what the
//! frame can hold) still closes the connection.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::wire::{Head, Reply};

/// What an oversize Produce request named.
#[derive(Debug, Clone)]
pub(crate) struct Oversize {
    pub head: Head,
    pub acks: i16,
    pub len: usize,
    pub topics: Vec<(String, Vec<i32>)>,
}

/// The frame's bytes: those read already (`head`), then the rest from the socket.
struct Source<'a, R> {
    head: &'a [u8],
    at: usize,
    rd: &'a mut R,
    /// Bytes of the frame still in the socket.
    left: usize,
}

type Walk<T> = Result<T, ()>;

impl<R: AsyncRead + Unpin> Source<'_, R> {
    async fn u8(&mut self) -> Walk<u8> {
        if let Some(b) = self.head.get(self.at) {
            self.at += 1;
            return Ok(*b);
        }
        if self.left == 0 {
            return Err(());
        }
        self.left -= 1;
        self.rd.read_u8().await.map_err(|_| ())
    }

    async fn take(&mut self, n: usize) -> Walk<Vec<u8>> {
        if n > self.head.len() - self.at + self.left {
            return Err(());
        }
        let mut out = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            out.push(self.u8().await?);
        }
        Ok(out)
    }

    async fn skip(&mut self, n: usize) -> Walk<()> {
        let here = n.min(self.head.len() - self.at);
        self.at += here;
        let mut rest = n - here;
        if rest > self.left {
            return Err(());
        }
        let mut scratch = vec![0u8; rest.min(1 << 16)];
        while rest > 0 {
            let chunk = rest.min(scratch.len());
            self.rd.read_exact(&mut scratch[..chunk]).await.map_err(|_| ())?;
            self.left -= chunk;
            rest -= chunk;
        }
        Ok(())
    }

    async fn i16(&mut self) -> Walk<i16> {
        Ok(i16::from_be_bytes([self.u8().await?, self.u8().await?]))
    }

    async fn i32(&mut self) -> Walk<i32> {
        let mut b = [0u8; 4];
        for x in &mut b {
            *x = self.u8().await?;
        }
        Ok(i32::from_be_bytes(b))
    }

    async fn uvarint(&mut self) -> Walk<u32> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let byte = self.u8().await?;
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(())
    }

    /// A length: `i16`/`i32` (-1: null) or, flexible, an unsigned varint of length + 1.
    async fn len(&mut self, flexible: bool, wide: bool) -> Walk<Option<usize>> {
        let n = if flexible {
            i64::from(self.uvarint().await?) - 1
        } else if wide {
            i64::from(self.i32().await?)
        } else {
            i64::from(self.i16().await?)
        };
        Ok(usize::try_from(n).ok())
    }

    async fn tagged_fields(&mut self) -> Walk<()> {
        for _ in 0..self.uvarint().await? {
            self.uvarint().await?;
            let size = self.uvarint().await? as usize;
            self.skip(size).await?;
        }
        Ok(())
    }
}

/// Reads the rest of an oversize frame of `len` bytes whose first bytes are `head`, keeping
/// only what a Produce request names; `None` when the frame is not such a request (its bytes
/// are then not all read: the connection must close).
pub(crate) async fn drain<R: AsyncRead + Unpin>(rd: &mut R, head: &[u8], len: usize) -> Option<Oversize> {
    let mut s = Source { head, at: 0, rd, left: len - head.len() };
    walk(&mut s, len).await.ok()
}

async fn walk<R: AsyncRead + Unpin>(s: &mut Source<'_, R>, len: usize) -> Walk<Oversize> {
    let api = s.i16().await?;
    let version = s.i16().await?;
    if ApiKey::try_from(api) != Ok(ApiKey::Produce) || !super::wire::spoken(ApiKey::Produce, version) {
        return Err(());
    }
    let correlation = s.i32().await?;
    let flexible = version >= 9;
    // The header's client id is a nullable i16 string in every header version.
    if let Some(n) = s.len(false, false).await? {
        s.skip(n).await?;
    }
    if flexible {
        s.tagged_fields().await?;
    }
    if let Some(n) = s.len(flexible, false).await? {
        s.skip(n).await?;
    }
    let acks = s.i16().await?;
    s.i32().await?;
    let topics = s.len(flexible, true).await?.ok_or(())?;
    let mut out = Vec::new();
    for _ in 0..topics {
        let n = s.len(flexible, false).await?.ok_or(())?;
        let name = String::from_utf8(s.take(n).await?).map_err(|_| ())?;
        let partitions = s.len(flexible, true).await?.ok_or(())?;
        let mut indexes = Vec::new();
        for _ in 0..partitions {
            indexes.push(s.i32().await?);
            if let Some(n) = s.len(flexible, true).await? {
                s.skip(n).await?;
            }
            if flexible {
                s.tagged_fields().await?;
            }
        }
        if flexible {
            s.tagged_fields().await?;
        }
        out.push((name, indexes));
    }
    if flexible {
        s.tagged_fields().await?;
    }
    // Whatever follows (nothing, in a well-formed request) is read too.
    let rest = s.head.len() - s.at + s.left;
    s.skip(rest).await?;
    let head = Head { api: ApiKey::Produce, version, correlation };
    Ok(Oversize { head, acks, len, topics: out })
}

/// The answer: MESSAGE_TOO_LARGE for every partition named, naming the bound (none under
/// `acks=0`).
pub(crate) fn answer(o: &Oversize, max: usize) -> Reply {
    if o.acks == 0 {
        return Reply { frame: None, close: false };
    }
    let why = format!("a Produce request of {} bytes is over server.kafka.max_request ({max})", o.len);
    let topics = o
        .topics
        .iter()
        .map(|(name, partitions)| {
            TopicProduceResponse::default()
                .with_name(TopicName(StrBytes::from_string(name.clone())))
                .with_partition_responses(
                    partitions
                        .iter()
                        .map(|p| {
                            PartitionProduceResponse::default()
                                .with_index(*p)
                                .with_error_code(ResponseError::MessageTooLarge.code())
                                .with_base_offset(-1)
                                .with_log_append_time_ms(-1)
                                .with_log_start_offset(-1)
                                .with_error_message(Some(StrBytes::from_string(why.clone())))
                        })
                        .collect(),
                )
        })
        .collect();
    Reply::answer(o.head.encode(&ProduceResponse::default().with_responses(topics)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ProduceRequest, RequestHeader};
    use kafka_protocol::protocol::Encodable;

    fn frame(version: i16, records: usize) -> Vec<u8> {
        let mut body = bytes::BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(ApiKey::Produce as i16)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(StrBytes::from_static_str("rdkafka ☃")))
            .encode(&mut body, ApiKey::Produce.request_header_version(version))
            .unwrap();
        let partition =
            |i: i32| PartitionProduceData::default().with_index(i).with_records(Some(Bytes::from(vec![1u8; records])));
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("events")))
                    .with_partition_data(vec![partition(0), partition(3)]),
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("ünï")))
                    .with_partition_data(vec![partition(1)]),
            ])
            .encode(&mut body, version)
            .unwrap();
        body.to_vec()
    }

    #[tokio::test]
    async fn every_partition_of_an_oversize_request_is_named_and_its_bytes_read() {
        for version in [3, 8, 9] {
            let bytes = frame(version, 200_000);
            let (head, rest) = bytes.split_at(1024);
            let mut socket = std::io::Cursor::new(rest.to_vec());
            let o = drain(&mut socket, head, bytes.len()).await.unwrap();
            assert_eq!(socket.position() as usize, rest.len(), "v{version}: the whole frame is read");
            assert_eq!(o.topics, vec![("events".to_string(), vec![0, 3]), ("ünï".to_string(), vec![1])], "v{version}");
            assert_eq!((o.head.correlation, o.acks, o.len), (7, -1, bytes.len()));
            assert!(answer(&o, 1024).frame.is_some());
        }
        // Another API, or a frame shorter than it claims: not read as a Produce request.
        let mut metadata = frame(9, 10);
        metadata[1] = 3;
        assert!(drain(&mut std::io::Cursor::new(Vec::new()), &metadata, metadata.len()).await.is_none());
        let bytes = frame(9, 5000);
        let (head, rest) = bytes.split_at(1024);
        let short = rest[..rest.len() - 10].to_vec();
        assert!(drain(&mut std::io::Cursor::new(short), head, bytes.len()).await.is_none());
    }
}
