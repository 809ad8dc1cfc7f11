//! The two Avro files of an Iceberg snapshot: manifests (one entry per data file) and the
//! manifest list (one entry per manifest), in the v2 schemas of the Iceberg spec with their
//! field ids, written and read back by `apache-avro`.
//!
//! Field names inside the partition record are made Avro-safe (`_x` and the code point in hex
//! for other characters, as Iceberg's Java writer does); readers resolve fields by id.

use apache_avro::types::Value as A;
use apache_avro::{Schema, Writer};
use serde_json::{json, Value};

pub(crate) use super::avro_read::{read_manifest, read_manifest_list};
use super::files::{partition_bytes, DataFile, PartitionValue};
use super::schema::{PartitionField, PartitionKind};
use crate::error::{Error, Result};

/// A manifest entry's status.
pub(crate) const EXISTING: i32 = 0;
pub(crate) const ADDED: i32 = 1;
pub(crate) const DELETED: i32 = 2;

/// One entry of a manifest.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Entry {
    pub status: i32,
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub file_sequence_number: i64,
    pub file: DataFile,
}

/// One entry of a manifest list.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ManifestFile {
    pub path: String,
    pub length: i64,
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    pub added_files: i32,
    pub existing_files: i32,
    pub deleted_files: i32,
    pub added_rows: i64,
    pub existing_rows: i64,
    pub deleted_rows: i64,
    /// Per partition field, over every entry of the manifest: what readers prune by.
    pub partitions: Vec<FieldSummary>,
}

/// What a manifest list says of one partition field over a manifest's entries. Readers skip
/// a manifest by these (pyiceberg and Java Iceberg read absent bounds as "every value is
/// null"), so they must bound every non-null value: `lower`/`upper` are the least and
/// greatest non-NaN values in Iceberg's single-value form; `contains_nan` is known for float
/// fields only.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FieldSummary {
    pub contains_null: bool,
    pub contains_nan: Option<bool>,
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
}

impl FieldSummary {
    /// The summary of field `i` over `entries` (deleted ones included, as Iceberg's writers
    /// count them: wider bounds never hide a live file).
    pub(crate) fn of(entries: &[Entry], i: usize, kind: PartitionKind) -> FieldSummary {
        let float = matches!(kind, PartitionKind::Float | PartitionKind::Double);
        let mut out = FieldSummary { contains_nan: float.then_some(false), ..FieldSummary::default() };
        let (mut lo, mut hi): (Option<&PartitionValue>, Option<&PartitionValue>) = (None, None);
        for v in entries.iter().map(|e| e.file.partition.get(i).and_then(Option::as_ref)) {
            let Some(v) = v else {
                out.contains_null = true;
                continue;
            };
            if v.is_nan() {
                out.contains_nan = Some(true);
                continue;
            }
            if lo.is_none_or(|l| v.total_cmp(l).is_lt()) {
                lo = Some(v);
            }
            if hi.is_none_or(|h| v.total_cmp(h).is_gt()) {
                hi = Some(v);
            }
        }
        out.lower = lo.map(partition_bytes);
        out.upper = hi.map(partition_bytes);
        out
    }

    /// Whether this summary lacks bounds a reader needs: written without them (by an older
    /// writer) or over files whose every value is null. Such a manifest's summary is made
    /// again from its entries.
    pub(crate) fn lacks_bounds(&self) -> bool {
        self.lower.is_none()
    }
}

impl ManifestFile {
    /// Files that are live in the snapshot that lists it.
    pub(crate) fn live_files(&self) -> i64 {
        i64::from(self.added_files) + i64::from(self.existing_files)
    }
}

fn avro_err(what: &str) -> impl Fn(apache_avro::Error) -> Error + '_ {
    move |e| Error::Internal(format!("iceberg {what}: {e}"))
}

/// An Avro-safe name for a field.
fn avro_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.chars().enumerate() {
        if c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()) {
            out.push(c);
        } else if i == 0 && c.is_ascii_digit() {
            out.push('_');
            out.push(c);
        } else {
            out.push_str(&format!("_x{:X}", c as u32));
        }
    }
    out
}

fn partition_avro_type(kind: PartitionKind) -> Value {
    match kind {
        PartitionKind::Int => json!("int"),
        PartitionKind::Long => json!("long"),
        PartitionKind::Float => json!("float"),
        PartitionKind::Double => json!("double"),
        PartitionKind::Boolean => json!("boolean"),
        PartitionKind::String => json!("string"),
        PartitionKind::Date => json!({"type": "int", "logicalType": "date"}),
        PartitionKind::Timestamp(utc) => {
            json!({"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": utc})
        }
    }
}

