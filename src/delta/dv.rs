//! Deletion vectors (protocol digest §7): descriptors, unique ids, the RoaringBitmapArray
//! serialisation and the DV file record format.
//!
//! Everything here works on bytes already read: the storage shell fetches the DV file range
//! given by [`DeletionVectorDescriptor::location`] and hands it to [`decode_file_record`].
//! Bitmaps use the `roaring` crate's portable 64-bit format; nothing is hand-written.

use roaring::RoaringTreemap;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::z85;
use crate::error::{Error, Result};

/// Magic number of the portable RoaringBitmapArray format (little-endian on disk).
pub(crate) const PORTABLE_MAGIC: u32 = 1_681_511_377;
/// Magic of Spark's legacy "native" format, which deltabus refuses.
const NATIVE_MAGIC: u32 = 1_681_511_376;

/// `deletionVector` descriptor of an add or remove.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionVectorDescriptor {
    pub storage_type: String,
    pub path_or_inline_dv: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    pub size_in_bytes: i32,
    pub cardinality: i64,
}

/// Where a DV's bytes live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DvLocation {
    /// Inline: the serialised bitmap (magic included), already decoded from z85.
    Inline(Vec<u8>),
    /// A file relative to the table root, read from `offset` (the record start).
    Relative { path: String, offset: u64 },
    /// An absolute URI (storage type `p`), read from `offset`.
    Absolute { uri: String, offset: u64 },
}

impl DeletionVectorDescriptor {
    /// The unique id `storageType + pathOrInlineDv [+ "@" + offset]` (spec "Derived Fields").
    pub fn unique_id(&self) -> String {
        match self.offset {
            Some(o) => format!("{}{}@{}", self.storage_type, self.path_or_inline_dv, o),
            None => format!("{}{}", self.storage_type, self.path_or_inline_dv),
        }
    }

    /// The path (relative to the table root at `table_url`) of the file holding this vector;
    /// `None` for an inline vector. Absolute paths inside the root are accepted: maintenance
    /// must see every file a table names.
    ///
    /// # Errors
    /// An undecodable descriptor; [`Error::PathRefused`] for a file outside the table.
    pub fn file_in_table(&self, table_url: &str) -> Result<Option<String>> {
        use super::paths::resolve_in_table;
        match self.location()? {
            DvLocation::Relative { path, .. } => resolve_in_table(&path, table_url, true).map(Some),
            DvLocation::Absolute { uri, .. } => resolve_in_table(&uri, table_url, true).map(Some),
            DvLocation::Inline(_) => Ok(None),
        }
    }

    /// Resolves the descriptor to where its bytes are.
    ///
    /// # Errors
    /// [`Error::DeletionVector`] for unknown storage types or malformed encodings.
    pub fn location(&self) -> Result<DvLocation> {
        let id = self.unique_id();
        // Spark writes `offset` for on-disk DVs; when absent the spec and Spark read from 0.
        let offset = u64::try_from(self.offset.unwrap_or(0)).map_err(|_| Error::dv(&id, "negative offset"))?;
        match self.storage_type.as_str() {
            "i" => {
                let mut bytes = z85::decode(&self.path_or_inline_dv).map_err(|e| Error::dv(&id, e))?;
                let size = self.size()?;
                if size > bytes.len() {
                    return Err(Error::dv(&id, "sizeInBytes exceeds the inline data"));
                }
                bytes.truncate(size);
                Ok(DvLocation::Inline(bytes))
            }
            "u" => {
                let encoded = &self.path_or_inline_dv;
                if encoded.len() < 20 || !encoded.is_char_boundary(encoded.len() - 20) {
                    return Err(Error::dv(&id, "path is shorter than a z85 UUID"));
                }
                let (prefix, uuid_part) = encoded.split_at(encoded.len() - 20);
                let raw = z85::decode(uuid_part).map_err(|e| Error::dv(&id, e))?;
                let uuid = Uuid::from_slice(&raw).map_err(|e| Error::dv(&id, e))?;
                let file = format!("deletion_vector_{}.bin", uuid.hyphenated());
                let path = if prefix.is_empty() { file } else { format!("{prefix}/{file}") };
                Ok(DvLocation::Relative { path, offset })
            }
            "p" => Ok(DvLocation::Absolute { uri: self.path_or_inline_dv.clone(), offset }),
            other => Err(Error::dv(&id, format!("unsupported storage type {other:?}"))),
        }
    }

    /// `sizeInBytes` as a length.
    ///
    /// # Errors
    /// [`Error::DeletionVector`] when negative.
    pub fn size(&self) -> Result<usize> {
        usize::try_from(self.size_in_bytes).map_err(|_| Error::dv(self.unique_id(), "negative sizeInBytes"))
    }
}

