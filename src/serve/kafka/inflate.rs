//! [sync] Record batches' compressed records inflated within a bound: gzip, snappy (raw or
//! xerial-framed, as Java and librdkafka write it), LZ4 frames and zstd.
//!
//! A batch whose records inflate past the bound (a decompression bomb, or a snappy header
//! claiming gigabytes) is refused before the memory is taken: inflation reads at most `limit`
//! bytes plus one, and snappy lengths are checked before a block is allocated. The codec's
//! own decompressors (which inflate without a bound) are not used.

use std::io::Read;

use bytes::{Buf, Bytes};
use kafka_protocol::records::Compression;

/// How many times their compressed size records are expected to inflate to (JSON records
/// under lz4 or zstd: 3-5 times).
const EXPECTED_RATIO: usize = 4;

/// Why a batch's records did not inflate.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InflateError {
    /// They inflate past the bound (the records are too large, not damaged).
    #[error("the batch's records inflate past {0} bytes (server.kafka.max_request)")]
    Past(usize),
    /// The bytes are not valid in their codec.
    #[error("{0}")]
    Damaged(String),
}

fn damaged(e: impl std::fmt::Display) -> InflateError {
    InflateError::Damaged(e.to_string())
}

/// Inflates `compressed` (the records of one batch) to at most `limit` bytes.
///
/// # Errors
/// [`InflateError::Damaged`] for bytes that do not inflate in their codec,
/// [`InflateError::Past`] for records that inflate past `limit`.
pub(crate) fn inflate(compressed: &mut Bytes, codec: Compression, limit: usize) -> Result<Bytes, InflateError> {
    let input = compressed.split_to(compressed.len());
    // Sized for what records usually inflate to, so that the output is not grown (copied and
    // faulted in again) a doubling at a time; still read within the bound.
    let expected = input.len().saturating_mul(EXPECTED_RATIO).min(limit.saturating_add(1));
    let bounded = |reader: &mut dyn Read| -> Result<Bytes, InflateError> {
        let mut out = Vec::with_capacity(expected);
        reader.take(limit as u64 + 1).read_to_end(&mut out).map_err(damaged)?;
        if out.len() > limit {
            return Err(InflateError::Past(limit));
        }
        Ok(Bytes::from(out))
    };
    match codec {
        Compression::None => Ok(input),
        Compression::Gzip => bounded(&mut flate2::read::GzDecoder::new(input.reader())),
        Compression::Zstd => bounded(&mut zstd::stream::read::Decoder::new(input.reader()).map_err(damaged)?),
        Compression::Lz4 => bounded(&mut lz4::Decoder::new(input.reader()).map_err(damaged)?),
        Compression::Snappy => snappy(input, limit),
    }
}

/// The xerial framing's header: magic, version 1, compatible version 1.
const XERIAL: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";

fn snappy(mut input: Bytes, limit: usize) -> Result<Bytes, InflateError> {
    let mut out = Vec::new();
    let block = |compressed: &[u8], out: &mut Vec<u8>| -> Result<(), InflateError> {
        let len = snap::raw::decompress_len(compressed).map_err(damaged)?;
        if out.len().saturating_add(len) > limit {
            return Err(InflateError::Past(limit));
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new().decompress(compressed, &mut out[start..]).map_err(damaged)?;
        Ok(())
    };
    if !input.starts_with(XERIAL) {
        block(&input, &mut out)?;
        return Ok(Bytes::from(out));
    }
    input.advance(XERIAL.len());
    while input.has_remaining() {
        if input.remaining() < 4 {
            return Err(damaged("a snappy block length is cut short"));
        }
        let size = input.get_u32() as usize;
        if input.remaining() < size {
            return Err(damaged("a snappy block is cut short"));
        }
        let compressed = input.split_to(size);
        block(&compressed, &mut out)?;
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

    fn batch(codec: Compression, value: &[u8]) -> Bytes {
        let record = Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: 0,
            sequence: -1,
            timestamp: 0,
            key: None,
            value: Some(Bytes::copy_from_slice(value)),
            headers: Default::default(),
        };
        let mut buf = bytes::BytesMut::new();
        RecordBatchEncoder::encode(&mut buf, [&record], &RecordEncodeOptions { version: 2, compression: codec })
            .unwrap();
        buf.freeze()
    }

    #[test]
    fn every_codec_inflates_within_the_bound_and_bombs_are_refused() {
        let zeros = vec![0u8; 1 << 20];
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let mut b = batch(codec, &zeros);
            let inflate_big = |c: &mut Bytes, k: Compression| inflate(c, k, 4 << 20).map_err(anyhow::Error::from);
            let set = RecordBatchDecoder::decode_with_custom_compression(&mut b, Some(&inflate_big)).unwrap();
            assert_eq!(set.records[0].value.as_deref(), Some(&zeros[..]), "{codec:?}");
            let mut b = batch(codec, &zeros);
            assert!(b.len() < 64 << 10, "{codec:?} compresses zeros");
            let inflate_small = |c: &mut Bytes, k: Compression| inflate(c, k, 64 << 10).map_err(anyhow::Error::from);
            let err = RecordBatchDecoder::decode_with_custom_compression(&mut b, Some(&inflate_small)).unwrap_err();
            assert!(err.to_string().contains("inflate past"), "{codec:?}: {err}");
        }
        // A raw snappy block whose header claims 4 GiB is refused before it is allocated.
        let mut claim = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0]);
        assert!(matches!(inflate(&mut claim, Compression::Snappy, 1 << 20), Err(InflateError::Past(_))));
        let mut cut = Bytes::from_static(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00");
        assert!(matches!(inflate(&mut cut, Compression::Snappy, 1 << 20), Err(InflateError::Damaged(_))));
    }
}
