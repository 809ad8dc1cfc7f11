//! Apicurio's header-carried schema ids: with its serdes' `headers.enabled`, a record's
//! payload is the bare datum and its schema's global id travels in the header
//! `apicurio.value.globalId` (`apicurio.key.globalId` for keys), 8 bytes big-endian. Such a
//! payload (or key) is given the in-band frame (magic byte `0`, the 8-byte id) so that the
//! decoders see one wire format.

use crate::source::kafka::stage::SourceRecord;

const VALUE_ID: &str = "apicurio.value.globalId";
const KEY_ID: &str = "apicurio.key.globalId";

/// A record's key and payload framed from their headers (`None`: the bytes stay).
pub(crate) type Frames = (Option<Vec<u8>>, Option<Vec<u8>>);

/// For each record, its key and payload framed from their headers, where they carry an id
/// (`None` where the bytes stay as they are). Empty when no record has such a header.
pub(crate) fn reframe(records: &[SourceRecord<'_>]) -> Vec<Frames> {
    fn id<'a>(r: &SourceRecord<'a>, name: &str) -> Option<&'a [u8]> {
        r.headers.iter().find(|(k, _)| *k == name).and_then(|(_, v)| v.filter(|v| v.len() == 8))
    }
    if !records.iter().any(|r| id(r, VALUE_ID).is_some() || id(r, KEY_ID).is_some()) {
        return Vec::new();
    }
    let frame = |id: Option<&[u8]>, bytes: Option<&[u8]>| match (id, bytes) {
        (Some(id), Some(b)) => Some([&[0u8][..], id, b].concat()),
        _ => None,
    };
    records.iter().map(|r| (frame(id(r, KEY_ID), r.raw.key), frame(id(r, VALUE_ID), r.raw.payload))).collect()
}

/// `records` with the framed bytes of [`reframe`] in place (the same records when it found
/// nothing).
pub(crate) fn with_frames<'a>(records: &[SourceRecord<'a>], frames: &'a [Frames]) -> Vec<SourceRecord<'a>> {
    if frames.is_empty() {
        return records.to_vec();
    }
    records
        .iter()
        .zip(frames)
        .map(|(r, (k, v))| {
            let mut r = r.clone();
            r.raw.key = k.as_deref().or(r.raw.key);
            r.raw.payload = v.as_deref().or(r.raw.payload);
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::record::RawRecord;

    #[test]
    fn header_ids_become_frames() {
        let id = 5u64.to_be_bytes();
        let raw = RawRecord {
            topic: "t",
            partition: 0,
            offset: 1,
            timestamp_ms: None,
            key: Some(b"k"),
            payload: Some(b"body"),
        };
        let with = SourceRecord { raw, headers: vec![(VALUE_ID, Some(&id[..]))] };
        let without = SourceRecord { raw, headers: vec![("other", Some(&b"x"[..]))] };
        assert!(reframe(std::slice::from_ref(&without)).is_empty());
        let records = [with, without];
        let frames = reframe(&records);
        let out = with_frames(&records, &frames);
        assert_eq!(out[0].raw.payload, Some(&[0, 0, 0, 0, 0, 0, 0, 0, 5, b'b', b'o', b'd', b'y'][..]));
        assert_eq!(out[0].raw.key, Some(&b"k"[..]), "no key id: the key stays");
        assert_eq!(out[1].raw.payload, Some(&b"body"[..]));
    }
}
