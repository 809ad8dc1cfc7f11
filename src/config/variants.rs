//! Which record fields land as `variant` columns (a pipeline's or a served table's
//! `variant_columns` and `record_variant`), checked once.

use crate::delta::schema::{DataType, StructField, StructType};

/// Fields that land as variant columns whatever their shape, or the column the whole record
/// lands in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variants {
    columns: Vec<String>,
    record: Option<String>,
}

impl Variants {
    /// The settings `variant_columns` and `record_variant`.
    ///
    /// # Errors
    /// Both given, an empty name, or a name given twice, in one line.
    pub fn new(columns: &[String], record: Option<&str>) -> Result<Self, String> {
        if record.is_some() && !columns.is_empty() {
            return Err("record_variant and variant_columns exclude each other: the whole record is one column".into());
        }
        if columns.iter().any(String::is_empty) {
            return Err("variant_columns: a column name is empty".into());
        }
        if record.is_some_and(str::is_empty) {
            return Err("record_variant: the column name is empty".into());
        }
        if let Some((i, c)) = columns.iter().enumerate().find(|(i, c)| columns[..*i].contains(c)) {
            return Err(format!("variant_columns: {c:?} is named twice (entries {} and {})", i, i + 1));
        }
        Ok(Variants { columns: columns.to_vec(), record: record.map(String::from) })
    }

    /// The column the whole record lands in (`record_variant`), if set.
    pub fn record(&self) -> Option<&str> {
        self.record.as_deref()
    }

    /// Whether nothing is configured.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty() && self.record.is_none()
    }

    /// An inferred (or registered) schema with the configured fields typed `variant`: the
    /// fields of `variant_columns` it has; with `record_variant`, that one column alone.
    pub fn applied(&self, mut schema: StructType) -> StructType {
        if let Some(record) = &self.record {
            return StructType::new(vec![StructField::new(record, DataType::Variant, true)]);
        }
        for f in &mut schema.fields {
            if self.columns.contains(&f.name) {
                f.data_type = DataType::Variant;
            }
        }
        schema
    }

    /// Refuses a declared schema whose column named here is not a `variant` (a missing column
    /// is added from the records as any new field is).
    ///
    /// # Errors
    /// The column and its type, in one line.
    pub fn check(&self, schema: &StructType) -> Result<(), String> {
        for name in self.columns.iter().chain(&self.record) {
            match schema.field(name) {
                Some(f) if f.data_type != DataType::Variant => {
                    return Err(format!(
                        "column {name:?} is named as a variant column but the schema types it {}",
                        serde_json::to_string(&f.data_type).unwrap_or_default()
                    ))
                }
                None if self.record.as_ref() == Some(name) => {
                    return Err(format!("record_variant: the schema has no column {name:?} (declare it as variant)"))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::schema::PrimitiveType;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn settings_are_checked_and_applied() {
        assert!(Variants::new(&names(&["a"]), Some("r")).unwrap_err().contains("exclude"));
        assert!(Variants::new(&names(&["a", ""]), None).unwrap_err().contains("empty"));
        assert!(Variants::new(&names(&["a", "a"]), None).unwrap_err().contains("twice"));
        assert!(Variants::new(&[], Some("")).unwrap_err().contains("empty"));
        let inferred = StructType::new(vec![
            StructField::new("id", DataType::Primitive(PrimitiveType::Long), true),
            StructField::new("свойства", DataType::Primitive(PrimitiveType::String), true),
        ]);
        let v = Variants::new(&names(&["свойства", "absent"]), None).unwrap();
        let applied = v.applied(inferred.clone());
        assert_eq!(applied.field("свойства").unwrap().data_type, DataType::Variant);
        assert_eq!(applied.field("id").unwrap().data_type, DataType::Primitive(PrimitiveType::Long));
        assert!(v.check(&applied).is_ok());
        assert!(v.check(&inferred).unwrap_err().contains("\"свойства\""));
        let whole = Variants::new(&[], Some("record")).unwrap();
        assert_eq!(whole.applied(inferred.clone()).fields.len(), 1);
        assert!(whole.check(&inferred).unwrap_err().contains("no column"));
        assert!(Variants::default().is_empty() && Variants::default().applied(inferred.clone()) == inferred);
    }
}