/// Decodes a serialised RoaringBitmapArray (magic + portable 64-bit roaring).
///
/// # Errors
/// [`Error::DeletionVector`] for a wrong magic (including the legacy native format) or a
/// corrupt bitmap.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_bitmap(bytes: &[u8], id: &str) -> Result<RoaringTreemap> {
    if bytes.len() < 4 {
        return Err(Error::dv(id, "bitmap shorter than its magic"));
    }
    let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if magic == NATIVE_MAGIC {
        return Err(Error::dv(id, "legacy native bitmap format is not supported"));
    }
    if magic != PORTABLE_MAGIC {
        return Err(Error::dv(id, format!("bad bitmap magic {magic}")));
    }
    RoaringTreemap::deserialize_from(&bytes[4..]).map_err(|e| Error::dv(id, format!("corrupt bitmap: {e}")))
}

/// Serialises a bitmap with its magic, as stored inline or inside a DV file record.
pub(crate) fn encode_bitmap(bitmap: &RoaringTreemap) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + bitmap.serialized_size());
    out.extend_from_slice(&PORTABLE_MAGIC.to_le_bytes());
    // Writing into a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut out);
    out
}

/// Decodes one record of a DV file, given the bytes from the record's offset: a big-endian
/// size, the bitmap, and a big-endian CRC-32 of the bitmap. Checks size, magic and checksum.
///
/// # Errors
/// [`Error::DeletionVector`] on any mismatch or truncation.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode_file_record(record: &[u8], expected_size: usize, id: &str) -> Result<RoaringTreemap> {
    if record.len() < 8 + expected_size {
        return Err(Error::dv(id, "DV file is truncated"));
    }
    let size = u32::from_be_bytes([record[0], record[1], record[2], record[3]]) as usize;
    if size != expected_size {
        return Err(Error::dv(id, format!("record size {size} differs from sizeInBytes {expected_size}")));
    }
    let data = &record[4..4 + size];
    let crc_bytes = &record[4 + size..8 + size];
    let stored = u32::from_be_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
    let actual = crc32fast::hash(data);
    if stored != actual {
        return Err(Error::dv(id, format!("checksum mismatch: stored {stored:08x}, computed {actual:08x}")));
    }
    decode_bitmap(data, id)
}

/// Builds a DV file holding one record (version byte, size, bitmap, CRC); the record is at
/// offset 1.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn encode_file(bitmap: &RoaringTreemap) -> Vec<u8> {
    let data = encode_bitmap(bitmap);
    let mut out = Vec::with_capacity(data.len() + 9);
    out.push(1u8);
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(&data);
    out.extend_from_slice(&crc32fast::hash(&data).to_be_bytes());
    out
}

/// The descriptor for an inline DV holding `bitmap`.
pub(crate) fn inline_descriptor(bitmap: &RoaringTreemap) -> DeletionVectorDescriptor {
    let data = encode_bitmap(bitmap);
    DeletionVectorDescriptor {
        storage_type: "i".to_string(),
        path_or_inline_dv: z85::encode(&data),
        offset: None,
        size_in_bytes: data.len() as i32,
        cardinality: bitmap.len() as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BITMAP_HEX: &str = "d1d339640100000000000000000000003a3000000100000000000500100000000300040007000b0012001d00";

    #[test]
    fn digest_appendix_a_inline_vector() {
        let bitmap: RoaringTreemap = [3u64, 4, 7, 11, 18, 29].into_iter().collect();
        assert_eq!(hex::encode(encode_bitmap(&bitmap)), BITMAP_HEX);
        let d = inline_descriptor(&bitmap);
        assert_eq!(d.path_or_inline_dv, "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L");
        assert_eq!(d.size_in_bytes, 44);
        let DvLocation::Inline(bytes) = d.location().unwrap() else { panic!("not inline") };
        assert_eq!(decode_bitmap(&bytes, "t").unwrap(), bitmap);
    }

    #[test]
    fn digest_appendix_a_file_vectors() {
        let bitmap: RoaringTreemap = [3u64, 4, 7, 11, 18, 29].into_iter().collect();
        let file = encode_file(&bitmap);
        assert_eq!(hex::encode(&file), format!("010000002c{BITMAP_HEX}acd74a79"));
        assert_eq!(decode_file_record(&file[1..], 44, "t").unwrap(), bitmap);
        // Real Spark file: rows {0, 9}.
        let spark =
            hex::decode("0100000024d1d339640100000000000000000000003a300000010000000000010010000000000009002a671846")
                .unwrap();
        let got = decode_file_record(&spark[1..], 36, "spark").unwrap();
        assert_eq!(got.iter().collect::<Vec<_>>(), vec![0, 9]);
        let mut corrupt = file.clone();
        corrupt[20] ^= 1;
        assert!(decode_file_record(&corrupt[1..], 44, "t").is_err());
        assert!(decode_file_record(&file[1..], 40, "t").is_err());
    }

    #[test]
    fn u_descriptor_paths() {
        let d = DeletionVectorDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(4),
            size_in_bytes: 40,
            cardinality: 6,
        };
        assert_eq!(d.unique_id(), "uab^-aqEH.-t@S}K{vb[*k^@4");
        assert_eq!(
            d.location().unwrap(),
            DvLocation::Relative {
                path: "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin".into(),
                offset: 4
            }
        );
        let bad = DeletionVectorDescriptor { storage_type: "r".into(), ..d };
        assert!(bad.location().is_err());
    }
}
