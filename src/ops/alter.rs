//! `deltabus alter`: column types widened in place (Spark's `ALTER TABLE ... ALTER COLUMN ...
//! TYPE ...`), and type widening turned on for schema evolution.
//!
//! One commit on the one commit path: the schema with each named column (dotted for nested
//! fields; `element`, `key` and `value` step into arrays and maps) at its new type, the change
//! recorded in `delta.typeChanges`, `delta.enableTypeWidening=true`, and the `typeWidening`
//! feature when the table did not have it. Nothing is rewritten: files written before keep
//! their type and every reader upcasts them. Only the protocol's widenings are taken (and, on a
//! UniForm table, Iceberg's); anything else is refused with the column and the reason. Asking
//! for what the table already has commits nothing.

use serde_json::{json, Value};

use crate::delta::actions::{Action, Metadata};
use crate::delta::schema::{DataType, PrimitiveType, StructType};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::delta::type_widening::{self, PROPERTY};
use crate::error::{Error, Result};
use crate::storage::{commit_exactly_once, Plan, PlanFn, RetryPolicy, Table};

/// One `--widen COLUMN=TYPE`.
#[derive(Debug, Clone)]
pub(crate) struct Widen {
    pub column: String,
    pub to: PrimitiveType,
}

impl std::str::FromStr for Widen {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Widen, String> {
        let (column, ty) = s.rsplit_once('=').ok_or_else(|| format!("{s:?}: expected COLUMN=TYPE"))?;
        let to = PrimitiveType::parse_name(ty.trim()).ok_or_else(|| {
            format!("{s:?}: {:?} is not a Delta primitive type (long, double, decimal(12,2), ...)", ty)
        })?;
        Ok(Widen { column: column.trim().to_string(), to })
    }
}

/// Widens `columns` of `table` (none: only turns type widening on) and reports the version
/// committed (`null`: nothing to change) and the table's type changes.
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown column or a change that is not a widening the
/// table takes; [`Error::NotATable`]; storage errors.
pub(crate) async fn alter(table: &Table, columns: &[Widen]) -> Result<Value> {
    let plan = |s: Option<&Snapshot>| {
        let s = s.ok_or_else(|| Error::NotATable { location: table.url().to_string() })?;
        let mut schema = s.schema.clone();
        for w in columns {
            set_type(&mut schema, w)?;
        }
        let widened = type_widening::apply(&s.protocol, &s.metadata, &mut schema)?;
        let (protocol, configuration) = match widened {
            Some(w) => w,
            None if type_widening::enabled(&s.metadata.configuration) => return Ok(Plan::Nothing(())),
            None => {
                let mut c = s.metadata.configuration.clone();
                c.insert(PROPERTY.into(), "true".into());
                let p = crate::delta::features::with_features(&s.protocol, &[type_widening::FEATURE], &[]);
                (p, c)
            }
        };
        let mut actions = Vec::new();
        if protocol != s.protocol {
            actions.push(Action::Protocol(protocol));
        }
        let metadata = Metadata { schema_string: schema.to_json(), configuration, ..s.metadata.clone() };
        actions.push(Action::Metadata(metadata));
        let txn = match columns.first() {
            Some(w) => Transaction::new(Operation::ChangeColumn, actions)
                .with_parameter("column", w.column.clone())
                .with_parameter("newType", w.to.to_string()),
            None => Transaction::new(Operation::SetTableProperties, actions)
                .with_parameter("properties", json!({ PROPERTY: "true" }).to_string()),
        };
        Ok(Plan::commit(txn, Vec::new(), Vec::new(), ()))
    };
    let version = commit_exactly_once(table, &mut None, &RetryPolicy::default(), &mut PlanFn(plan)).await?.version();
    if let Some(v) = version {
        let names: Vec<String> = columns.iter().map(|w| format!("{}={}", w.column, w.to)).collect();
        tracing::info!(table = %table.url(), version = v, columns = ?names, "column types widened");
    }
    let snapshot = table.snapshot(None).await?;
    Ok(json!({
        "table": table.url().to_string(),
        "version": version,
        "typeWidening": type_widening::enabled(&snapshot.metadata.configuration),
        "typeChanges": type_widening::recorded(&snapshot.schema),
    }))
}

/// Sets the type of the field `w.column` names.
fn set_type(schema: &mut StructType, w: &Widen) -> Result<()> {
    let unknown = || Error::InvalidArgument(format!("--widen {}: no such column", w.column));
    let parts: Vec<&str> = w.column.split('.').collect();
    let field = schema.fields.iter_mut().find(|f| f.name == parts[0]).ok_or_else(unknown)?;
    let mut ty = &mut field.data_type;
    for part in &parts[1..] {
        ty = match ty {
            DataType::Struct(s) => &mut s.fields.iter_mut().find(|f| f.name == *part).ok_or_else(unknown)?.data_type,
            DataType::Array(a) if *part == "element" => &mut a.element_type,
            DataType::Map(m) => match *part {
                "key" => &mut m.key_type,
                "value" => &mut m.value_type,
                _ => return Err(unknown()),
            },
            _ => return Err(unknown()),
        };
    }
    match ty {
        DataType::Primitive(p) if *p == w.to => Ok(()),
        DataType::Primitive(p) if type_widening::allowed(*p, w.to) => {
            *p = w.to;
            Ok(())
        }
        DataType::Primitive(p) => Err(Error::InvalidArgument(format!(
            "--widen {}: {p} cannot be widened to {} (not a widening the protocol allows)",
            w.column, w.to
        ))),
        _ => Err(Error::InvalidArgument(format!("--widen {}: only primitive columns change type", w.column))),
    }
}
