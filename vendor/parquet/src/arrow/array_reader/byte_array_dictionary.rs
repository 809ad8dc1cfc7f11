// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryViewArray, OffsetSizeTrait, StringViewArray, new_empty_array,
};
use arrow_buffer::{ArrowNativeType, MutableBuffer};
use arrow_schema::DataType as ArrowType;
use bytes::Bytes;

use crate::arrow::array_reader::byte_array::{ByteArrayDecoder, ByteArrayDecoderPlain};
use crate::arrow::array_reader::fixed_len_byte_array::ValueDecoder as FixedByteArrayDecoder;
use crate::arrow::array_reader::{ArrayReader, read_records, skip_records};
use crate::arrow::buffer::{dictionary_buffer::DictionaryBuffer, offset_buffer::OffsetBuffer};
use crate::arrow::record_reader::GenericRecordReader;
use crate::arrow::schema::parquet_to_arrow_field;
use crate::basic::{ConvertedType, Encoding, Type};
use crate::column::page::PageIterator;
use crate::column::reader::decoder::{ColumnValueDecoder, normalize_fixed_len_byte_array_payload};
use crate::encodings::rle::{MAX_RLE_DICTIONARY_BIT_WIDTH, RleDecoder};
use crate::errors::{ParquetError, Result};
use crate::schema::types::ColumnDescPtr;
use crate::util::bit_util::BitPacking;

/// A macro to reduce verbosity of [`make_byte_array_dictionary_reader`]
macro_rules! make_reader {
    (
        ($pages:expr, $column_desc:expr, $data_type:expr, $batch_size:expr, $padding_threshold:expr) => match ($k:expr, $v:expr) {
            $(($key_arrow:pat, $value_arrow:pat) => ($key_type:ty, $value_type:ty),)+
        }
    ) => {
        match ($k, $v) {
            $(
                ($key_arrow, $value_arrow) => {
                    let mut reader = GenericRecordReader::new($column_desc, $batch_size);
                    if let Some(threshold) = $padding_threshold {
                        reader.set_padding_threshold(threshold);
                    }
                    Ok(Box::new(ByteArrayDictionaryReader::<$key_type, $value_type>::try_new(
                        $pages, $data_type, reader,
                    )?))
                }
            )+
            _ => Err(general_err!(
                "unsupported data type for byte array dictionary reader - {}",
                $data_type
            )),
        }
    }
}

