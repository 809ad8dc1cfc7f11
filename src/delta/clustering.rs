//! [sync] Clustered tables (PROTOCOL.md "Clustered Table"): the `clustering` writer feature
//! (with `domainMetadata`) and the `delta.clustering` domain naming the clustering columns as
//! paths of physical names, `{"clusteringColumns":[["device"],["address","city"]]}` (what Spark
//! and delta-kernel write). The flat form of the specification's example, `["device"]`, is
//! read too (each string one top-level name).
//!
//! Rules deltabus keeps (writers of rows and maintenance alike):
//! - a clustered table is not partitioned, and has at most [`MAX_COLUMNS`] clustering columns
//!   (as Spark), each a leaf of a type with min/max statistics (numbers, decimals, dates,
//!   timestamps, strings), nested ones allowed;
//! - every added file carries statistics for every clustering column, whatever
//!   `delta.dataSkippingNumIndexedCols` / `delta.dataSkippingStatsColumns` say (the statistics
//!   collector is given the columns, [`crate::delta::stats`]);
//! - appends leave `clusteringProvider` unset;
//! - changing the columns, or removing them (`NONE`: an empty list, as Spark writes it), is a
//!   new `delta.clustering` domain action; the features stay.

use serde_json::Value;

use super::actions::{Action, DomainMetadata, Metadata, Protocol};
use super::features::{with_features, Feature};
use super::schema::{ColumnMappingMode, DataType, StructType};
use super::snapshot::Snapshot;
use crate::error::{Error, Result};

/// The domain holding a table's clustering columns.
pub(crate) const DOMAIN: &str = "delta.clustering";

/// The writer feature of clustered tables.
pub(crate) const FEATURE: &str = "clustering";

/// Clustering columns a table may have (Spark's limit).
pub(crate) const MAX_COLUMNS: usize = 4;

/// The clustering columns of `snapshot` as paths of physical names (empty: not clustered, or
/// clustered by nothing).
///
/// # Errors
/// [`Error::InvalidLog`] for a domain deltabus cannot read.
pub(crate) fn physical_columns(snapshot: &Snapshot) -> Result<Vec<Vec<String>>> {
    match snapshot.domains().get(DOMAIN) {
        Some(d) if !d.removed => parse(&d.configuration),
        _ => Ok(Vec::new()),
    }
}

/// The clustering columns of `snapshot` by logical (dotted) name.
///
/// # Errors
/// As [`physical_columns`].
pub(crate) fn columns(snapshot: &Snapshot) -> Result<Vec<String>> {
    Ok(logical_names(&snapshot.schema, snapshot.column_mapping(), &physical_columns(snapshot)?))
}

/// A refusal when `names` (the clustering a writer was configured with; empty: any) are not
/// the table's clustering columns: clustering is changed by `deltabus cluster-by`, never
/// implied by a writer's settings.
///
/// # Errors
/// [`Error::InvalidArgument`] naming both; as [`physical_columns`].
pub(crate) fn check_configured(snapshot: &Snapshot, names: &[String], setting: &str) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let have = columns(snapshot)?;
    let same = have.len() == names.len() && have.iter().zip(names).all(|(a, b)| a.eq_ignore_ascii_case(b.trim()));
    if same {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{setting} [{}] cannot apply: the table exists clustered by [{}] (change it with `deltabus cluster-by`)",
        names.join(", "),
        have.join(", ")
    )))
}

/// The clustering columns in a `delta.clustering` configuration.
///
/// # Errors
/// A configuration that is not JSON, or whose `clusteringColumns` is neither a list of lists
/// of names nor a list of names.
pub(crate) fn parse(configuration: &str) -> Result<Vec<Vec<String>>> {
    let bad =
        |why: &str| Error::InvalidLog { path: format!("domain {DOMAIN}"), message: format!("{why}: {configuration}") };
    let v: Value = serde_json::from_str(configuration).map_err(|_| bad("not JSON"))?;
    let Some(list) = v.get("clusteringColumns").and_then(Value::as_array) else {
        return Err(bad("no clusteringColumns list"));
    };
    list.iter()
        .map(|c| match c {
            Value::String(s) => Ok(vec![s.clone()]),
            Value::Array(path) if !path.is_empty() => path
                .iter()
                .map(|p| p.as_str().map(String::from).ok_or_else(|| bad("a column path holds a non-string")))
                .collect(),
            _ => Err(bad("a clustering column is neither a name nor a path of names")),
        })
        .collect()
}

