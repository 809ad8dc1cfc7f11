//! Page headers of a Parquet column chunk, checked before the parquet crate reads them.
//!
//! The parquet crate reads page headers with a streaming Thrift reader that skips unknown
//! fields generically: skipping past the end of a chunk is not an error there, and a list of
//! booleans costs it no input byte per element. One damaged header declaring a list of two
//! billion doubles keeps it busy for minutes. This walk reads every page header of a chunk the
//! way the parquet crate does (the same field ids read as the same types, unknown fields
//! skipped), but every element must fit in the bytes that remain, so the work is bounded by
//! the chunk's length and a header the crate could spin on is refused first. Page headers have
//! no boolean lists, and a known field declared with another type would be read differently
//! by the crate: both are refused.
//!
//! Pure: it sees bytes, never the store.

/// Thrift compact type codes.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

/// The parquet crate's skip depth.
const MAX_DEPTH: u32 = 64;

/// The structs of a page header, with the types of the fields the parquet crate reads.
#[derive(Clone, Copy)]
enum Header {
    Page,
    DataPage,
    IndexPage,
    DictionaryPage,
    DataPageV2,
    Statistics,
}

#[derive(Clone, Copy)]
enum Field {
    I32,
    I64,
    Bool,
    Binary,
    Struct(Header),
}

fn known_field(header: Header, id: i16) -> Option<Field> {
    use Field::{Binary, Bool, Struct, I32, I64};
    match (header, id) {
        (Header::Page, 1..=4) => Some(I32),
        (Header::Page, 5) => Some(Struct(Header::DataPage)),
        (Header::Page, 6) => Some(Struct(Header::IndexPage)),
        (Header::Page, 7) => Some(Struct(Header::DictionaryPage)),
        (Header::Page, 8) => Some(Struct(Header::DataPageV2)),
        (Header::DataPage, 1..=4) => Some(I32),
        (Header::DataPage, 5) | (Header::DataPageV2, 8) => Some(Struct(Header::Statistics)),
        (Header::DictionaryPage, 1 | 2) => Some(I32),
        (Header::DictionaryPage, 3) | (Header::DataPageV2, 7) => Some(Bool),
        (Header::DataPageV2, 1..=6) => Some(I32),
        (Header::Statistics, 1 | 2 | 5 | 6) => Some(Binary),
        (Header::Statistics, 3 | 4 | 9) => Some(I64),
        (Header::Statistics, 7 | 8) => Some(Bool),
        _ => None,
    }
}

/// Why the pages of a column chunk cannot be read safely, if they cannot. `chunk` holds the
/// chunk's bytes, from its first page header to its end.
pub(crate) fn chunk_problem(chunk: &[u8]) -> Option<String> {
    let mut at = 0usize;
    let mut page = 0usize;
    while at < chunk.len() {
        let mut reader = Reader { buf: &chunk[at..], at: 0 };
        let sizes = match reader.page_header() {
            Ok(sizes) => sizes,
            Err(problem) => return Some(format!("page {page}: {problem}")),
        };
        let (uncompressed, compressed) = sizes;
        if uncompressed < 0 || compressed < 0 {
            return Some(format!("page {page} has a negative size"));
        }
        at = match (at + reader.at).checked_add(compressed as usize) {
            Some(end) if end <= chunk.len() => end,
            _ => return Some(format!("page {page} runs past the end of its column chunk")),
        };
        page += 1;
    }
    None
}

/// Why a file's Thrift footer (the bytes between the data and the trailing length and magic)
/// could make the parquet crate spin, if it could.
///
/// Its footer reader skips unknown fields generically, and a container of booleans costs it
/// no input byte per element: a footer holding a list of thousands of lists of 2^31 booleans
/// keeps it busy for hours. The footer is walked as the Thrift struct it is (the walk of a
/// well-formed footer is the crate's own), refusing any container of booleans (the format has
/// none) and any container with more elements than bytes left. A footer crafted so that the
/// crate reads it differently from this walk is caught by the decoding deadline
/// ([`crate::panic_guard::with_deadline`]).
pub(crate) fn footer_problem(footer: &[u8]) -> Option<String> {
    let mut reader = Reader { buf: footer, at: 0 };
    reader.skip_value(STRUCT, 0).err().map(|problem| format!("damaged footer: {problem}"))
}

/// The length of the Thrift footer a file's last 8 bytes announce (`<len u32 LE>PAR1`).
pub(crate) fn footer_len(tail: &[u8]) -> Option<usize> {
    let tail = tail.get(tail.len().checked_sub(8)?..)?;
    (&tail[4..] == b"PAR1").then(|| u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize)
}