/// Returns an [`ArrayReader`] that decodes the provided byte array column
///
/// This will attempt to preserve any dictionary encoding present in the parquet data
///
/// It will be unable to preserve the dictionary encoding if:
///
/// * A single read spans across multiple column chunks
/// * A column chunk contains non-dictionary encoded pages
///
/// It is therefore recommended that if `pages` contains data from multiple column chunks,
/// that the read batch size used is a divisor of the row group size
pub fn make_byte_array_dictionary_reader(
    pages: Box<dyn PageIterator>,
    column_desc: ColumnDescPtr,
    arrow_type: Option<ArrowType>,
    batch_size: usize,
    padding_threshold: Option<i16>,
) -> Result<Box<dyn ArrayReader>> {
    // Check if Arrow type is specified, else create it from Parquet type
    let data_type = match arrow_type {
        Some(t) => t,
        None => parquet_to_arrow_field(column_desc.as_ref())?
            .data_type()
            .clone(),
    };

    match &data_type {
        ArrowType::Dictionary(key_type, value_type) => {
            make_reader! {
                (pages, column_desc, data_type, batch_size, padding_threshold) => match (key_type.as_ref(), value_type.as_ref()) {
                    (ArrowType::UInt8, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (u8, i32),
                    (ArrowType::UInt8, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (u8, i64),
                    (ArrowType::Int8, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (i8, i32),
                    (ArrowType::Int8, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (i8, i64),
                    (ArrowType::UInt16, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (u16, i32),
                    (ArrowType::UInt16, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (u16, i64),
                    (ArrowType::Int16, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (i16, i32),
                    (ArrowType::Int16, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (i16, i64),
                    (ArrowType::UInt32, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (u32, i32),
                    (ArrowType::UInt32, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (u32, i64),
                    (ArrowType::Int32, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (i32, i32),
                    (ArrowType::Int32, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (i32, i64),
                    (ArrowType::UInt64, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (u64, i32),
                    (ArrowType::UInt64, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (u64, i64),
                    (ArrowType::Int64, ArrowType::Binary | ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::BinaryView | ArrowType::FixedSizeBinary(_)) => (i64, i32),
                    (ArrowType::Int64, ArrowType::LargeBinary | ArrowType::LargeUtf8) => (i64, i64),
                }
            }
        }
        _ => Err(general_err!(
            "invalid non-dictionary data type for byte array dictionary reader - {}",
            data_type
        )),
    }
}

/// Convert a dictionary-typed array with string or binary typed values
/// to one with string or binary view typed values.
fn convert_values_to_view(array: ArrayRef, to_type: &ArrowType) -> Result<ArrayRef> {
    let ArrowType::Dictionary(_, to_value_type) = to_type else {
        return Err(general_err!(
            "Cannot convert {} dictionary values to non-dictionary type {}",
            array.data_type(),
            to_type
        ));
    };

    let array = array.as_any_dictionary();
    let values = array.values();

    let new_values: ArrayRef = match to_value_type.as_ref() {
        ArrowType::Utf8View => Arc::new(StringViewArray::from(values.as_string::<i32>())),
        ArrowType::BinaryView => Arc::new(BinaryViewArray::from(values.as_binary::<i32>())),
        other => {
            return Err(general_err!(
                "Cannot convert dictionary values to {}",
                other
            ));
        }
    };

    Ok(array.with_values(new_values))
}

/// An [`ArrayReader`] for dictionary encoded byte arrays
///
/// Will attempt to preserve any dictionary encoding present in the parquet data
struct ByteArrayDictionaryReader<K: ArrowNativeType, V: OffsetSizeTrait> {
    data_type: ArrowType,
    /// Type used by the dictionary buffer when it is different from the output data type.
    buffer_type: Option<ArrowType>,
    pages: Box<dyn PageIterator>,
    def_levels_buffer: Option<Vec<i16>>,
    rep_levels_buffer: Option<Vec<i16>>,
    record_reader: GenericRecordReader<DictionaryBuffer<K, V>, DictionaryDecoder<K, V>>,
    /// Reusable scratch space for hashing byte slices when building dictionaries from plain-encoded values.
    hash_scratch: MutableBuffer,
}

impl<K, V> ByteArrayDictionaryReader<K, V>
where
    K: BitPacking + Ord + ArrowNativeType,
    V: OffsetSizeTrait,
{
    fn try_new(
        pages: Box<dyn PageIterator>,
        data_type: ArrowType,
        record_reader: GenericRecordReader<DictionaryBuffer<K, V>, DictionaryDecoder<K, V>>,
    ) -> Result<Self> {
        let ArrowType::Dictionary(key_type, value_type) = &data_type else {
            return Err(general_err!(
                "Expected dictionary type, found {:?}",
                data_type
            ));
        };

        let buffer_type = match value_type.as_ref() {
            ArrowType::Utf8View => Some(ArrowType::Dictionary(
                key_type.clone(),
                Box::new(ArrowType::Utf8),
            )),
            ArrowType::BinaryView => Some(ArrowType::Dictionary(
                key_type.clone(),
                Box::new(ArrowType::Binary),
            )),
            _ => None,
        };

        Ok(Self {
            data_type,
            buffer_type,
            pages,
            def_levels_buffer: None,
            rep_levels_buffer: None,
            record_reader,
            hash_scratch: MutableBuffer::new(0),
        })
    }
}

impl<K, V> ArrayReader for ByteArrayDictionaryReader<K, V>
where
    K: BitPacking + Ord + ArrowNativeType,
    V: OffsetSizeTrait,
{
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn get_data_type(&self) -> &ArrowType {
        &self.data_type
    }

    fn read_records(&mut self, batch_size: usize) -> Result<usize> {
        read_records(&mut self.record_reader, self.pages.as_mut(), batch_size)
    }

    fn consume_batch(&mut self) -> Result<ArrayRef> {
        // advance the def & rep level buffers
        self.def_levels_buffer = self.record_reader.consume_def_levels();
        self.rep_levels_buffer = self.record_reader.consume_rep_levels();

        if self.record_reader.num_values() == 0 {
            // once the record_reader has been consumed, we've replaced its values with the default
            // variant of DictionaryBuffer (Offset). If `consume_batch` then gets called again, we
            // avoid using the wrong variant of the buffer by returning empty array.
            return Ok(new_empty_array(&self.data_type));
        }

        let buffer = self.record_reader.consume_record_data();
        let null_buffer = self.record_reader.consume_compact_bitmap();

        let array = match &self.buffer_type {
            None => buffer.into_array(null_buffer, &self.data_type, &mut self.hash_scratch)?,
            Some(buffer_type) => {
                let buffer_array =
                    buffer.into_array(null_buffer, buffer_type, &mut self.hash_scratch)?;
                convert_values_to_view(buffer_array, &self.data_type)?
            }
        };

        self.record_reader.reset();

        Ok(array)
    }

    fn skip_records(&mut self, num_records: usize) -> Result<usize> {
        skip_records(&mut self.record_reader, self.pages.as_mut(), num_records)
    }

    fn get_def_levels(&self) -> Option<&[i16]> {
        self.def_levels_buffer.as_deref()
    }

    fn get_rep_levels(&self) -> Option<&[i16]> {
        self.rep_levels_buffer.as_deref()
    }

    fn max_def_level(&self) -> i16 {
        self.record_reader.max_def_level()
    }
}

/// If the data is dictionary encoded decode the key data directly, so that the dictionary
/// encoding can be preserved. Otherwise fallback to decoding using [`ByteArrayDecoder`]
/// and compute a fresh dictionary in [`ByteArrayDictionaryReader::next_batch`]
enum MaybeDictionaryDecoder {
    Dict {
        decoder: RleDecoder,
        /// This is a maximum as the null count is not always known, e.g. value data from
        /// a v1 data page
        max_remaining_values: usize,
        /// Validated bit width of decoded dictionary keys.
        bit_width: u8,
    },
    Fallback(ByteArrayDecoder),
    Fixed(FixedByteArrayDecoder),
}

/// A [`ColumnValueDecoder`] for dictionary encoded byte arrays
struct DictionaryDecoder<K, V> {
    /// The current dictionary
    dict: Option<ArrayRef>,

    /// Dictionary decoder
    decoder: Option<MaybeDictionaryDecoder>,

    validate_utf8: bool,

    value_type: ArrowType,

    /// `Some` only for `FIXED_LEN_BYTE_ARRAY` columns, selecting fixed-width
    /// decoding; `None` for other physical types.
    flba_column_descr: Option<ColumnDescPtr>,

    phantom: PhantomData<(K, V)>,
}

impl<K, V> ColumnValueDecoder for DictionaryDecoder<K, V>
where
    K: BitPacking + Ord + ArrowNativeType,
    V: OffsetSizeTrait,
{
    type Buffer = DictionaryBuffer<K, V>;

    fn new(col: &ColumnDescPtr) -> Self {
        let validate_utf8 = col.converted_type() == ConvertedType::UTF8;

        let value_type = match (V::IS_LARGE, col.converted_type() == ConvertedType::UTF8) {
            (true, true) => ArrowType::LargeUtf8,
            (true, false) => ArrowType::LargeBinary,
            (false, true) => ArrowType::Utf8,
            (false, false) => ArrowType::Binary,
        };

        Self {
            dict: None,
            decoder: None,
            validate_utf8,
            value_type,
            flba_column_descr: (col.physical_type() == Type::FIXED_LEN_BYTE_ARRAY)
                .then(|| col.clone()),
            phantom: Default::default(),
        }
    }

    fn set_dict(
        &mut self,
        buf: Bytes,
        num_values: u32,
        encoding: Encoding,
        _is_sorted: bool,
    ) -> Result<()> {
        if !matches!(
            encoding,
            Encoding::PLAIN | Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY
        ) {
            return Err(nyi_err!(
                "Invalid/Unsupported encoding type for dictionary: {}",
                encoding
            ));
        }

        if K::from_usize(num_values as usize).is_none() {
            return Err(general_err!("dictionary too large for index type"));
        }

        let len = num_values as usize;
        let mut buffer = OffsetBuffer::<V>::with_capacity(0);
        if let Some(desc) = &self.flba_column_descr {
            let buf = normalize_fixed_len_byte_array_payload(
                buf,
                len,
                desc.type_length() as usize,
                "dictionary page",
            )?;
            let mut decoder = FixedByteArrayDecoder::new(desc);
            decoder.set_data(Encoding::PLAIN, buf, len, Some(len))?;
            if decoder.read_offsets(&mut buffer, len)? != len {
                return Err(general_err!(
                    "too few bytes in fixed-length dictionary page"
                ));
            }
        } else {
            ByteArrayDecoderPlain::new(buf, len, Some(len), self.validate_utf8)
                .read(&mut buffer, usize::MAX)?;
        }

        let array = buffer.into_array(None, self.value_type.clone());
        self.dict = Some(array);
        Ok(())
    }

    fn set_data(
        &mut self,
        encoding: Encoding,
        data: Bytes,
        num_levels: usize,
        num_values: Option<usize>,
    ) -> Result<()> {
        let decoder = match encoding {
            Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY => {
                let bit_width = *data
                    .first()
                    .ok_or_else(|| general_err!("dictionary index page is empty"))?;
                if bit_width > MAX_RLE_DICTIONARY_BIT_WIDTH {
                    return Err(general_err!(
                        "Invalid or corrupted RLE bit width {bit_width}. Max allowed is {MAX_RLE_DICTIONARY_BIT_WIDTH}"
                    ));
                }
                let mut decoder = RleDecoder::new(bit_width);
                decoder.set_data(data.slice(1..))?;
                MaybeDictionaryDecoder::Dict {
                    decoder,
                    max_remaining_values: num_values.unwrap_or(num_levels),
                    bit_width,
                }
            }
            _ if self.flba_column_descr.is_some() => {
                let mut decoder =
                    FixedByteArrayDecoder::new(self.flba_column_descr.as_ref().unwrap());
                decoder.set_data(encoding, data, num_levels, num_values)?;
                MaybeDictionaryDecoder::Fixed(decoder)
            }
            _ => MaybeDictionaryDecoder::Fallback(ByteArrayDecoder::new(
                encoding,
                data,
                num_levels,
                num_values,
                self.validate_utf8,
            )?),
        };

        self.decoder = Some(decoder);
        Ok(())
    }

    fn read(&mut self, out: &mut Self::Buffer, num_values: usize) -> Result<usize> {
        match self.decoder.as_mut().expect("decoder set") {
            MaybeDictionaryDecoder::Fallback(decoder) => {
                decoder.read(out.spill_values()?, num_values, None)
            }
            MaybeDictionaryDecoder::Fixed(decoder) => {
                decoder.read_offsets(out.spill_values()?, num_values)
            }
            MaybeDictionaryDecoder::Dict {
                decoder,
                max_remaining_values,
                bit_width,
            } => {
                let len = num_values.min(*max_remaining_values);

                let dict = self
                    .dict
                    .as_ref()
                    .ok_or_else(|| general_err!("missing dictionary page for column"))?;

                assert_eq!(dict.data_type(), &self.value_type);

                if dict.is_empty() {
                    return Ok(0); // All data must be NULL
                }

                match out.as_keys_with_bit_width(dict, Some(*bit_width)) {
                    Some(keys) => {
                        // Happy path - can just copy keys
                        // TODO: Push vec into decoder (#5177)
                        let start = keys.len();
                        keys.resize(start + len, K::default());
                        let len = decoder.get_batch(&mut keys[start..])?;
                        keys.truncate(start + len);
                        *max_remaining_values -= len;
                        Ok(len)
                    }
                    None => {
                        // Sad path - need to recompute dictionary
                        //
                        // This either means we crossed into a new column chunk whilst
                        // reading this batch, or encountered non-dictionary encoded data
                        let values = out.spill_values()?;
                        let mut keys = vec![K::default(); len];
                        let len = decoder.get_batch(&mut keys)?;

                        assert_eq!(dict.data_type(), &self.value_type);

                        let data = dict.to_data();
                        let dict_buffers = data.buffers();
                        let dict_offsets = dict_buffers[0].typed_data::<V>();
                        let dict_values = dict_buffers[1].as_slice();

                        values.extend_from_dictionary(&keys[..len], dict_offsets, dict_values)?;
                        *max_remaining_values -= len;
                        Ok(len)
                    }
                }
            }
        }
    }

    fn skip_values(&mut self, num_values: usize) -> Result<usize> {
        match self.decoder.as_mut().expect("decoder set") {
            MaybeDictionaryDecoder::Fallback(decoder) => decoder.skip::<V>(num_values, None),
            MaybeDictionaryDecoder::Fixed(decoder) => decoder.skip_values(num_values),
            MaybeDictionaryDecoder::Dict {
                decoder,
                max_remaining_values,
                bit_width: _,
            } => {
                let num_values = num_values.min(*max_remaining_values);
                *max_remaining_values -= num_values;
                decoder.skip(num_values)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use arrow::compute::cast;
    use arrow_array::{Array, StringArray};
    use arrow_buffer::Buffer;

    use crate::arrow::array_reader::test_util::{
        byte_array_all_encodings, encode_dictionary, utf8_column,
    };
    use crate::arrow::record_reader::buffer::ValuesBuffer;
    use crate::data_type::ByteArray;

    use super::*;

    #[test]
    fn fixed_dictionary_canonical_wire_read_skip_and_truncation() {
        use crate::schema::types::{ColumnDescriptor, ColumnPath, Type as SchemaType};
        use arrow_array::cast::AsArray;
        use std::sync::Arc;
        let primitive = Arc::new(
            SchemaType::primitive_type_builder("fixed", Type::FIXED_LEN_BYTE_ARRAY)
                .with_length(4)
                .build()
                .unwrap(),
        );
        let desc = Arc::new(ColumnDescriptor::new(
            primitive,
            0,
            0,
            ColumnPath::from("fixed"),
        ));
        let dtype = ArrowType::Dictionary(
            Box::new(ArrowType::Int32),
            Box::new(ArrowType::FixedSizeBinary(4)),
        );
        // Canonical PLAIN has no length prefixes, independent of ArrowWriter.
        let raw = Bytes::from_static(b"abcdEFGHijkl");
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&desc);
        decoder
            .set_dict(raw.clone(), 3, Encoding::PLAIN, false)
            .unwrap();
        let dict = decoder.dict.as_ref().unwrap().as_binary::<i32>();
        assert_eq!(dict.value(0), b"abcd");
        assert_eq!(dict.value(1), b"EFGH");
        assert_eq!(dict.value(2), b"ijkl");
        assert!(
            decoder
                .set_dict(raw.slice(..11), 3, Encoding::PLAIN, false)
                .unwrap_err()
                .to_string()
                .contains("Invalid FIXED_LEN_BYTE_ARRAY dictionary page payload length")
        );

        decoder.set_data(Encoding::PLAIN, raw, 3, Some(3)).unwrap();
        let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);
        assert_eq!(decoder.read(&mut output, 1).unwrap(), 1);
        assert_eq!(decoder.skip_values(1).unwrap(), 1);
        assert_eq!(decoder.read(&mut output, 10).unwrap(), 1);
        assert_eq!(decoder.skip_values(10).unwrap(), 0);
        let array = output
            .into_array(None, &dtype, &mut MutableBuffer::new(0))
            .unwrap();
        let array = cast(&array, &ArrowType::FixedSizeBinary(4)).unwrap();
        assert_eq!(array.as_fixed_size_binary().value(0), b"abcd");
        assert_eq!(array.as_fixed_size_binary().value(1), b"ijkl");

        // Truncated PLAIN data yields only complete values; it cannot manufacture a row.
        decoder
            .set_data(Encoding::PLAIN, Bytes::from_static(b"abcdEFG"), 2, Some(2))
            .unwrap();
        let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);
        assert_eq!(decoder.read(&mut output, 2).unwrap(), 1);
        assert_eq!(decoder.read(&mut output, 1).unwrap(), 0);
        assert_eq!(decoder.skip_values(1).unwrap(), 0);
    }

    #[test]
    fn fixed_dictionary_payload_length_validation() {
        use crate::column::reader::decoder::ColumnValueDecoderImpl;
        use crate::data_type::FixedLenByteArrayType;
        use crate::schema::types::{ColumnDescriptor, ColumnPath, Type as SchemaType};
        use std::sync::Arc;

        fn check<D: ColumnValueDecoder>(desc: &ColumnDescPtr, encoding: Encoding) {
            // Length-looking and high-bit bytes are valid values, not legacy markers.
            let raw = Bytes::from_static(b"\x04\0\0\0\xff\xff\xff\xffabcd");
            D::new(desc)
                .set_dict(raw.clone(), 3, encoding, false)
                .unwrap();
            D::new(desc)
                .set_dict(Bytes::new(), 0, encoding, false)
                .unwrap();

            // A noncanonical payload with a mismatched prefix must be rejected.
            // Legacy acceptance is covered separately by the compatibility tests.
            let bad_prefix =
                Bytes::from_static(b"\x04\0\0\0\x04\0\0\0\x03\0\0\0\xff\xff\xff\xff\x04\0\0\0abcd");
            for (buf, count) in [
                (bad_prefix, 3),
                (raw.slice(..11), 3),
                (raw.clone(), 2),
                (raw, 0),
                (Bytes::new(), 3),
            ] {
                let err = D::new(desc)
                    .set_dict(buf, count, encoding, false)
                    .unwrap_err()
                    .to_string();
                assert!(
                    err.contains("Invalid FIXED_LEN_BYTE_ARRAY dictionary page payload length"),
                    "{} {encoding}: {err}",
                    std::any::type_name::<D>()
                );
            }
        }

        let primitive = Arc::new(
            SchemaType::primitive_type_builder("fixed", Type::FIXED_LEN_BYTE_ARRAY)
                .with_length(4)
                .build()
                .unwrap(),
        );
        let desc = Arc::new(ColumnDescriptor::new(
            primitive,
            0,
            0,
            ColumnPath::from("fixed"),
        ));
        for encoding in [
            Encoding::PLAIN,
            Encoding::PLAIN_DICTIONARY,
            Encoding::RLE_DICTIONARY,
        ] {
            check::<DictionaryDecoder<i32, i32>>(&desc, encoding);
            check::<FixedByteArrayDecoder>(&desc, encoding);
            check::<ColumnValueDecoderImpl<FixedLenByteArrayType>>(&desc, encoding);
        }
    }

    fn utf8_dictionary() -> ArrowType {
        ArrowType::Dictionary(Box::new(ArrowType::Int32), Box::new(ArrowType::Utf8))
    }

    #[test]
    fn test_dictionary_preservation() {
        let data_type = utf8_dictionary();

        let data: Vec<_> = vec!["0", "1", "0", "1", "2", "1", "2"]
            .into_iter()
            .map(ByteArray::from)
            .collect();
        let (dict, encoded) = encode_dictionary(&data);

        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&column_desc);

        decoder
            .set_dict(dict, 3, Encoding::RLE_DICTIONARY, false)
            .unwrap();

        decoder
            .set_data(Encoding::RLE_DICTIONARY, encoded, 14, Some(data.len()))
            .unwrap();

        let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);
        assert_eq!(decoder.read(&mut output, 3).unwrap(), 3);

        let mut valid = vec![false, false, true, true, false, true];
        let valid_buffer = Buffer::from_iter(valid.iter().copied());
        output
            .pad_nulls(0, 3, valid.len(), valid_buffer.as_slice())
            .unwrap();

        assert!(matches!(output, DictionaryBuffer::Dict { .. }));

        assert_eq!(decoder.read(&mut output, 4).unwrap(), 4);

        valid.extend_from_slice(&[false, false, true, true, false, true, true, false]);
        let valid_buffer = Buffer::from_iter(valid.iter().copied());
        output.pad_nulls(6, 4, 8, valid_buffer.as_slice()).unwrap();

        assert!(matches!(output, DictionaryBuffer::Dict { .. }));

        let array = output
            .into_array(Some(valid_buffer), &data_type, &mut MutableBuffer::new(0))
            .unwrap();
        assert_eq!(array.data_type(), &data_type);

        let array = cast(&array, &ArrowType::Utf8).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strings.len(), 14);

        assert_eq!(
            strings.iter().collect::<Vec<_>>(),
            vec![
                None,
                None,
                Some("0"),
                Some("1"),
                None,
                Some("0"),
                None,
                None,
                Some("1"),
                Some("2"),
                None,
                Some("1"),
                Some("2"),
                None
            ]
        )
    }

    #[test]
    fn test_dictionary_preservation_skip() {
        let data_type = utf8_dictionary();

        let data: Vec<_> = vec!["0", "1", "0", "1", "2", "1", "2"]
            .into_iter()
            .map(ByteArray::from)
            .collect();
        let (dict, encoded) = encode_dictionary(&data);

        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&column_desc);

        decoder
            .set_dict(dict, 3, Encoding::RLE_DICTIONARY, false)
            .unwrap();

        decoder
            .set_data(Encoding::RLE_DICTIONARY, encoded, 7, Some(data.len()))
            .unwrap();

        let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);

        // read two skip one
        assert_eq!(decoder.read(&mut output, 2).unwrap(), 2);
        assert_eq!(decoder.skip_values(1).unwrap(), 1);

        assert!(matches!(output, DictionaryBuffer::Dict { .. }));

        // read two skip one
        assert_eq!(decoder.read(&mut output, 2).unwrap(), 2);
        assert_eq!(decoder.skip_values(1).unwrap(), 1);

        // read one and test on skip at the end
        assert_eq!(decoder.read(&mut output, 1).unwrap(), 1);
        assert_eq!(decoder.skip_values(4).unwrap(), 0);

        let valid = [true, true, true, true, true];
        let valid_buffer = Buffer::from_iter(valid.iter().copied());
        output.pad_nulls(0, 5, 5, valid_buffer.as_slice()).unwrap();

        assert!(matches!(output, DictionaryBuffer::Dict { .. }));

        let array = output
            .into_array(Some(valid_buffer), &data_type, &mut MutableBuffer::new(0))
            .unwrap();
        assert_eq!(array.data_type(), &data_type);

        let array = cast(&array, &ArrowType::Utf8).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strings.len(), 5);

        assert_eq!(
            strings.iter().collect::<Vec<_>>(),
            vec![Some("0"), Some("1"), Some("1"), Some("2"), Some("2"),]
        )
    }

    #[test]
    fn test_dictionary_fallback() {
        let data_type = utf8_dictionary();
        let data = vec!["hello", "world", "a", "b"];

        let (pages, encoded_dictionary) = byte_array_all_encodings(data.clone());
        let num_encodings = pages.len();

        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&column_desc);

        decoder
            .set_dict(encoded_dictionary, 4, Encoding::RLE_DICTIONARY, false)
            .unwrap();

        // Read all pages into single buffer
        let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);

        for (encoding, page) in pages {
            decoder.set_data(encoding, page, 4, Some(4)).unwrap();
            assert_eq!(decoder.read(&mut output, 1024).unwrap(), 4);
        }
        let array = output
            .into_array(None, &data_type, &mut MutableBuffer::new(0))
            .unwrap();
        assert_eq!(array.data_type(), &data_type);

        let array = cast(&array, &ArrowType::Utf8).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strings.len(), data.len() * num_encodings);

        // Should have a copy of `data` for each encoding
        for i in 0..num_encodings {
            assert_eq!(
                strings
                    .iter()
                    .skip(i * data.len())
                    .take(data.len())
                    .map(|x| x.unwrap())
                    .collect::<Vec<_>>(),
                data
            )
        }
    }

    #[test]
    fn test_dictionary_skip_fallback() {
        let data_type = utf8_dictionary();
        let data = vec!["hello", "world", "a", "b"];

        let (pages, encoded_dictionary) = byte_array_all_encodings(data.clone());
        let num_encodings = pages.len();

        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&column_desc);

        decoder
            .set_dict(encoded_dictionary, 4, Encoding::RLE_DICTIONARY, false)
            .unwrap();

        // Read all pages into single buffer
        let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);

        for (encoding, page) in pages {
            decoder.set_data(encoding, page, 4, Some(4)).unwrap();
            decoder.skip_values(2).expect("skipping two values");
            assert_eq!(decoder.read(&mut output, 1024).unwrap(), 2);
        }
        let array = output
            .into_array(None, &data_type, &mut MutableBuffer::new(0))
            .unwrap();
        assert_eq!(array.data_type(), &data_type);

        let array = cast(&array, &ArrowType::Utf8).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(strings.len(), (data.len() - 2) * num_encodings);

        // Should have a copy of `data` for each encoding
        for i in 0..num_encodings {
            assert_eq!(
                &strings
                    .iter()
                    .skip(i * (data.len() - 2))
                    .take(data.len() - 2)
                    .map(|x| x.unwrap())
                    .collect::<Vec<_>>(),
                &data[2..]
            )
        }
    }

    #[test]
    fn test_too_large_dictionary() {
        let data: Vec<_> = (0..128)
            .map(|x| ByteArray::from(x.to_string().as_str()))
            .collect();
        let (dictionary, _) = encode_dictionary(&data);

        let column_desc = utf8_column();

        let mut decoder = DictionaryDecoder::<i8, i32>::new(&column_desc);
        let err = decoder
            .set_dict(dictionary.clone(), 128, Encoding::RLE_DICTIONARY, false)
            .unwrap_err()
            .to_string();

        assert!(err.contains("dictionary too large for index type"));

        let mut decoder = DictionaryDecoder::<i16, i32>::new(&column_desc);
        decoder
            .set_dict(dictionary, 128, Encoding::RLE_DICTIONARY, false)
            .unwrap();
    }

    #[test]
    fn test_nulls() {
        let data_type = utf8_dictionary();
        let (pages, encoded_dictionary) = byte_array_all_encodings(Vec::<&str>::new());

        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::new(&column_desc);

        decoder
            .set_dict(encoded_dictionary, 4, Encoding::PLAIN_DICTIONARY, false)
            .unwrap();

        for (encoding, page) in pages.clone() {
            let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);
            decoder.set_data(encoding, page, 8, None).unwrap();
            assert_eq!(decoder.read(&mut output, 1024).unwrap(), 0);

            output.pad_nulls(0, 0, 8, &[0]).unwrap();
            let array = output
                .into_array(
                    Some(Buffer::from(&[0])),
                    &data_type,
                    &mut MutableBuffer::new(0),
                )
                .unwrap();

            assert_eq!(array.len(), 8);
            assert_eq!(array.null_count(), 8);
            assert_eq!(array.logical_null_count(), 8);
        }

        for (encoding, page) in pages {
            let mut output = DictionaryBuffer::<i32, i32>::with_capacity(0);
            decoder.set_data(encoding, page, 8, None).unwrap();
            assert_eq!(decoder.skip_values(1024).unwrap(), 0);

            output.pad_nulls(0, 0, 8, &[0]).unwrap();
            let array = output
                .into_array(
                    Some(Buffer::from(&[0])),
                    &data_type,
                    &mut MutableBuffer::new(0),
                )
                .unwrap();

            assert_eq!(array.len(), 8);
            assert_eq!(array.null_count(), 8);
            assert_eq!(array.logical_null_count(), 8);
        }
    }

    #[test]
    fn test_dictionary_decoder_empty_data() {
        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&column_desc);
        let err = decoder
            .set_data(Encoding::RLE_DICTIONARY, Bytes::new(), 0, None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Parquet error: dictionary index page is empty"
        );
    }

    #[test]
    fn test_dictionary_decoder_invalid_bit_width() {
        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&column_desc);
        let data = Bytes::from_static(&[33, 0, 0, 0]);
        let err = decoder
            .set_data(Encoding::RLE_DICTIONARY, data, 1, None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Parquet error: Invalid or corrupted RLE bit width 33. Max allowed is 32"
        );
    }

    #[test]
    fn test_dictionary_decoder_rejects_rle_value_exceeding_bit_width() {
        let column_desc = utf8_column();
        let mut decoder = DictionaryDecoder::<i32, i32>::new(&column_desc);

        // Bit width 1, run length 1, value 0xff.
        let data = Bytes::from_static(&[1, 2, 0xff]);
        let err = decoder
            .set_data(Encoding::RLE_DICTIONARY, data, 1, Some(1))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Parquet error: Invalid or corrupted RLE value 255 exceeds bit width 1"
        );
    }
}
