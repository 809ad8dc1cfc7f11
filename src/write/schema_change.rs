//! [sync] The one schema-change rule of writers that add rows: a table's schema changes only in
//! the commit of the rows that need it, never on its own and never while decoding.
//!
//! Decoders propose: rows are decoded against the table's schema, or against a proposal (the
//! table's schema grown by the new fields, or a whole schema for a table that does not exist
//! yet). The commit that lands the rows decides against the table as it is at that moment:
//! every proposal its rows were decoded in is merged onto the table's schema (additive only:
//! new nullable fields, never a type change), the merge goes into the same commit (a `metaData`
//! action, or `protocol` and `metaData` creating the table), and the rows are projected onto
//! the merged schema (columns they lack are null). A race with another writer that changed the
//! schema meanwhile is decided again from the table when the commit is retried, so a proposal
//! never overwrites another writer's columns.
//!
//! Kafka ingest's flush, push and Kafka-protocol commit groups and the coordinated committer's
//! workers all plan their commits with it.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;

use crate::decode::projection::{project, Mismatch};
use crate::delta::actions::Action;
use crate::delta::arrow_schema::arrow_schema_strict;
use crate::delta::create::{keyed_table_properties, merge_schema, new_table};
use crate::delta::schema::StructType;
use crate::delta::snapshot::Snapshot;
use crate::delta::type_widening;
use crate::error::{Error, Result};

/// How a writer creates its table when the rows' commit finds none.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct NewTable {
    pub partition_by: Vec<String>,
    pub properties: HashMap<String, String>,
    /// Keyed tables get the properties keyed writes need (deletion vectors).
    pub keyed: bool,
    /// Clustering columns (logical names; empty: not clustered).
    pub cluster_by: Vec<String>,
}

impl NewTable {
    /// A Kafka pipeline's table: its `partition_by`, `properties` and keys.
    pub(crate) fn of_pipeline(cfg: &crate::config::KafkaPipeline) -> NewTable {
        NewTable {
            partition_by: cfg.partition_by.clone(),
            properties: cfg.properties.clone(),
            keyed: cfg.upsert.is_some(),
            cluster_by: cfg.cluster_by.clone(),
        }
    }
}

/// What a commit of rows does to the table's schema.
#[derive(Debug, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct SchemaChange {
    /// `protocol` and `metaData` actions, first in the commit (empty: no change).
    pub actions: Vec<Action>,
    /// The table as the commit makes it (`None`: the snapshot as it is).
    pub changed: Option<Snapshot>,
    /// The commit creates the table.
    pub creating: bool,
}

impl SchemaChange {
    /// The table the rows are written against: the changed one, or `snapshot`.
    ///
    /// # Errors
    /// [`Error::Internal`] when there is neither.
    pub(crate) fn table<'a>(&'a self, snapshot: Option<&'a Snapshot>) -> Result<&'a Snapshot> {
        self.changed
            .as_ref()
            .or(snapshot)
            .ok_or_else(|| Error::Internal("rows for a table that does not exist plan its creation".into()))
    }
}

/// `target` grown by the fields of `incoming` it lacks, and (with `widen`: a table with type
/// widening on) its fields widened to `incoming`'s wider types (`Ok(None)`: neither). Other
/// type differences are left: rows are projected onto the target afterwards ([`onto`]), which
/// takes exact conversions (an `int` into a `long`) and refuses the rest.
///
/// # Errors
/// A one-line reason when a new field cannot be added (a name the table cannot take).
pub(crate) fn grown(
    target: &StructType,
    incoming: &StructType,
    widen: bool,
) -> std::result::Result<Option<StructType>, String> {
    if target == incoming {
        return Ok(None);
    }
    let merged = merge_schema(target, incoming).map_err(|e| format!("the records do not fit the table schema: {e}"))?;
    let mut out = merged.clone().unwrap_or_else(|| target.clone());
    let widened = widen && type_widening::widen_to(&mut out, incoming);
    Ok((merged.is_some() || widened).then_some(out))
}

/// The schema a commit writes: the table's (or, with no table, the first proposal) grown by
/// every proposal the rows were decoded in.
///
/// # Errors
/// A one-line reason when a proposal does not fit the table as it now is.
pub(crate) fn target<'a>(
    snapshot: Option<&Snapshot>,
    mut proposals: impl Iterator<Item = &'a StructType>,
) -> std::result::Result<Option<StructType>, String> {
    let widen = snapshot.is_some_and(|s| type_widening::enabled(&s.metadata.configuration));
    let mut target = match snapshot {
        Some(s) => s.schema.clone(),
        None => match proposals.next() {
            Some(p) => p.clone(),
            None => return Ok(None),
        },
    };
    for p in proposals {
        if let Some(g) = grown(&target, p, widen)? {
            target = g;
        }
    }
    Ok(Some(target))
}

