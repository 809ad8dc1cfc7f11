//! Raw message payloads straight into Arrow: no `serde_json::Value` on the hot path.
//!
//! Tables of flat columns decode each record in one scan straight into the columns
//! ([`Columns`]: the value rules applied on the way). From the first record that scan is not
//! certain of, and for every other table, the records are checked against the value rules and
//! handed to `arrow_json`'s decoder against the table schema (strict: unknown fields are
//! errors). Only when that fails are the records decoded one by one, to separate the good ones
//! from the bad; each bad one becomes a [`DeadLetter`] carrying its reason and everything
//! needed to find or replay it, and the rest of the batch proceeds.

use std::borrow::Cow;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

use crate::common::record::{DeadLetter, RawRecord};
use crate::decode::json_columns::Columns;
use crate::decode::json_values::{RecordRules, Verdict};
use crate::decode::json_variant::VariantSplit;

/// Decodes JSON payloads against a table schema.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PayloadDecoder {
    schema: SchemaRef,
    rules: RecordRules,
    /// The one-scan decoder, for tables of flat columns.
    columns: Option<Columns>,
    /// How variant columns are filled, for tables that have them.
    variants: Option<VariantSplit>,
    max_record_bytes: usize,
}

/// The outcome of decoding a batch of records.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Decoded {
    /// The good records' rows, in input order (`None` when there are none).
    pub batch: Option<RecordBatch>,
    /// Indexes (into the input) of the records in `batch`, in order.
    pub rows_from: Vec<usize>,
    pub dead_letters: Vec<DeadLetter>,
    /// Keyed topics whose envelopes carry deletes: (input index, key) of each delete.
    pub deletes: Vec<(usize, String)>,
}