fn opt(t: Value) -> Value {
    json!(["null", t])
}

fn kv_array(name: &str, key_id: i32, value_id: i32, value: &str, field_id: i32, field: &str) -> Value {
    json!({"name": field, "type": opt(json!({
        "type": "array", "logicalType": "map",
        "items": {"type": "record", "name": name, "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value, "field-id": value_id},
        ]},
    })), "default": null, "field-id": field_id})
}

fn entry_schema(spec: &[PartitionField]) -> Value {
    let partition_fields: Vec<Value> = spec
        .iter()
        .map(|p| json!({"name": avro_name(&p.name), "type": opt(partition_avro_type(p.kind)), "default": null, "field-id": p.field_id}))
        .collect();
    json!({
        "type": "record", "name": "manifest_entry", "fields": [
            {"name": "status", "type": "int", "field-id": 0},
            {"name": "snapshot_id", "type": opt(json!("long")), "default": null, "field-id": 1},
            {"name": "sequence_number", "type": opt(json!("long")), "default": null, "field-id": 3},
            {"name": "file_sequence_number", "type": opt(json!("long")), "default": null, "field-id": 4},
            {"name": "data_file", "field-id": 2, "type": {"type": "record", "name": "r2", "fields": [
                {"name": "content", "type": "int", "field-id": 134},
                {"name": "file_path", "type": "string", "field-id": 100},
                {"name": "file_format", "type": "string", "field-id": 101},
                {"name": "partition", "field-id": 102, "type": {"type": "record", "name": "r102", "fields": partition_fields}},
                {"name": "record_count", "type": "long", "field-id": 103},
                {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
                kv_array("k117_v118", 117, 118, "long", 108, "column_sizes"),
                kv_array("k119_v120", 119, 120, "long", 109, "value_counts"),
                kv_array("k121_v122", 121, 122, "long", 110, "null_value_counts"),
                kv_array("k138_v139", 138, 139, "long", 137, "nan_value_counts"),
                kv_array("k126_v127", 126, 127, "bytes", 125, "lower_bounds"),
                kv_array("k129_v130", 129, 130, "bytes", 128, "upper_bounds"),
                {"name": "key_metadata", "type": opt(json!("bytes")), "default": null, "field-id": 131},
                {"name": "split_offsets", "type": opt(json!({"type": "array", "items": "long", "element-id": 133})), "default": null, "field-id": 132},
                {"name": "equality_ids", "type": opt(json!({"type": "array", "items": "int", "element-id": 136})), "default": null, "field-id": 135},
                {"name": "sort_order_id", "type": opt(json!("int")), "default": null, "field-id": 140},
            ]}},
        ],
    })
}

fn list_schema() -> Value {
    json!({
        "type": "record", "name": "manifest_file", "fields": [
            {"name": "manifest_path", "type": "string", "field-id": 500},
            {"name": "manifest_length", "type": "long", "field-id": 501},
            {"name": "partition_spec_id", "type": "int", "field-id": 502},
            {"name": "content", "type": "int", "field-id": 517},
            {"name": "sequence_number", "type": "long", "field-id": 515},
            {"name": "min_sequence_number", "type": "long", "field-id": 516},
            {"name": "added_snapshot_id", "type": "long", "field-id": 503},
            {"name": "added_files_count", "type": "int", "field-id": 504},
            {"name": "existing_files_count", "type": "int", "field-id": 505},
            {"name": "deleted_files_count", "type": "int", "field-id": 506},
            {"name": "added_rows_count", "type": "long", "field-id": 512},
            {"name": "existing_rows_count", "type": "long", "field-id": 513},
            {"name": "deleted_rows_count", "type": "long", "field-id": 514},
            {"name": "partitions", "type": opt(json!({"type": "array", "element-id": 508, "items": {
                "type": "record", "name": "r508", "fields": [
                    {"name": "contains_null", "type": "boolean", "field-id": 509},
                    {"name": "contains_nan", "type": opt(json!("boolean")), "default": null, "field-id": 518},
                    {"name": "lower_bound", "type": opt(json!("bytes")), "default": null, "field-id": 510},
                    {"name": "upper_bound", "type": opt(json!("bytes")), "default": null, "field-id": 511},
                ]}})), "default": null, "field-id": 507},
            {"name": "key_metadata", "type": opt(json!("bytes")), "default": null, "field-id": 519},
        ],
    })
}

fn some(v: A) -> A {
    A::Union(1, Box::new(v))
}
fn none() -> A {
    A::Union(0, Box::new(A::Null))
}
fn rec(fields: Vec<(&str, A)>) -> A {
    A::Record(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn kv(pairs: &[(i32, i64)]) -> A {
    some(A::Array(pairs.iter().map(|(k, v)| rec(vec![("key", A::Int(*k)), ("value", A::Long(*v))])).collect()))
}
fn kv_bytes(pairs: &[(i32, Vec<u8>)]) -> A {
    some(A::Array(pairs.iter().map(|(k, v)| rec(vec![("key", A::Int(*k)), ("value", A::Bytes(v.clone()))])).collect()))
}

fn partition_value(v: &Option<PartitionValue>) -> A {
    match v {
        None => none(),
        Some(v) => some(match v {
            PartitionValue::Int(i) => A::Int(*i),
            PartitionValue::Long(i) => A::Long(*i),
            PartitionValue::Float(f) => A::Float(*f),
            PartitionValue::Double(f) => A::Double(*f),
            PartitionValue::Boolean(b) => A::Boolean(*b),
            PartitionValue::String(s) => A::String(s.clone()),
            PartitionValue::Date(d) => A::Date(*d),
            PartitionValue::Micros(t) => A::TimestampMicros(*t),
        }),
    }
}

/// The Avro bytes of a manifest.
///
/// # Errors
/// [`Error::Internal`] when the encoder refuses a value (a bug here, not bad input).
pub(crate) fn manifest_bytes(
    entries: &[Entry],
    iceberg_schema: &Value,
    spec: &[PartitionField],
    spec_json: &Value,
) -> Result<Vec<u8>> {
    let schema = Schema::parse(&entry_schema(spec)).map_err(avro_err("manifest schema"))?;
    let mut w = Writer::new(&schema, Vec::new());
    let meta = [
        ("schema", iceberg_schema.to_string()),
        ("schema-id", iceberg_schema["schema-id"].to_string()),
        ("partition-spec", spec_json["fields"].to_string()),
        ("partition-spec-id", "0".to_string()),
        ("format-version", "2".to_string()),
        ("content", "data".to_string()),
    ];
    for (k, v) in meta {
        w.add_user_metadata(k.to_string(), v).map_err(avro_err("manifest metadata"))?;
    }
    for e in entries {
        let f = &e.file;
        let partition =
            A::Record(spec.iter().zip(&f.partition).map(|(p, v)| (avro_name(&p.name), partition_value(v))).collect());
        let data_file = rec(vec![
            ("content", A::Int(0)),
            ("file_path", A::String(f.path.clone())),
            ("file_format", A::String("PARQUET".into())),
            ("partition", partition),
            ("record_count", A::Long(f.record_count)),
            ("file_size_in_bytes", A::Long(f.size)),
            ("column_sizes", none()),
            ("value_counts", kv(&f.value_counts)),
            ("null_value_counts", kv(&f.null_counts)),
            ("nan_value_counts", none()),
            ("lower_bounds", kv_bytes(&f.lower)),
            ("upper_bounds", kv_bytes(&f.upper)),
            ("key_metadata", none()),
            ("split_offsets", none()),
            ("equality_ids", none()),
            ("sort_order_id", none()),
        ]);
        w.append(rec(vec![
            ("status", A::Int(e.status)),
            ("snapshot_id", some(A::Long(e.snapshot_id))),
            ("sequence_number", some(A::Long(e.sequence_number))),
            ("file_sequence_number", some(A::Long(e.file_sequence_number))),
            ("data_file", data_file),
        ]))
        .map_err(avro_err("manifest entry"))?;
    }
    w.into_inner().map_err(avro_err("manifest"))
}

/// The Avro bytes of a manifest list.
///
/// # Errors
/// As [`manifest_bytes`].
pub(crate) fn manifest_list_bytes(
    manifests: &[ManifestFile],
    snapshot_id: i64,
    parent: Option<i64>,
    sequence_number: i64,
) -> Result<Vec<u8>> {
    let schema = Schema::parse(&list_schema()).map_err(avro_err("manifest list schema"))?;
    let mut w = Writer::new(&schema, Vec::new());
    let mut meta = vec![
        ("snapshot-id", snapshot_id.to_string()),
        ("sequence-number", sequence_number.to_string()),
        ("format-version", "2".to_string()),
    ];
    if let Some(p) = parent {
        meta.push(("parent-snapshot-id", p.to_string()));
    }
    for (k, v) in meta {
        w.add_user_metadata(k.to_string(), v).map_err(avro_err("manifest list metadata"))?;
    }
    for m in manifests {
        let opt_bytes = |b: &Option<Vec<u8>>| b.as_ref().map_or_else(none, |b| some(A::Bytes(b.clone())));
        let partitions = A::Array(
            m.partitions
                .iter()
                .map(|f| {
                    rec(vec![
                        ("contains_null", A::Boolean(f.contains_null)),
                        ("contains_nan", f.contains_nan.map_or_else(none, |n| some(A::Boolean(n)))),
                        ("lower_bound", opt_bytes(&f.lower)),
                        ("upper_bound", opt_bytes(&f.upper)),
                    ])
                })
                .collect(),
        );
        w.append(rec(vec![
            ("manifest_path", A::String(m.path.clone())),
            ("manifest_length", A::Long(m.length)),
            ("partition_spec_id", A::Int(0)),
            ("content", A::Int(0)),
            ("sequence_number", A::Long(m.sequence_number)),
            ("min_sequence_number", A::Long(m.min_sequence_number)),
            ("added_snapshot_id", A::Long(m.added_snapshot_id)),
            ("added_files_count", A::Int(m.added_files)),
            ("existing_files_count", A::Int(m.existing_files)),
            ("deleted_files_count", A::Int(m.deleted_files)),
            ("added_rows_count", A::Long(m.added_rows)),
            ("existing_rows_count", A::Long(m.existing_rows)),
            ("deleted_rows_count", A::Long(m.deleted_rows)),
            ("partitions", some(partitions)),
            ("key_metadata", none()),
        ]))
        .map_err(avro_err("manifest list entry"))?;
    }
    w.into_inner().map_err(avro_err("manifest list"))
}

/// The manifest-list entry of a manifest holding `entries`, written by `snapshot_id`.
pub(crate) fn summarise(
    path: String,
    length: i64,
    entries: &[Entry],
    snapshot_id: i64,
    sequence_number: i64,
    spec: &[PartitionField],
) -> ManifestFile {
    let count = |s: i32| i32::try_from(entries.iter().filter(|e| e.status == s).count()).unwrap_or(i32::MAX);
    let rows =
        |s: i32| entries.iter().filter(|e| e.status == s).map(|e| e.file.record_count).fold(0, i64::saturating_add);
    let live = entries.iter().filter(|e| e.status != DELETED);
    let partitions = spec.iter().enumerate().map(|(i, p)| FieldSummary::of(entries, i, p.kind)).collect();
    ManifestFile {
        path,
        length,
        sequence_number,
        min_sequence_number: live.map(|e| e.sequence_number).min().unwrap_or(sequence_number),
        added_snapshot_id: snapshot_id,
        added_files: count(ADDED),
        existing_files: count(EXISTING),
        deleted_files: count(DELETED),
        added_rows: rows(ADDED),
        existing_rows: rows(EXISTING),
        deleted_rows: rows(DELETED),
        partitions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::schema::DataType;

    #[test]
    fn manifests_and_lists_round_trip() {
        let spec = vec![PartitionField {
            name: "pé 1".into(),
            physical: "c".into(),
            source_id: 2,
            field_id: 1000,
            kind: PartitionKind::Date,
            delta_type: DataType::Primitive(crate::delta::schema::PrimitiveType::Date),
        }];
        assert_eq!(avro_name("pé 1"), "p_xE9_x201");
        let file = DataFile {
            path: "file:///t/a.parquet".into(),
            partition: vec![Some(PartitionValue::Date(19000))],
            record_count: 7,
            size: 100,
            value_counts: vec![(1, 7)],
            null_counts: vec![(1, 0)],
            lower: vec![(1, vec![1, 0, 0, 0, 0, 0, 0, 0])],
            upper: vec![(1, vec![9, 0, 0, 0, 0, 0, 0, 0])],
        };
        let entries = vec![
            Entry { status: ADDED, snapshot_id: 5, sequence_number: 2, file_sequence_number: 2, file: file.clone() },
            Entry {
                status: DELETED,
                snapshot_id: 5,
                sequence_number: 1,
                file_sequence_number: 1,
                file: DataFile { partition: vec![None], ..file },
            },
        ];
        let schema = json!({"type": "struct", "schema-id": 0, "fields": []});
        let bytes = manifest_bytes(&entries, &schema, &spec, &super::super::schema::partition_spec(&spec)).unwrap();
        assert_eq!(read_manifest(&bytes).unwrap(), entries);
        let m = summarise("file:///t/metadata/m.avro".into(), bytes.len() as i64, &entries, 5, 2, &spec);
        assert_eq!((m.added_files, m.deleted_files, m.added_rows, m.min_sequence_number), (1, 1, 7, 2));
        let day = 19000i32.to_le_bytes().to_vec();
        let want = FieldSummary { contains_null: true, contains_nan: None, lower: Some(day.clone()), upper: Some(day) };
        assert_eq!(m.partitions, vec![want]);
        let list = manifest_list_bytes(std::slice::from_ref(&m), 5, Some(4), 2).unwrap();
        assert_eq!(read_manifest_list(&list).unwrap(), vec![m]);
        assert!(read_manifest(b"not avro").is_err());
    }

    fn entries_of(values: Vec<Option<PartitionValue>>) -> Vec<Entry> {
        let file = |v| DataFile {
            path: String::new(),
            partition: vec![v],
            record_count: 1,
            size: 1,
            value_counts: vec![],
            null_counts: vec![],
            lower: vec![],
            upper: vec![],
        };
        values
            .into_iter()
            .map(|v| Entry {
                status: ADDED,
                snapshot_id: 1,
                sequence_number: 1,
                file_sequence_number: 1,
                file: file(v),
            })
            .collect()
    }

    #[test]
    fn partition_summaries_bound_every_value_of_every_kind() {
        use PartitionValue as V;
        let s = |vals: Vec<Option<V>>, kind| FieldSummary::of(&entries_of(vals), 0, kind);
        // Strings by their UTF-8 bytes: "" first, then ASCII, then the rest by code point.
        let strings = s(
            vec![
                Some(V::String("b".into())),
                Some(V::String("é".into())),
                Some(V::String("".into())),
                Some(V::String("😀".into())),
                None,
            ],
            PartitionKind::String,
        );
        assert_eq!((strings.lower.as_deref(), strings.upper.as_deref()), (Some(&b""[..]), Some("😀".as_bytes())));
        assert!(strings.contains_null && strings.contains_nan.is_none());
        let ints = s(vec![Some(V::Int(-5)), Some(V::Int(3)), Some(V::Int(-1))], PartitionKind::Int);
        assert_eq!((ints.lower, ints.upper), (Some((-5i32).to_le_bytes().to_vec()), Some(3i32.to_le_bytes().to_vec())));
        assert!(!ints.contains_null);
        let longs = s(vec![Some(V::Long(i64::MIN)), Some(V::Long(7))], PartitionKind::Long);
        assert_eq!(longs.lower, Some(i64::MIN.to_le_bytes().to_vec()));
        // NaN stays out of the bounds and is reported; -0.0 sorts before 0.0.
        let doubles = s(
            vec![Some(V::Double(f64::NAN)), Some(V::Double(0.0)), Some(V::Double(-0.0)), Some(V::Double(-2.5))],
            PartitionKind::Double,
        );
        assert_eq!(doubles.contains_nan, Some(true));
        assert_eq!(
            (doubles.lower, doubles.upper),
            (Some((-2.5f64).to_le_bytes().to_vec()), Some(0.0f64.to_le_bytes().to_vec()))
        );
        let floats = s(vec![Some(V::Float(1.5))], PartitionKind::Float);
        assert_eq!((floats.contains_nan, floats.upper), (Some(false), Some(1.5f32.to_le_bytes().to_vec())));
        let bools = s(vec![Some(V::Boolean(true)), Some(V::Boolean(false))], PartitionKind::Boolean);
        assert_eq!((bools.lower, bools.upper), (Some(vec![0]), Some(vec![1])));
        let micros = s(vec![Some(V::Micros(-1)), Some(V::Micros(5))], PartitionKind::Timestamp(true));
        assert_eq!(micros.lower, Some((-1i64).to_le_bytes().to_vec()));
        // Only nulls: no bounds, which readers read as "every value is null".
        let nulls = s(vec![None, None], PartitionKind::Date);
        assert!(nulls.contains_null && nulls.lower.is_none() && nulls.lacks_bounds());
    }
}
