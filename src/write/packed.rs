//! [sync] Rows held packed while a batch fills: Arrow IPC with LZ4-compressed buffers.
//!
//! An open micro-batch holds up to `flush.max_bytes` of decoded rows, and a pipeline holds
//! two (one filling while the other flushes). Decoded Arrow is the payloads' size again
//! (strings are kept whole); packed, the same rows take a fraction of it (250-byte JSON
//! events: about a tenth), and a flush unpacks them one chunk at a time as it writes them.
//!
//! Contract: [`Packed::unpack`] returns exactly the batches [`Packed::pack`] was given (same
//! schema, field metadata included, same rows in the same order); packing fails, and the
//! caller keeps the batches as they are, only for types Arrow IPC cannot write.

use std::io::Cursor;

use arrow::array::RecordBatch;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::ipc::CompressionType;

use crate::error::{Error, Result};

/// Batches of one schema, packed.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Packed {
    ipc: Vec<u8>,
    rows: usize,
}

impl Packed {
    /// Packs `batches` (at least one, all of the first's schema).
    ///
    /// # Errors
    /// [`Error::Internal`] when Arrow IPC cannot write them.
    pub(crate) fn pack(batches: &[RecordBatch]) -> Result<Packed> {
        let first = batches.first().ok_or_else(|| Error::Internal("nothing to pack".into()))?;
        let options = IpcWriteOptions::default()
            .try_with_compression(Some(CompressionType::LZ4_FRAME))
            .map_err(|e| Error::Internal(format!("packing rows: {e}")))?;
        let size = batches.iter().map(RecordBatch::get_array_memory_size).sum::<usize>() / 8;
        let mut writer = StreamWriter::try_new_with_options(Vec::with_capacity(size), &first.schema(), options)
            .map_err(|e| Error::Internal(format!("packing rows: {e}")))?;
        for b in batches {
            writer.write(b).map_err(|e| Error::Internal(format!("packing rows: {e}")))?;
        }
        let mut ipc = writer.into_inner().map_err(|e| Error::Internal(format!("packing rows: {e}")))?;
        ipc.shrink_to_fit();
        Ok(Packed { ipc, rows: batches.iter().map(RecordBatch::num_rows).sum() })
    }

    /// The batches packed, in order.
    ///
    /// # Errors
    /// [`Error::Internal`] when the packed bytes do not read back (a defect).
    pub(crate) fn unpack(&self) -> Result<Vec<RecordBatch>> {
        let reader = StreamReader::try_new(Cursor::new(&self.ipc[..]), None)
            .map_err(|e| Error::Internal(format!("unpacking rows: {e}")))?;
        reader.collect::<std::result::Result<Vec<_>, _>>().map_err(|e| Error::Internal(format!("unpacking rows: {e}")))
    }

    /// Rows packed.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.ipc.len()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow::array::{Array, ArrayRef, BinaryArray, Int64Array, StringArray, StructArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn unpacking_returns_what_was_packed_in_a_fraction_of_the_memory() {
        let n = 20_000i64;
        let meta: HashMap<String, String> = [("delta.columnMapping.id".to_string(), "7".to_string())].into();
        let variant = StructArray::from(vec![
            (
                Arc::new(Field::new("metadata", DataType::Binary, false)),
                Arc::new(BinaryArray::from_iter_values((0..n).map(|_| [1u8, 0, 0]))) as ArrayRef,
            ),
            (
                Arc::new(Field::new("value", DataType::Binary, false)),
                Arc::new(BinaryArray::from_iter_values((0..n).map(|i| [12u8, (i % 100) as u8]))) as ArrayRef,
            ),
        ]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false).with_metadata(meta),
            Field::new("note", DataType::Utf8, true),
            Field::new("v", variant.data_type().clone(), true),
        ]));
        let batch = |from: i64| {
            let ids = Int64Array::from_iter_values(from..from + n);
            let notes = StringArray::from_iter(
                (from..from + n).map(|i| (i % 7 != 0).then(|| format!("ünï-{}-{:>200}", i % 97, "日本"))),
            );
            RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(notes), Arc::new(variant.clone())])
                .unwrap()
        };
        let batches = vec![batch(0), batch(n), batch(2 * n).slice(5, 100)];
        let packed = Packed::pack(&batches).unwrap();
        assert_eq!(packed.rows(), 2 * n as usize + 100);
        let arrow: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        assert!(packed.bytes() * 4 < arrow, "packed {} of {arrow} bytes", packed.bytes());
        let back = packed.unpack().unwrap();
        assert_eq!(back, batches);
        assert_eq!(back[0].schema(), schema);
    }

    #[test]
    fn nothing_to_pack_is_refused() {
        assert!(matches!(Packed::pack(&[]), Err(Error::Internal(_))));
    }
}