/// The `delta.clustering` domain action naming `columns` (physical paths; empty: clustered by
/// nothing).
pub(crate) fn domain(columns: &[Vec<String>]) -> DomainMetadata {
    DomainMetadata {
        domain: DOMAIN.into(),
        configuration: serde_json::json!({ "clusteringColumns": columns }).to_string(),
        removed: false,
    }
}

/// `p` with the features a clustered table needs.
pub(crate) fn clustered_protocol(p: &Protocol) -> Protocol {
    with_features(p, &[], &[FEATURE, Feature::DomainMetadata.name()])
}

/// Why settings that create a table cannot cluster it by `cluster_by` before there is a schema
/// to check it against (`None`: they may).
pub(crate) fn settings_refusal(partition_by: &[String], cluster_by: &[String]) -> Option<String> {
    if !cluster_by.is_empty() && !partition_by.is_empty() {
        return Some("a clustered table cannot also be partitioned (give cluster_by or partition_by)".into());
    }
    (cluster_by.len() > MAX_COLUMNS).then(|| format!("at most {MAX_COLUMNS} clustering columns (as Spark allows)"))
}

/// A new table (`protocol`, `metadata`) clustered by `names` (none: as it is): the actions of
/// its creation commit (`protocol`, `metaData`, the `delta.clustering` domain) and the table
/// they make.
///
/// # Errors
/// The refusals of [`resolve`]; protocol errors of the new table.
pub(crate) fn created(protocol: Protocol, metadata: Metadata, names: &[String]) -> Result<(Vec<Action>, Snapshot)> {
    if names.is_empty() {
        let snapshot = Snapshot::for_new_table(protocol.clone(), metadata.clone())?;
        return Ok((vec![Action::Protocol(protocol), Action::Metadata(metadata)], snapshot));
    }
    let plain = Snapshot::for_new_table(protocol.clone(), metadata.clone())?;
    let columns = resolve(&plain.schema, plain.column_mapping(), &metadata.partition_columns, names)?;
    let (protocol, domain) = (clustered_protocol(&protocol), domain(&columns));
    let snapshot = Snapshot::for_new_table_with(protocol.clone(), metadata.clone(), vec![domain.clone()])?;
    let actions = vec![Action::Protocol(protocol), Action::Metadata(metadata), Action::DomainMetadata(domain)];
    Ok((actions, snapshot))
}

/// The physical paths of the columns named by `names` (logical, dotted for nested fields),
/// checked against the rules above.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the column or rule: unknown, not a leaf, a type without
/// statistics, repeated, more than [`MAX_COLUMNS`], or a partitioned table.
pub(crate) fn resolve(
    schema: &StructType,
    mode: ColumnMappingMode,
    partition_columns: &[String],
    names: &[String],
) -> Result<Vec<Vec<String>>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    if !partition_columns.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "cluster by [{}]: a clustered table cannot also be partitioned (it is partitioned by [{}])",
            names.join(", "),
            partition_columns.join(", ")
        )));
    }
    if names.len() > MAX_COLUMNS {
        return Err(Error::InvalidArgument(format!(
            "cluster by [{}]: at most {MAX_COLUMNS} clustering columns (as Spark allows)",
            names.join(", ")
        )));
    }
    let mut out: Vec<Vec<String>> = Vec::with_capacity(names.len());
    for name in names {
        let path = physical_path(schema, mode, name)?;
        if out.contains(&path) {
            return Err(Error::InvalidArgument(format!("cluster by: column {name:?} is named twice")));
        }
        out.push(path);
    }
    Ok(out)
}