/// The actions that take the table from `snapshot` to `target`, and the table they make.
///
/// # Errors
/// Protocol errors creating the table (properties, partition columns).
pub(crate) fn change(snapshot: Option<&Snapshot>, target: StructType, new: &NewTable) -> Result<SchemaChange> {
    match snapshot {
        None => {
            let mut properties = new.properties.clone();
            if new.keyed {
                keyed_table_properties(&mut properties)?;
            }
            let (protocol, metadata) = new_table(target, &new.partition_by, &properties)?;
            let (actions, created) = crate::delta::clustering::created(protocol, metadata, &new.cluster_by)?;
            Ok(SchemaChange { actions, changed: Some(created), creating: true })
        }
        Some(s) if target != s.schema => {
            let mut target = target;
            let widened = type_widening::apply(&s.protocol, &s.metadata, &mut target)?;
            if widened.is_some() && !type_widening::enabled(&s.metadata.configuration) {
                return Err(Error::InvalidArgument(format!(
                    "the rows need a column widened but the table does not allow it (set {}=true)",
                    type_widening::PROPERTY
                )));
            }
            let needs = crate::delta::features::upgraded_for(&s.protocol, &target);
            let metadata = crate::delta::create::evolved_metadata(&s.metadata, s.column_mapping(), target);
            let mut actions = Vec::new();
            let widened = widened.map_or_else(|| s.protocol.clone(), |(p, _)| p);
            // New columns may need a feature of their type (variant, timestamp_ntz).
            let protocol = match needs {
                Some(p) => crate::delta::features::with_features(
                    &widened,
                    p.reader_features.iter().flatten().map(String::as_str).collect::<Vec<_>>().as_slice(),
                    &[],
                ),
                None => widened,
            };
            if protocol != s.protocol {
                actions.push(Action::Protocol(protocol.clone()));
            }
            actions.push(Action::Metadata(metadata.clone()));
            let changed = s.with_table(protocol, metadata)?;
            Ok(SchemaChange { actions, changed: Some(changed), creating: false })
        }
        Some(_) => Ok(SchemaChange::default()),
    }
}

/// `batches` in `schema`'s columns (batches already in them are kept as they are).
///
/// # Errors
/// A [`Mismatch`] naming the fields of a batch that does not fit.
pub(crate) fn onto(batches: &[RecordBatch], schema: &StructType) -> std::result::Result<Vec<RecordBatch>, Mismatch> {
    let arrow = Arc::new(arrow_schema_strict(schema));
    batches.iter().map(|b| if b.schema() == arrow { Ok(b.clone()) } else { project(b, &arrow) }).collect()
}

/// A [`Mismatch`] in one line.
pub(crate) fn mismatch_reason(m: Mismatch) -> String {
    match m {
        Mismatch::Extra(fields) => format!("columns not in the table schema: {}", fields.join(", ")),
        Mismatch::Refused(why) => why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::schema::{DataType, PrimitiveType, StructField};

    fn schema(fields: &[(&str, DataType)]) -> StructType {
        StructType::new(fields.iter().map(|(n, t)| StructField::new(*n, t.clone(), true)).collect())
    }

    #[test]
    fn proposals_grow_the_table_and_a_new_table_starts_from_the_first() {
        let a = schema(&[("id", DataType::Primitive(PrimitiveType::Long))]);
        let ab = schema(&[
            ("id", DataType::Primitive(PrimitiveType::Long)),
            ("b", DataType::Primitive(PrimitiveType::String)),
        ]);
        let ac = schema(&[
            ("id", DataType::Primitive(PrimitiveType::Long)),
            ("c", DataType::Primitive(PrimitiveType::Boolean)),
        ]);
        let t = target(None, [&ab, &ac].into_iter()).unwrap().unwrap();
        let names: Vec<&str> = t.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["id", "b", "c"]);
        assert_eq!(grown(&ab, &a, false).unwrap(), None, "a narrower proposal changes nothing");
        assert!(target(None, std::iter::empty()).unwrap().is_none());
    }

    #[test]
    fn a_missing_table_is_created_and_a_grown_one_changes_in_the_same_commit() {
        let a = schema(&[("id", DataType::Primitive(PrimitiveType::Long))]);
        let new = NewTable::default();
        let created = change(None, a.clone(), &new).unwrap();
        assert!(created.creating);
        assert!(matches!(created.actions[..], [Action::Protocol(_), Action::Metadata(_)]));
        let table = created.changed.unwrap();
        assert!(change(Some(&table), a.clone(), &new).unwrap().actions.is_empty());
        let ab = schema(&[
            ("id", DataType::Primitive(PrimitiveType::Long)),
            ("b", DataType::Primitive(PrimitiveType::String)),
        ]);
        let evolved = change(Some(&table), ab.clone(), &new).unwrap();
        assert!(!evolved.creating);
        assert!(matches!(evolved.actions[..], [Action::Metadata(_)]));
        assert_eq!(evolved.changed.unwrap().schema, ab);
    }
}
