//! The canonical key of a row [sync]: the values of its key columns as a JSON array string
//! (`[42]`, `["eu",7]`), the one spelling that keyed ingestion, mirrors and the key index
//! compare and hash. `None` when a key column is null or missing: such rows are never matched.

use arrow::array::{Array, RecordBatch};
use serde_json::Value;

use crate::delta::arrow_value::value_at;

/// The canonical keys of a batch's rows (`None` where a key column is null).
pub(crate) fn keys_of_batch(batch: &RecordBatch, columns: &[String]) -> Vec<Option<String>> {
    let arrays: Vec<Option<&dyn Array>> =
        columns.iter().map(|c| batch.column_by_name(c).map(|a| a.as_ref() as &dyn Array)).collect();
    if let Some(arrays) = arrays.iter().copied().collect::<Option<Vec<&dyn Array>>>() {
        if let Some(keys) = fast_keys(&arrays, batch.num_rows()) {
            return keys;
        }
    }
    (0..batch.num_rows())
        .map(|i| {
            let values: Option<Vec<Value>> =
                arrays.iter().map(|a| a.map(|a| value_at(a, i)).filter(|v| !v.is_null())).collect();
            values.and_then(|v| serde_json::to_string(&v).ok())
        })
        .collect()
}

/// The canonical keys of integer and string key columns written directly (the same text as
/// the JSON array of their values); `None` for other column types.
fn fast_keys(arrays: &[&dyn Array], rows: usize) -> Option<Vec<Option<String>>> {
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, Int16Type, Int32Type, Int64Type, Int8Type};
    use std::fmt::Write;
    let supported = arrays.iter().all(|a| {
        matches!(a.data_type(), DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Utf8)
    });
    if !supported {
        return None;
    }
    let mut out = Vec::with_capacity(rows);
    for i in 0..rows {
        if arrays.iter().any(|a| a.is_null(i)) {
            out.push(None);
            continue;
        }
        let mut key = String::with_capacity(16);
        key.push('[');
        for (n, a) in arrays.iter().enumerate() {
            if n > 0 {
                key.push(',');
            }
            let _ = match a.data_type() {
                DataType::Int8 => write!(key, "{}", a.as_primitive::<Int8Type>().value(i)),
                DataType::Int16 => write!(key, "{}", a.as_primitive::<Int16Type>().value(i)),
                DataType::Int32 => write!(key, "{}", a.as_primitive::<Int32Type>().value(i)),
                DataType::Int64 => write!(key, "{}", a.as_primitive::<Int64Type>().value(i)),
                _ => {
                    key.push_str(&serde_json::to_string(a.as_string::<i32>().value(i)).ok()?);
                    Ok(())
                }
            };
        }
        key.push(']');
        out.push(Some(key));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_keys_are_the_canonical_json_keys() {
        use arrow::array::{Int32Array, StringArray as S};
        let batch = RecordBatch::try_from_iter([
            ("r", std::sync::Arc::new(S::from(vec![Some("Zü\"rich\\"), Some("🔑"), None, Some("\u{1}")])) as _),
            ("n", std::sync::Arc::new(Int32Array::from(vec![Some(-7), Some(i32::MAX), Some(1), None])) as _),
        ])
        .unwrap();
        let cols = ["r".to_string(), "n".to_string()];
        let slow: Vec<Option<String>> = (0..4)
            .map(|i| {
                let v: Option<Vec<Value>> = ["r", "n"]
                    .iter()
                    .map(|c| Some(value_at(batch.column_by_name(c).unwrap().as_ref(), i)).filter(|v| !v.is_null()))
                    .collect();
                v.map(|v| serde_json::to_string(&v).unwrap())
            })
            .collect();
        assert_eq!(keys_of_batch(&batch, &cols), slow);
        assert_eq!(slow[0].as_deref(), Some(r#"["Zü\"rich\\",-7]"#));
    }
}