/// [`footer_problem`] for a whole file in memory; files too short for a footer are left to
/// the Parquet reader to refuse.
#[cfg(any(test, feature = "internal-api"))]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn file_footer_problem(file: &[u8]) -> Option<String> {
    let n = footer_len(file)?;
    let end = file.len() - 8;
    footer_problem(file.get(end.checked_sub(n)?..end)?)
}

/// [`chunk_problem`] for every column chunk of a whole file in memory. Call it after
/// [`super::parquet_footer::footer_problem`] found the chunk ranges sound.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn file_problem(metadata: &parquet::file::metadata::ParquetMetaData, file: &[u8]) -> Option<String> {
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for (c, column) in group.columns().iter().enumerate() {
            let (start, len) = column.byte_range();
            let chunk = usize::try_from(start)
                .ok()
                .zip(usize::try_from(len).ok())
                .and_then(|(s, l)| file.get(s..s.checked_add(l)?));
            let Some(chunk) = chunk else {
                return Some(format!("column chunk {c} of row group {g} lies outside the file"));
            };
            if let Some(problem) = chunk_problem(chunk) {
                return Some(format!("column chunk {c} of row group {g}: {problem}"));
            }
        }
    }
    None
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

type Step<T> = std::result::Result<T, String>;

impl Reader<'_> {
    fn byte(&mut self) -> Step<u8> {
        let b = *self.buf.get(self.at).ok_or("header runs past the end of its column chunk")?;
        self.at += 1;
        Ok(b)
    }

    fn skip(&mut self, n: u64) -> Step<()> {
        let left = (self.buf.len() - self.at) as u64;
        if n > left {
            return Err(format!("header declares {n} bytes where {left} remain"));
        }
        self.at += n as usize;
        Ok(())
    }

    fn varint(&mut self) -> Step<u64> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).wrapping_shl(shift);
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    fn zigzag(&mut self) -> Step<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// Reads a `PageHeader`; returns its uncompressed and compressed page sizes.
    fn page_header(&mut self) -> Step<(i64, i64)> {
        let mut sizes = (None, None);
        self.read_struct(Header::Page, 0, &mut |id, value| match id {
            2 => sizes.0 = Some(value),
            3 => sizes.1 = Some(value),
            _ => {}
        })?;
        match sizes {
            (Some(u), Some(c)) => Ok((u, c)),
            _ => Err("header lacks its page sizes".to_string()),
        }
    }

    /// Reads a struct field by field; `top` receives the integers of the page header itself.
    fn read_struct(&mut self, header: Header, depth: u32, top: &mut dyn FnMut(i16, i64)) -> Step<()> {
        if depth >= MAX_DEPTH {
            return Err("header nests too deeply".into());
        }
        let mut last_id = 0i16;
        loop {
            let first = self.byte()?;
            let kind = first & 0x0f;
            if kind == 0 {
                return Ok(());
            }
            let delta = first >> 4;
            let id = if delta != 0 {
                last_id.checked_add(i16::from(delta)).ok_or("header field ids overflow")?
            } else {
                self.zigzag()? as i16
            };
            match known_field(header, id) {
                Some(Field::I32) if kind == I32 => {
                    let v = self.zigzag()?;
                    if matches!(header, Header::Page) {
                        top(id, i64::from(v as i32));
                    }
                }
                Some(Field::I64) if kind == I64 => {
                    self.zigzag()?;
                }
                Some(Field::Bool) if kind == BOOL_TRUE || kind == BOOL_FALSE => {}
                Some(Field::Binary) if kind == BINARY => {
                    let n = self.varint()?;
                    self.skip(n)?;
                }
                Some(Field::Struct(inner)) if kind == STRUCT => self.read_struct(inner, depth + 1, top)?,
                Some(_) => return Err(format!("header field {id} has the wrong type")),
                None => self.skip_value(kind, depth + 1)?,
            }
            last_id = id;
        }
    }

    /// Skips one value of an unknown field, counting everything against the remaining bytes.
    fn skip_value(&mut self, kind: u8, depth: u32) -> Step<()> {
        if depth >= MAX_DEPTH {
            return Err("header nests too deeply".into());
        }
        match kind {
            BOOL_TRUE | BOOL_FALSE => Ok(()),
            BYTE => self.skip(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.skip(8),
            UUID => self.skip(16),
            BINARY => {
                let n = self.varint()?;
                self.skip(n)
            }
            STRUCT => loop {
                let first = self.byte()?;
                let field_kind = first & 0x0f;
                if field_kind == 0 {
                    return Ok(());
                }
                if first >> 4 == 0 {
                    self.zigzag()?;
                }
                self.skip_value(field_kind, depth + 1)?;
            },
            LIST | SET => {
                let first = self.byte()?;
                if first == 0 {
                    return Ok(());
                }
                let element = first & 0x0f;
                let size = if first >> 4 == 15 { self.varint()? } else { u64::from(first >> 4) };
                self.elements(size, &[element], depth)
            }
            MAP => {
                let size = self.varint()?;
                if size == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                self.elements(size, &[kv >> 4, kv & 0x0f], depth)
            }
            _ => Err(format!("header has an unknown Thrift type {kind}")),
        }
    }

    fn elements(&mut self, size: u64, kinds: &[u8], depth: u32) -> Step<()> {
        if size > i32::MAX as u64 {
            return Err("header declares a container of more than 2^31 elements".into());
        }
        for &kind in kinds {
            if kind == BOOL_TRUE || kind == BOOL_FALSE {
                return Err("header has a container of booleans".into());
            }
            if !(BYTE..=UUID).contains(&kind) {
                return Err(format!("header has an unknown Thrift type {kind}"));
            }
        }
        // Every element takes at least one byte: more elements than bytes cannot fit.
        let left = (self.buf.len() - self.at) as u64;
        if size.saturating_mul(kinds.len() as u64) > left {
            return Err(format!("header declares {size} elements where {left} bytes remain"));
        }
        for _ in 0..size {
            for &kind in kinds {
                self.skip_value(kind, depth + 1)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal data page header: type 0, sizes, and a data page header with 1 value.
    fn header(uncompressed: u8, compressed: u8, extra: &[u8]) -> Vec<u8> {
        let mut h = vec![0x15, 0x00, 0x15, uncompressed * 2, 0x15, compressed * 2];
        h.extend_from_slice(&[0x2c, 0x15, 0x02, 0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x00]);
        // `extra` starts with field 9 (delta 4 from field 5).
        h.extend_from_slice(extra);
        h.push(0x00);
        h
    }

    #[test]
    fn walks_well_formed_pages() {
        let mut chunk = header(3, 3, &[]);
        chunk.extend_from_slice(&[1, 2, 3]);
        let mut second = header(2, 2, &[]);
        second.extend_from_slice(&[4, 5]);
        chunk.extend(second);
        assert_eq!(chunk_problem(&chunk), None);
    }

    #[test]
    fn refuses_pages_past_the_chunk() {
        let mut chunk = header(3, 9, &[]);
        chunk.extend_from_slice(&[1, 2, 3]);
        assert!(chunk_problem(&chunk).unwrap().contains("past the end"), "{:?}", chunk_problem(&chunk));
    }

    #[test]
    fn refuses_huge_unknown_lists_and_boolean_containers() {
        // Field 9 (unknown to page headers): a list of 2^31-1 doubles.
        let huge = [0x49, 0xf7, 0xff, 0xff, 0xff, 0xff, 0x07];
        assert!(chunk_problem(&header(0, 0, &huge)).unwrap().contains("elements where"));
        let bools = [0x49, 0x31, 1, 1, 1];
        assert!(chunk_problem(&header(0, 0, &bools)).unwrap().contains("booleans"));
        // A small list of i32 in an unknown field is skipped like the parquet crate does.
        let small = [0x49, 0x25, 0x02, 0x04];
        assert_eq!(chunk_problem(&header(0, 0, &small)), None);
    }

    #[test]
    fn refuses_known_fields_of_another_type() {
        // compressed_page_size (field 3) declared as a binary.
        let chunk = [0x15, 0x00, 0x15, 0x00, 0x18, 0x00, 0x00];
        assert!(chunk_problem(&chunk).unwrap().contains("wrong type"));
    }

    #[test]
    fn footer_with_lists_of_billions_of_booleans_is_refused() {
        // Field 100 of FileMetaData: a list of 4 lists of 2^31-1 booleans each.
        let mut footer = vec![0x15, 0x02, 0x09, 0xc8, 0x01, 0x49];
        for _ in 0..4 {
            footer.extend_from_slice(&[0xf1, 0xff, 0xff, 0xff, 0xff, 0x07]);
        }
        footer.push(0);
        assert!(footer_problem(&footer).unwrap().contains("booleans"));
        // Statistics ending in high bytes before a boolean field are ordinary data.
        let stats = [0x15, 0x02, 0x68, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x11, 0x00];
        assert_eq!(footer_problem(&stats), None);
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed() {
        let mut chunk = vec![0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x6c];
        chunk.extend(std::iter::repeat_n(0x1c, 10_000));
        assert!(chunk_problem(&chunk).unwrap().contains("too deeply"));
    }
}