impl PayloadDecoder {
    /// A decoder for the Arrow form of the table schema (with its nullability).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(schema: SchemaRef, max_record_bytes: usize) -> Self {
        if let Some(split) = VariantSplit::plan(&schema, None, max_record_bytes) {
            let rules = RecordRules::new(&Arc::new(arrow::datatypes::Schema::empty()));
            return PayloadDecoder { rules, columns: None, variants: Some(split), schema, max_record_bytes };
        }
        let (rules, columns) = (RecordRules::new(&schema), Columns::plan(&schema));
        PayloadDecoder { rules, columns, variants: None, schema, max_record_bytes }
    }

    /// The same decoder with the whole payload as the value of the variant column `column`
    /// (the table's other payload columns then stay null).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn with_record_variant(mut self, column: &str) -> Self {
        self.variants = VariantSplit::plan(&self.schema, Some(column), self.max_record_bytes);
        self
    }

    /// The same decoder without the one-scan path: every record through the value rules and
    /// `arrow_json` (the reference the one-scan path is held to).
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn reference(mut self) -> Self {
        self.columns = None;
        self
    }

    /// The Arrow schema rows are decoded into.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Decodes the records; never fails as a whole: bad records become dead letters.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn decode(&self, records: &[RawRecord<'_>]) -> Decoded {
        if let Some(split) = &self.variants {
            return split.decode(&self.schema, records, records.iter().map(|r| self.framing(r)).collect());
        }
        let Some(columns) = &self.columns else { return self.decode_checked(records) };
        let bytes = records.iter().map(|r| r.payload.map_or(0, <[u8]>::len)).sum();
        let mut rows = columns.rows(records.len(), bytes);
        let mut dead = Vec::new();
        let mut good = Vec::with_capacity(records.len());
        for (i, r) in records.iter().enumerate() {
            match self.framing(r) {
                Err(reason) => dead.push(DeadLetter::of(r, reason)),
                Ok(bytes) if rows.push(bytes) => good.push(i),
                // From the first record the scan is not certain of, the other way.
                Ok(_) => {
                    let Ok(head) = rows.finish() else { return self.decode_checked(records) };
                    let mut rest = self.decode_checked(&records[i..]);
                    let batch = match (head, rest.batch.take()) {
                        (Some(head), Some(tail)) => {
                            match arrow::compute::concat_batches(&self.schema, [&head, &tail]) {
                                Ok(both) => Some(both),
                                Err(_) => return self.decode_checked(records),
                            }
                        }
                        (head, tail) => head.or(tail),
                    };
                    good.extend(rest.rows_from.iter().map(|j| j + i));
                    dead.append(&mut rest.dead_letters);
                    return Decoded { batch, rows_from: good, dead_letters: dead, deletes: Vec::new() };
                }
            }
        }
        match rows.finish() {
            Ok(batch) => Decoded { batch, rows_from: good, dead_letters: dead, deletes: Vec::new() },
            Err(_) => self.decode_checked(records),
        }
    }

    /// Every record through the value rules, then `arrow_json`.
    fn decode_checked(&self, records: &[RawRecord<'_>]) -> Decoded {
        let mut dead = Vec::new();
        let mut good = Vec::with_capacity(records.len());
        let mut prepared: Vec<Cow<'_, [u8]>> = Vec::with_capacity(records.len());
        for (i, r) in records.iter().enumerate() {
            // (UTF-8 is checked by the decoder, over every string at once: a batch that fails
            // it takes the slow path, where each record is checked whole.)
            match self.precheck(r, false) {
                Err(reason) => dead.push(DeadLetter::of(r, reason)),
                Ok(bytes) => {
                    good.push(i);
                    prepared.push(bytes);
                }
            }
        }
        if good.is_empty() {
            return Decoded { batch: None, rows_from: good, dead_letters: dead, deletes: Vec::new() };
        }
        // Each record handed to the decoder as it is: no copy of the poll into one buffer.
        if let Ok(batch) = self.decode_each(&prepared) {
            return Decoded { batch, rows_from: good, dead_letters: dead, deletes: Vec::new() };
        }
        // Slow path: find the bad records one by one, then decode the rest together.
        let mut kept = Vec::with_capacity(good.len());
        let mut kept_bytes = Vec::with_capacity(good.len());
        for (i, bytes) in good.into_iter().zip(prepared) {
            if let Err(reason) = self.precheck(&records[i], true) {
                dead.push(DeadLetter::of(&records[i], reason));
                continue;
            }
            match self.decode_each(std::slice::from_ref(&bytes)) {
                Ok(_) => {
                    kept.push(i);
                    kept_bytes.push(bytes);
                }
                Err(e) => dead.push(DeadLetter::of(&records[i], e)),
            }
        }
        dead.sort_by_key(|d| d.offset);
        let batch = if kept.is_empty() { None } else { self.decode_each(&kept_bytes).unwrap_or(None) };
        Decoded { batch, rows_from: kept, dead_letters: dead, deletes: Vec::new() }
    }

    /// Rows given as serializable values (decoded messages) straight into Arrow through
    /// `arrow-json`'s serializer, with no JSON text in between; `None` when any row does not
    /// fit the schema (the caller then takes the slow, per-record path).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn decode_serialized<S: serde::Serialize>(&self, rows: &[S]) -> Option<RecordBatch> {
        let mut decoder = arrow_json::ReaderBuilder::new(self.schema.clone())
            .with_strict_mode(true)
            .with_batch_size(rows.len().max(1) + 1)
            .build_decoder()
            .ok()?;
        decoder.serialize(rows).ok()?;
        decoder.flush().ok()?.filter(|b| b.num_rows() == rows.len())
    }

    /// A record's bytes as the decoder takes them, or why it is a dead letter; `utf8` checks
    /// the whole payload's encoding too.
    fn precheck<'a>(&self, r: &RawRecord<'a>, utf8: bool) -> Result<Cow<'a, [u8]>, String> {
        let bytes = self.framing(r)?;
        if utf8 && std::str::from_utf8(bytes).is_err() {
            return Err("payload is not valid UTF-8".into());
        }
        match self.rules.check(bytes)? {
            Verdict::AsIs => Ok(Cow::Borrowed(bytes)),
            Verdict::Rewritten(spelled) => Ok(Cow::Owned(spelled)),
        }
    }

    /// A record's payload, or why it is a dead letter before any value is read.
    fn framing<'a>(&self, r: &RawRecord<'a>) -> Result<&'a [u8], String> {
        let bytes = r.payload.ok_or("null payload (tombstone)")?;
        if bytes.len() > self.max_record_bytes {
            return Err(format!("payload of {} bytes is over the limit of {}", bytes.len(), self.max_record_bytes));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err("empty payload".into());
        }
        Ok(bytes)
    }

    /// One record per element, in order, as one batch (each must hold exactly one value).
    fn decode_each(&self, records: &[Cow<'_, [u8]>]) -> Result<Option<RecordBatch>, String> {
        let mut decoder = arrow_json::ReaderBuilder::new(self.schema.clone())
            .with_strict_mode(true)
            .with_batch_size(records.len() + 1)
            .build_decoder()
            .map_err(|e| e.to_string())?;
        for r in records {
            let mut rest: &[u8] = r;
            while !rest.is_empty() {
                let n = decoder.decode(rest).map_err(|e| e.to_string())?;
                if n == 0 {
                    break;
                }
                rest = &rest[n..];
            }
            // A separator, so that a record's last value never runs into the next one's.
            decoder.decode(b"\n").map_err(|e| e.to_string())?;
        }
        let batch = decoder.flush().map_err(|e| e.to_string())?;
        // One payload must be one record: two JSON values in one message is an error.
        match &batch {
            Some(b) if b.num_rows() != records.len() => {
                Err(format!("expected {} records, found {}", records.len(), b.num_rows()))
            }
            _ => Ok(batch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), Field::new("name", DataType::Utf8, true)]))
    }

    fn rec(offset: i64, payload: Option<&'static [u8]>) -> RawRecord<'static> {
        RawRecord { topic: "t", partition: 0, offset, timestamp_ms: Some(1), key: Some(b"k"), payload }
    }

    #[test]
    fn good_batches_take_the_fast_path() {
        let d = PayloadDecoder::new(schema(), 1024);
        let out = d.decode(&[rec(0, Some(br#"{"id":1,"name":"a"}"#)), rec(1, Some(br#"{"id":2}"#))]);
        assert_eq!(out.batch.unwrap().num_rows(), 2);
        assert_eq!(out.rows_from, vec![0, 1]);
        assert!(out.dead_letters.is_empty());
    }

    /// A string column's buffer is sized from what the last poll's rows took (not doubled up
    /// from a guess), and never past the poll's own bytes, whatever came before.
    #[test]
    fn string_columns_get_the_room_their_rows_took_and_no_more_than_the_poll() {
        let d = PayloadDecoder::new(schema(), 1 << 20);
        let poll = |n: usize, len: usize| -> Vec<Vec<u8>> {
            (0..n).map(|i| format!(r#"{{"id":{i},"name":"{}"}}"#, "ü".repeat(len / 2)).into_bytes()).collect()
        };
        let name_bytes = |payloads: &[Vec<u8>]| {
            let records: Vec<RawRecord<'_>> = payloads
                .iter()
                .enumerate()
                .map(|(i, p)| RawRecord {
                    topic: "t",
                    partition: 0,
                    offset: i as i64,
                    timestamp_ms: None,
                    key: None,
                    payload: Some(p),
                })
                .collect();
            let out = d.decode(&records);
            assert!(out.dead_letters.is_empty());
            let batch = out.batch.expect("rows");
            assert_eq!(batch.num_rows(), payloads.len());
            batch.column(1).get_buffer_memory_size()
        };
        // 1,000 names of 600 bytes: grown by doubling from 16 bytes a row, the buffer would be
        // 1,024,000 bytes; learned from a first poll, about an eighth over the 600,000.
        name_bytes(&poll(100, 600));
        let learned = name_bytes(&poll(1000, 600));
        assert!(learned <= 600_000 * 9 / 8 + 8_192, "{learned}");
        // After long names, a poll of short records gets no more room than its own bytes.
        let short = poll(1000, 2);
        let total: usize = short.iter().map(Vec::len).sum();
        let room = name_bytes(&short);
        assert!(room <= total + 8_192, "{room} for a poll of {total} bytes");
        // And a poll of long names after short ones grows as needed.
        assert!(name_bytes(&poll(10, 5000)) >= 10 * 5000);
    }

    #[test]
    fn bad_records_become_dead_letters_and_the_rest_proceeds() {
        let d = PayloadDecoder::new(schema(), 40);
        let records = [
            rec(10, Some(br#"{"id":1}"#)),
            rec(11, Some(b"{not json")),
            rec(12, Some(br#"{"id":"x"}"#)),
            rec(13, Some(br#"{"name":"missing id"}"#)),
            rec(14, Some(br#"{"id":5,"extra":1}"#)),
            rec(15, None),
            rec(16, Some(&[0xff, 0xfe])),
            rec(17, Some(br#"{"id":7,"name":"this payload is far too long for the limit"}"#)),
            rec(18, Some(br#"{"id":8}{"id":9}"#)),
            rec(19, Some(br#"{"id":10}"#)),
        ];
        let out = d.decode(&records);
        assert_eq!(out.batch.unwrap().num_rows(), 2);
        assert_eq!(out.rows_from, vec![0, 9]);
        let offsets: Vec<i64> = out.dead_letters.iter().map(|l| l.offset).collect();
        assert_eq!(offsets, vec![11, 12, 13, 14, 15, 16, 17, 18]);
        let letter = &out.dead_letters[0];
        assert_eq!((letter.topic.as_str(), letter.partition, letter.key.as_deref()), ("t", 0, Some(&b"k"[..])));
        assert_eq!(letter.payload.as_deref(), Some(&b"{not json"[..]), "raw bytes kept for replay");
        assert!(out.dead_letters.iter().all(|l| !l.reason.is_empty()));
        // A value its column cannot hold exactly is a dead letter naming the field.
        let out = d.decode(&[rec(20, Some(br#"{"id":2.5}"#)), rec(21, Some(br#"{"id":3}"#))]);
        assert_eq!(out.rows_from, vec![1]);
        assert!(out.dead_letters[0].reason.contains(r#"field "id": 2.5 has a fraction"#), "{:?}", out.dead_letters);
        // Values a string column takes as their JSON text land.
        let out = d.decode(&[rec(22, Some(br#"{"id":4,"name":7}"#))]);
        assert_eq!(out.batch.map(|b| b.num_rows()), Some(1), "{:?}", out.dead_letters);
    }

    /// Random polls over a table of every column the one-scan path covers: it gives the same
    /// rows, row indexes and dead letters as the value rules plus `arrow_json`, and takes a
    /// good share of the records itself.
    #[test]
    fn the_one_scan_path_decodes_as_the_reference_does() {
        use crate::decode::json_columns::Columns;
        use arrow::datatypes::TimeUnit;
        const TOKENS: &[&str] = &[
            "0",
            "-0",
            "12",
            "-7",
            "2.0",
            "2.5",
            "1e3",
            "-1.5e-3",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "128",
            "-129",
            "32767",
            "2147483648",
            "99999999999999999999999",
            "1e400",
            "-1e400",
            "01",
            "1.",
            "-",
            "123.45",
            "1234.5",
            "0.50",
            "3.4e39",
            "340282366920938463463374607431768211455.5",
            "0.1",
            "1.7976931348623157e308",
            "4.9e-324",
            "16777217",
            "0.000001",
            "1E2",
            "\"a\"",
            "\"ü\"",
            "\"a\\\"b\"",
            "\"\\u00e9\\n\\t\\/\\\\\"",
            "\"\\ud83d\\ude00\"",
            "\"\\ud83d\"",
            "\"\\ude00\"",
            "\"\\ud83dx\"",
            "\"\\u12\"",
            "\"\\q\"",
            "\"tab\there\"",
            "\"\\u0000\"",
            "\"2024-01-02T03:04:05Z\"",
            "\"2024-01-02T03:04:05.123456+02:00\"",
            "\"2024-01-02 03:04:05\"",
            "\"2024-01-02T03:04:05.1234567Z\"",
            "\"2024-01-02\"",
            "\"2024-02-30\"",
            "\"2024-1-2\"",
            "\" 2024-01-02\"",
            "\"1969-12-31T23:59:59.999999Z\"",
            "\"\\u0032024-01-02\"",
            "\"5\"",
            "\"2.5\"",
            "true",
            "false",
            "null",
            "nul",
            "tru",
            "{",
            "}",
            "]",
            "",
            "[1,2]",
            "{}",
            "{\"n\":1}",
        ];
        const INTS: &[&str] =
            &["0", "-0", "12", "-7", "127", "-128", "32767", "2147483647", "9223372036854775807", "null"];
        const FLOATS: &[&str] =
            &["0.1", "-2.5", "1e3", "1.7976931348623157e308", "4.9e-324", "16777217", "3.4028235e38", "-0.0", "12"];
        const TEXTS: &[&str] = &[
            "\"a\"",
            "\"ü ключ\"",
            "\"a\\\"b\"",
            "\"\\u00e9\\n\\t\\/\\\\\"",
            "\"\\ud83d\\ude00\"",
            "\"\"",
            "\"tab\there\"",
            "\"\\ud84d\\ude00 \\uDBFF\\uDFFF\"",
            "\"\\ud840\"",
            "\"\\\\ud840\\\\udc00\"",
        ];
        const TIMES: &[&str] = &[
            "\"2024-01-02T03:04:05Z\"",
            "\"2024-01-02T03:04:05.123456+02:00\"",
            "\"2024-01-02 03:04:05\"",
            "\"2024-01-02\"",
            "\"1969-12-31T23:59:59.999999Z\"",
            "\"2024-03-31T02:30:00\"",
            "\"0001-01-01T00:00:00Z\"",
        ];
        const DAYS: &[&str] =
            &["\"2024-01-02\"", "\"1969-12-31\"", "\"2024-02-29\"", "\"2023-02-29\"", "\"+2024-01-02\""];
        const DECIMALS: &[&str] = &["0", "12345678.99", "-0.01", "1.5", "99999999.999", "0.10", "100000000"];
        const FITTING: &[(&str, &[&str])] = &[
            ("i8", INTS),
            ("i16", INTS),
            ("i32", INTS),
            ("i64", INTS),
            ("req", INTS),
            ("f32", FLOATS),
            ("f64", FLOATS),
            ("ok", &["true", "false", "null"]),
            ("s", TEXTS),
            ("ключ", TEXTS),
            ("day", DAYS),
            ("ts", TIMES),
            ("ntz", TIMES),
            ("ms", TIMES),
            ("d", DECIMALS),
        ];
        const KEYS: &[&str] = &[
            "i8",
            "i16",
            "i32",
            "i64",
            "f32",
            "f64",
            "ok",
            "s",
            "day",
            "ts",
            "ntz",
            "ms",
            "d",
            "ключ",
            "i8",
            "i16",
            "i32",
            "i64",
            "f32",
            "f64",
            "ok",
            "s",
            "day",
            "ts",
            "ntz",
            "ms",
            "d",
            "ключ",
            "req",
            "zz",
            "\\u0069\\u0038",
        ];
        let schema = Arc::new(Schema::new(vec![
            Field::new("i8", DataType::Int8, true),
            Field::new("i16", DataType::Int16, true),
            Field::new("i32", DataType::Int32, true),
            Field::new("i64", DataType::Int64, true),
            Field::new("f32", DataType::Float32, true),
            Field::new("f64", DataType::Float64, true),
            Field::new("ok", DataType::Boolean, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("day", DataType::Date32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
            Field::new("ntz", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("ms", DataType::Timestamp(TimeUnit::Millisecond, Some("+05:30".into())), true),
            Field::new("d", DataType::Decimal128(10, 2), true),
            Field::new("ключ", DataType::Utf8, true),
            Field::new("req", DataType::Int64, false),
        ]));
        let columns = Columns::plan(&schema).expect("every column is covered");
        let decoder = PayloadDecoder::new(schema.clone(), 300);
        let reference = decoder.clone().reference();
        let mut raw = crate::delta::test_rng::xorshift(0x2545_F491_4F6C_DD1Du64);
        let mut next = move |n: usize| (raw() % n as u64) as usize;
        let (mut direct, mut tried) = (0, 0);
        for _ in 0..4_000 {
            let mut poll = Vec::new();
            for _ in 0..1 + next(12) {
                // One record in six is malformed somewhere.
                let noisy = next(6) == 0;
                let pick = |next: &mut dyn FnMut(usize) -> usize, n: usize| if noisy { next(n) } else { 0 };
                let mut rec = String::from("{");
                for i in 0..next(5) {
                    if i > 0 {
                        rec.push_str([", ", ",", " ,\n", ""][pick(&mut next, 4)]);
                    }
                    let key = KEYS[next(KEYS.len())];
                    rec.push_str(&format!("\"{key}\""));
                    rec.push_str([":", " : ", ""][pick(&mut next, 3)]);
                    // Mostly a value of the key's own kind, else anything.
                    let fitting = FITTING.iter().find(|(k, _)| *k == key).map_or(TOKENS, |(_, t)| *t);
                    let pool = if next(6) > 0 { fitting } else { TOKENS };
                    rec.push_str(pool[next(pool.len())]);
                }
                if next(8) > 0 {
                    rec.push_str(&format!(
                        "{}\"req\": {}",
                        if rec.len() > 1 { "," } else { "" },
                        ["1", "null", "-5", "2.5"][next(4).min(next(4))]
                    ));
                }
                rec.push_str(["}", "} ", "", "}x", "}}"][pick(&mut next, 5)]);
                if noisy && next(2) == 0 {
                    let cut = next(rec.len() + 1);
                    rec.truncate(rec.floor_char_boundary(cut));
                }
                let mut bytes = rec.into_bytes();
                if noisy && next(4) == 0 {
                    let at = next(bytes.len() + 1);
                    bytes.insert(at, 0xff);
                }
                poll.push(bytes);
            }
            let records: Vec<RawRecord<'_>> = poll
                .iter()
                .enumerate()
                .map(|(i, p)| RawRecord {
                    topic: "t",
                    partition: 0,
                    offset: i as i64,
                    timestamp_ms: Some(1),
                    key: None,
                    payload: Some(p.as_slice()),
                })
                .map(|r| if next(30) == 0 { RawRecord { payload: None, ..r } } else { r })
                .collect();
            let ours = decoder.decode(&records);
            let theirs = reference.decode(&records);
            let text: Vec<String> = poll.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
            assert_eq!(ours.batch, theirs.batch, "{text:#?}");
            assert_eq!(ours.rows_from, theirs.rows_from, "{text:#?}");
            let letters = |d: &Decoded| d.dead_letters.iter().map(|l| (l.offset, l.reason.clone())).collect::<Vec<_>>();
            assert_eq!(letters(&ours), letters(&theirs), "{text:#?}");
            for p in &poll {
                tried += 1;
                direct += usize::from(columns.rows(1, p.len()).push(p));
            }
        }
        // The generator is not all noise: a good share of the records takes the one scan.
        assert!(direct * 5 > tried, "{direct} of {tried} records in one scan");
    }
}

#[cfg(test)]
mod unicode {
    use super::*;
    use arrow::array::{Array, AsArray, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    /// Characters past U+1FFFF escaped as surrogate pairs land as themselves, in flat tables
    /// (one scan) and nested ones (Arrow's decoder, which on its own reads them wrong).
    #[test]
    fn escaped_characters_past_the_first_two_planes_land_as_themselves() {
        let text = Field::new("s", DataType::Utf8, true);
        let list = Field::new("l", DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))), true);
        let payload = br#"{"s": "\ud84d\ude00 \uD83D\uDE00 \udbff\udfff \\ud840\\udc00"}"#;
        let nested = br#"{"s": "\ud84d\ude00 \uD83D\uDE00 \udbff\udfff \\ud840\\udc00", "l": ["\ud840\udc00"]}"#;
        let want = "\u{23600} \u{1F600} \u{10FFFF} \\ud840\\udc00";
        let raw = |p: &'static [u8]| {
            [RawRecord { topic: "t", partition: 0, offset: 0, timestamp_ms: None, key: None, payload: Some(p) }]
        };
        for (schema, payload) in [(vec![text.clone()], &payload[..]), (vec![text, list], &nested[..])] {
            let decoder = PayloadDecoder::new(Arc::new(Schema::new(schema)), 1 << 20);
            for d in [decoder.clone(), decoder.reference()] {
                let out = d.decode(&raw(payload));
                let batch = out.batch.unwrap_or_else(|| panic!("{:?}", out.dead_letters));
                assert_eq!(batch.column(0).as_any().downcast_ref::<StringArray>().unwrap().value(0), want);
                if let Some(l) = batch.column_by_name("l") {
                    let element = l.as_list::<i32>().value(0);
                    assert_eq!(element.as_string::<i32>().value(0), "\u{20000}");
                    assert_eq!(element.len(), 1);
                }
            }
        }
    }
}
