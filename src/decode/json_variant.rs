//! [sync] JSON records into tables with variant columns: each variant column's field is taken
//! out of the record and encoded whole ([`super::variant`]); the rest of the record decodes
//! against the other columns as any record does, and the variant columns are put back in
//! their places. With a record column, the whole payload is that column's value.
//!
//! A variant field that is absent or JSON `null` is a null column value; a field whose value
//! the encoding refuses makes the record a dead letter naming the field.

use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryBuilder, RecordBatch, StructArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use serde_json::value::RawValue;

use crate::common::record::{DeadLetter, RawRecord};
use crate::decode::json::{Decoded, PayloadDecoder};

/// How a table's variant columns are filled from a record.
#[derive(Debug, Clone)]
pub(crate) struct VariantSplit {
    /// The variant columns: their index in the table's Arrow schema, and their name.
    columns: Vec<(usize, String)>,
    /// Per variant column, whether it is not nullable.
    required: Vec<bool>,
    /// The column the whole payload lands in (one of `columns`), if any.
    whole: Option<usize>,
    /// The decoder of the other columns (`None` when there are none).
    rest: Option<Box<PayloadDecoder>>,
}

/// One record's variant values, per variant column: `metadata` and `value`, `None` for null.
type RowValues = Vec<Option<(Vec<u8>, Vec<u8>)>>;

/// The top-level variant columns of an Arrow schema (index, name).
pub(crate) fn variant_columns(schema: &Schema) -> Vec<(usize, String)> {
    let is_variant = |t: &DataType| matches!(t, DataType::Struct(f) if crate::delta::arrow_schema::is_variant(f));
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| is_variant(f.data_type()))
        .map(|(i, f)| (i, f.name().clone()))
        .collect()
}

