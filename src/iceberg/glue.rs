//! AWS Glue registration of a UniForm table: where it goes (from table properties) and the
//! Glue `TableInput`s (pure; `storage/glue.rs` sends them).
//!
//! Properties, stored in the table's metadata so that every deltabus writer of the table
//! registers alike:
//! - `deltabus.glue.database`: turns registration on (the database is created if missing);
//! - `deltabus.glue.table`: the Iceberg table's name (default: the table directory's name,
//!   lower-cased, characters other than `a-z0-9_` as `_`);
//! - `deltabus.glue.deltaTable`: the name of the Delta registration, for engines that read
//!   Delta through Glue (default `<table>_delta`; `none` registers no Delta table);
//! - `deltabus.glue.region` (default `AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`)
//!   and `deltabus.glue.catalogId` (default: the caller's account).
//!
//! The Iceberg table carries `table_type = ICEBERG` and `metadata_location` (with
//! `previous_metadata_location` after a move), as Iceberg's Glue catalog reads them; the
//! Delta table `table_type = DELTA` and `spark.sql.sources.provider = delta` at the table root.

use std::collections::HashMap;

use serde_json::{json, Value};

/// Where a table is registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GlueTarget {
    pub database: String,
    pub table: String,
    pub delta_table: Option<String>,
    pub region: String,
    pub catalog_id: Option<String>,
}

fn get<'a>(config: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    config.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.trim()).filter(|v| !v.is_empty())
}

/// A Glue name from any text: lower case, `a-z0-9_` kept, anything else `_`.
fn glue_name(s: &str) -> String {
    let n: String = s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    if n.is_empty() {
        "table".into()
    } else {
        n
    }
}

/// The registration a table's properties ask for (`None`: not registered). `region_env` is
/// the region the environment names, if any.
pub(crate) fn glue_target(
    config: &HashMap<String, String>,
    table_url: &str,
    region_env: Option<&str>,
) -> Option<GlueTarget> {
    let database = get(config, "deltabus.glue.database")?.to_string();
    let dir = table_url.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    let dir = percent_encoding::percent_decode_str(dir).decode_utf8_lossy();
    let table = get(config, "deltabus.glue.table").map_or_else(|| glue_name(&dir), str::to_string);
    let delta_table = match get(config, "deltabus.glue.deltaTable") {
        Some(n) if n.eq_ignore_ascii_case("none") => None,
        Some(n) => Some(n.to_string()),
        None => Some(format!("{table}_delta")),
    };
    let region = get(config, "deltabus.glue.region").or(region_env).unwrap_or("us-east-1").to_string();
    Some(GlueTarget {
        database,
        table,
        delta_table,
        region,
        catalog_id: get(config, "deltabus.glue.catalogId").map(str::to_string),
    })
}

/// A Hive type name of an Iceberg type (Glue's column types).
fn hive_type(t: &Value) -> String {
    match t {
        Value::String(s) => match s.as_str() {
            "int" => "int".into(),
            "long" => "bigint".into(),
            "timestamptz" | "timestamp" => "timestamp".into(),
            other => other.replace(", ", ","),
        },
        Value::Object(_) if t["type"] == "struct" => {
            let fields: Vec<String> = t["fields"]
                .as_array()
                .map(|f| {
                    f.iter()
                        .map(|f| format!("{}:{}", f["name"].as_str().unwrap_or(""), hive_type(&f["type"])))
                        .collect()
                })
                .unwrap_or_default();
            format!("struct<{}>", fields.join(","))
        }
        _ => "string".into(),
    }
}

/// Glue columns of an Iceberg schema (informational: readers take the schema from the
/// metadata file or the Delta log).
fn columns(schema: &Value) -> Vec<Value> {
    schema["fields"]
        .as_array()
        .map(|f| f.iter().map(|f| json!({"Name": f["name"], "Type": hive_type(&f["type"])})).collect())
        .unwrap_or_default()
}

/// The `TableInput` of the Iceberg registration.
pub(crate) fn iceberg_table_input(
    name: &str,
    location: &str,
    metadata_location: &str,
    previous: Option<&str>,
    schema: &Value,
) -> Value {
    let mut parameters = json!({"table_type": "ICEBERG", "metadata_location": metadata_location, "EXTERNAL": "TRUE"});
    if let Some(p) = previous {
        parameters["previous_metadata_location"] = json!(p);
    }
    json!({
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": parameters,
        "StorageDescriptor": {"Location": location, "Columns": columns(schema)},
    })
}

/// The `TableInput` of the Delta registration.
pub(crate) fn delta_table_input(name: &str, location: &str, schema: &Value) -> Value {
    json!({
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": "DELTA", "spark.sql.sources.provider": "delta", "EXTERNAL": "TRUE"},
        "StorageDescriptor": {"Location": location, "Columns": columns(schema)},
    })
}

/// `N` of a metadata location ending in `v<N>.metadata.json`.
pub(crate) fn metadata_number(location: &str) -> Option<u64> {
    location.rsplit('/').next()?.strip_prefix('v')?.strip_suffix(".metadata.json")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn targets_from_properties() {
        assert_eq!(glue_target(&cfg(&[]), "s3://b/t", None), None);
        let t =
            glue_target(&cfg(&[("deltabus.glue.database", "lake")]), "s3://b/x/Événements-2026/", Some("eu-west-1"))
                .unwrap();
        assert_eq!(t.table, "_v_nements_2026");
        assert_eq!(t.delta_table.as_deref(), Some("_v_nements_2026_delta"));
        assert_eq!((t.region.as_str(), t.catalog_id), ("eu-west-1", None));
        let t = glue_target(
            &cfg(&[
                ("deltabus.glue.database", "lake"),
                ("deltabus.glue.table", "orders"),
                ("deltabus.glue.deltaTable", "none"),
                ("deltabus.glue.region", "us-west-2"),
                ("deltabus.glue.catalogId", "123"),
            ]),
            "file:///t",
            Some("eu-west-1"),
        )
        .unwrap();
        assert_eq!((t.table.as_str(), t.delta_table, t.region.as_str()), ("orders", None, "us-west-2"));
        assert_eq!(t.catalog_id.as_deref(), Some("123"));
    }

    #[test]
    fn table_inputs_and_metadata_numbers() {
        let schema = json!({"fields": [
            {"id": 1, "name": "id", "type": "long"},
            {"id": 2, "name": "d", "type": "decimal(10, 2)"},
            {"id": 3, "name": "s", "type": {"type": "struct", "fields": [{"id": 4, "name": "t", "type": "timestamptz"}]}},
        ]});
        let i = iceberg_table_input(
            "t",
            "s3://b/t",
            "s3://b/t/metadata/v2.metadata.json",
            Some("s3://b/t/metadata/v1.metadata.json"),
            &schema,
        );
        assert_eq!(i["Parameters"]["table_type"], "ICEBERG");
        assert_eq!(i["Parameters"]["previous_metadata_location"], "s3://b/t/metadata/v1.metadata.json");
        let cols = &i["StorageDescriptor"]["Columns"];
        assert_eq!(cols[0], json!({"Name": "id", "Type": "bigint"}));
        assert_eq!(cols[1]["Type"], "decimal(10,2)");
        assert_eq!(cols[2]["Type"], "struct<t:timestamp>");
        assert_eq!(delta_table_input("t_delta", "s3://b/t", &schema)["Parameters"]["table_type"], "DELTA");
        assert_eq!(metadata_number("s3://b/t/metadata/v12.metadata.json"), Some(12));
        assert_eq!(metadata_number("s3://b/t/metadata/x.json"), None);
    }
}
