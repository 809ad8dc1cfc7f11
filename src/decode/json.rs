//! Raw message payloads straight into Arrow: no `serde_json::Value` on the hot path.
//!
//! A batch of payloads is handed to `arrow_json`'s decoder as one buffer against the table
//! schema (strict: unknown fields are errors). Only when that fails are the records decoded
//! one by one, to separate the good ones from the bad; each bad one becomes a
//! [`DeadLetter`] carrying its reason and everything needed to find or replay it, and the rest
//! of the batch proceeds.

use std::borrow::Cow;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

use crate::common::record::{DeadLetter, RawRecord};
use crate::delta::json_values::{RecordRules, Verdict};

/// Decodes JSON payloads against a table schema.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct PayloadDecoder {
    schema: SchemaRef,
    rules: RecordRules,
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
        PayloadDecoder { rules: RecordRules::new(&schema), schema, max_record_bytes }
    }

    /// The Arrow schema rows are decoded into.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Decodes the records; never fails as a whole: bad records become dead letters.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn decode(&self, records: &[RawRecord<'_>]) -> Decoded {
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
        let bytes = r.payload.ok_or("null payload (tombstone)")?;
        if bytes.len() > self.max_record_bytes {
            return Err(format!("payload of {} bytes is over the limit of {}", bytes.len(), self.max_record_bytes));
        }
        if utf8 && std::str::from_utf8(bytes).is_err() {
            return Err("payload is not valid UTF-8".into());
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err("empty payload".into());
        }
        match self.rules.check(bytes)? {
            Verdict::AsIs => Ok(Cow::Borrowed(bytes)),
            Verdict::Rewritten(spelled) => Ok(Cow::Owned(spelled)),
        }
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
}