impl VariantSplit {
    /// The split of `schema` (which has variant columns), with `whole` naming the column that
    /// takes the whole payload, if one does.
    pub(crate) fn plan(schema: &SchemaRef, whole: Option<&str>, max_record_bytes: usize) -> Option<Self> {
        let columns = variant_columns(schema);
        if columns.is_empty() {
            return None;
        }
        let whole = whole.and_then(|w| columns.iter().position(|(_, n)| n == w));
        let others: Vec<_> = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(i, _)| !columns.iter().any(|(j, _)| j == i))
            .map(|(_, f)| f.clone())
            .collect();
        let rest = (!others.is_empty())
            .then(|| Box::new(PayloadDecoder::new(Arc::new(Schema::new(others)), max_record_bytes)));
        let required = columns.iter().map(|(i, _)| !schema.field(*i).is_nullable()).collect();
        Some(VariantSplit { columns, required, whole, rest })
    }

    /// Decodes `records` (each already framed: `payloads[i]` is record i's payload, or why it
    /// is a dead letter) into rows of `schema`.
    pub(crate) fn decode(
        &self,
        schema: &SchemaRef,
        records: &[RawRecord<'_>],
        payloads: Vec<Result<&[u8], String>>,
    ) -> Decoded {
        let mut dead: Vec<(usize, DeadLetter)> = Vec::new();
        // Per kept record: its index, its variant values, and the rest of its text.
        let mut kept = Vec::with_capacity(records.len());
        let mut values: Vec<RowValues> = Vec::with_capacity(records.len());
        let mut rests: Vec<Vec<u8>> = Vec::with_capacity(records.len());
        for (i, payload) in payloads.into_iter().enumerate() {
            match payload.and_then(|p| self.split(p)) {
                Ok((v, rest)) => {
                    kept.push(i);
                    values.push(v);
                    rests.push(rest);
                }
                Err(reason) => dead.push((i, DeadLetter::of(&records[i], reason))),
            }
        }
        // The other columns, decoded as any record's: row j of theirs is kept[j].
        let (batch, rows) = match &self.rest {
            None => (None, (0..kept.len()).collect::<Vec<_>>()),
            Some(rest) => {
                let inner: Vec<RawRecord<'_>> = rests
                    .iter()
                    .enumerate()
                    .map(|(j, p)| RawRecord { offset: j as i64, payload: Some(p), ..records[kept[j]] })
                    .collect();
                let out = rest.decode(&inner);
                for letter in out.dead_letters {
                    let i = kept[letter.offset as usize];
                    dead.push((i, DeadLetter::of(&records[i], letter.reason)));
                }
                (out.batch, out.rows_from)
            }
        };
        dead.sort_by_key(|(i, _)| *i);
        let dead_letters = dead.into_iter().map(|(_, d)| d).collect();
        let rows_from: Vec<usize> = rows.iter().map(|j| kept[*j]).collect();
        if rows.is_empty() {
            return Decoded { batch: None, rows_from, dead_letters, deletes: Vec::new() };
        }
        match self.assemble(schema, batch, &rows, &mut values) {
            Ok(batch) => Decoded { batch: Some(batch), rows_from, dead_letters, deletes: Vec::new() },
            Err(e) => {
                let letters = rows_from.iter().map(|i| DeadLetter::of(&records[*i], e.clone()));
                let mut all: Vec<DeadLetter> = dead_letters;
                all.extend(letters);
                all.sort_by_key(|d| d.offset);
                Decoded { batch: None, rows_from: Vec::new(), dead_letters: all, deletes: Vec::new() }
            }
        }
    }

    /// A payload's variant values (per column, `None` for null) and the rest of its record.
    fn split(&self, payload: &[u8]) -> Result<(RowValues, Vec<u8>), String> {
        let mut values = vec![None; self.columns.len()];
        if let Some(w) = self.whole {
            values[w] = Some(super::variant::encode(payload)?);
            return Ok((values, b"{}".to_vec()));
        }
        let text = std::str::from_utf8(payload).map_err(|_| "payload is not valid UTF-8".to_string())?;
        let members: Members<'_> = serde_json::from_str(text).map_err(|e| {
            let text = e.to_string();
            format!("not a JSON object: {}", text.split(" at line ").next().unwrap_or(&text))
        })?;
        let mut rest = Vec::with_capacity(payload.len());
        rest.push(b'{');
        for (key, raw) in members.0 {
            match self.columns.iter().position(|(_, n)| *n == key) {
                Some(c) if raw.get() == "null" => values[c] = None,
                Some(c) => {
                    let v = super::variant::encode(raw.get().as_bytes()).map_err(|e| format!("field {key:?}: {e}"))?;
                    values[c] = Some(v);
                }
                None => {
                    if rest.len() > 1 {
                        rest.push(b',');
                    }
                    serde_json::to_writer(&mut rest, &key).map_err(|e| e.to_string())?;
                    rest.push(b':');
                    rest.extend_from_slice(raw.get().as_bytes());
                }
            }
        }
        rest.push(b'}');
        if let Some(c) = (0..values.len()).find(|c| self.required[*c] && values[*c].is_none()) {
            return Err(format!("field {:?} is missing or null, and the column is not nullable", self.columns[c].1));
        }
        Ok((values, rest))
    }

    /// The table's rows: the other columns' `batch` (its row j is kept record `rows[j]`) with
    /// the variant columns put in their places.
    fn assemble(
        &self,
        schema: &SchemaRef,
        batch: Option<RecordBatch>,
        rows: &[usize],
        values: &mut [RowValues],
    ) -> Result<RecordBatch, String> {
        let mut others = batch.map(|b| b.columns().to_vec()).unwrap_or_default().into_iter();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for (i, field) in schema.fields().iter().enumerate() {
            match self.columns.iter().position(|(j, _)| *j == i) {
                Some(c) => {
                    columns.push(variant_array(field.data_type(), rows.iter().map(|j| values[*j][c].take()))?);
                }
                None => columns.push(others.next().ok_or("the other columns lost a column")?),
            }
        }
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows.len()));
        RecordBatch::try_new_with_options(schema.clone(), columns, &options).map_err(|e| e.to_string())
    }
}

/// A variant column (`metadata` and `value` binaries) of the values, `None` a null row.
fn variant_array(t: &DataType, values: impl Iterator<Item = Option<(Vec<u8>, Vec<u8>)>>) -> Result<ArrayRef, String> {
    let DataType::Struct(fields) = t else { return Err("a variant column is not a struct".into()) };
    let (mut m, mut v) = (BinaryBuilder::new(), BinaryBuilder::new());
    let mut valid = Vec::new();
    for value in values {
        valid.push(value.is_some());
        let (meta, val) = value.unwrap_or_default();
        // A null row still holds valid binaries, so the children never hold nulls.
        m.append_value(if meta.is_empty() { &EMPTY_METADATA[..] } else { &meta });
        v.append_value(if val.is_empty() { &[0u8][..] } else { &val });
    }
    let nulls = NullBuffer::from(valid);
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    let array = StructArray::try_new(fields.clone(), vec![Arc::new(m.finish()), Arc::new(v.finish())], nulls)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(array))
}

/// The metadata of a variant without keys (version 1, no strings).
const EMPTY_METADATA: [u8; 3] = [1, 0, 0];

/// A JSON object's members, in order, values unparsed.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Members<'a>, M::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

#[cfg(test)]
#[path = "json_variant_tests.rs"]
mod tests;