/// One column's physical path, checked to be a leaf with min/max statistics.
fn physical_path(schema: &StructType, mode: ColumnMappingMode, name: &str) -> Result<Vec<String>> {
    let unknown = || Error::InvalidArgument(format!("cluster by: column {name:?} is not in the schema"));
    let mut fields = schema;
    let mut path = Vec::new();
    let parts: Vec<&str> = name.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let f = fields.fields.iter().find(|f| f.name.eq_ignore_ascii_case(part.trim())).ok_or_else(unknown)?;
        path.push(f.physical_name(mode).to_string());
        match (&f.data_type, i + 1 == parts.len()) {
            (DataType::Struct(s), false) => fields = s,
            (_, false) => return Err(unknown()),
            (t, true) if super::stats::eligible(t) => {}
            (t, true) => {
                return Err(Error::InvalidArgument(format!(
                    "cluster by: column {name:?} is {}, which has no min/max statistics to cluster by (numbers, decimals, dates, timestamps and strings do)",
                    type_name(t)
                )))
            }
        }
    }
    Ok(path)
}

/// `t` as the one-line refusal names it.
fn type_name(t: &DataType) -> String {
    match t {
        DataType::Primitive(p) => p.to_string(),
        DataType::Struct(_) => "a struct".into(),
        DataType::Array(_) => "an array".into(),
        DataType::Map(_) => "a map".into(),
        _ => "variant".into(),
    }
}

/// The logical (dotted) names of the physical paths `columns` in `schema`; a path that names
/// nothing in the schema is shown as it is.
pub(crate) fn logical_names(schema: &StructType, mode: ColumnMappingMode, columns: &[Vec<String>]) -> Vec<String> {
    columns
        .iter()
        .map(|path| {
            let mut fields = schema;
            let mut names = Vec::with_capacity(path.len());
            for p in path {
                match fields.fields.iter().find(|f| f.physical_name(mode) == p.as_str()) {
                    Some(f) => {
                        names.push(f.name.clone());
                        if let DataType::Struct(s) = &f.data_type {
                            fields = s;
                        }
                    }
                    None => return path.join("."),
                }
            }
            names.join(".")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> StructType {
        StructType::parse(
            r#"{"type":"struct","fields":[
                {"name":"device","type":"string","nullable":true,"metadata":{}},
                {"name":"n","type":"long","nullable":true,"metadata":{}},
                {"name":"ok","type":"boolean","nullable":true,"metadata":{}},
                {"name":"address","type":{"type":"struct","fields":[
                    {"name":"city","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn both_forms_of_the_domain_are_read_and_the_nested_one_is_written() {
        let nested = r#"{"clusteringColumns":[["device"],["address","city"]]}"#;
        let cols = parse(nested).unwrap();
        assert_eq!(cols, vec![vec!["device".to_string()], vec!["address".into(), "city".into()]]);
        assert_eq!(parse(r#"{"clusteringColumns":["device","n"]}"#).unwrap(), vec![vec!["device"], vec!["n"]]);
        assert_eq!(serde_json::from_str::<Value>(&domain(&cols).configuration).unwrap(), {
            serde_json::from_str::<Value>(nested).unwrap()
        });
        assert!(parse("{}").is_err() && parse("[").is_err() && parse(r#"{"clusteringColumns":[[1]]}"#).is_err());
    }

    #[test]
    fn columns_resolve_to_physical_paths_under_the_rules() {
        let s = schema();
        let none = ColumnMappingMode::None;
        let names = |n: &[&str]| n.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cols = resolve(&s, none, &[], &names(&["Device", "address.city"])).unwrap();
        assert_eq!(logical_names(&s, none, &cols), ["device", "address.city"]);
        for (bad, why) in [
            (names(&["nope"]), "not in the schema"),
            (names(&["ok"]), "no min/max"),
            (names(&["address"]), "no min/max"),
            (names(&["n", "n"]), "twice"),
            (names(&["n", "device", "address.city", "n", "device"]), "at most 4"),
        ] {
            let e = resolve(&s, none, &[], &bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        let e = resolve(&s, none, &["device".into()], &names(&["n"])).unwrap_err().to_string();
        assert!(e.contains("cannot also be partitioned"), "{e}");
    }
}
