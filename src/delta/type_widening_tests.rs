use super::*;
use crate::delta::schema::{ArrayType, MapType};
use std::collections::HashMap;

/// A new table's protocol and metadata with this schema and these properties.
fn table(schema: &StructType, properties: &[(&str, &str)]) -> (Protocol, Metadata) {
    let props: HashMap<String, String> = properties.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    crate::delta::create::new_table(schema.clone(), &[], &props).unwrap()
}

fn dec(precision: u8, scale: i8) -> P {
    P::Decimal { precision, scale }
}

#[test]
fn the_protocols_changes_and_no_others_are_allowed() {
    for (from, to) in [
        (P::Byte, P::Short),
        (P::Byte, P::Long),
        (P::Short, P::Integer),
        (P::Integer, P::Long),
        (P::Float, P::Double),
        (P::Integer, P::Double),
        (P::Date, P::TimestampNtz),
        (dec(10, 1), dec(12, 3)),
        (dec(10, 2), dec(38, 2)),
        (P::Integer, dec(10, 0)),
        (P::Short, dec(12, 2)),
        (P::Long, dec(20, 0)),
        (P::Long, dec(38, 18)),
    ] {
        assert!(allowed(from, to), "{from} -> {to}");
    }
    for (from, to) in [
        (P::Long, P::Integer),
        (P::Long, P::Double),
        (P::Double, P::Float),
        (P::Integer, P::Float),
        (P::Date, P::Timestamp),
        (P::TimestampNtz, P::Date),
        (dec(10, 1), dec(11, 3)),
        (dec(10, 2), dec(12, 1)),
        (P::Integer, dec(9, 0)),
        (P::Integer, dec(11, 2)),
        (P::Long, dec(19, 0)),
        (P::String, P::Binary),
        (P::Integer, P::String),
        (P::Long, P::Long),
    ] {
        assert!(!allowed(from, to), "{from} -> {to}");
    }
}

#[test]
fn whole_numbers_into_fractions_need_an_explicit_change() {
    assert!(automatic(P::Integer, P::Long));
    assert!(automatic(P::Float, P::Double));
    assert!(automatic(P::Date, P::TimestampNtz));
    assert!(automatic(dec(10, 2), dec(12, 4)));
    assert!(!automatic(P::Integer, P::Double));
    assert!(!automatic(P::Long, dec(20, 0)));
    assert!(iceberg_allows(P::Integer, P::Long));
    assert!(iceberg_allows(dec(10, 2), dec(20, 2)));
    assert!(!iceberg_allows(dec(10, 2), dec(12, 4)));
    assert!(!iceberg_allows(P::Date, P::TimestampNtz));
    assert!(!iceberg_allows(P::Integer, P::Double));
}

fn field(name: &str, t: DataType) -> StructField {
    StructField::new(name, t, true)
}

#[test]
fn changes_are_recorded_at_the_nearest_ancestor_field_with_their_path() {
    let prim = |p: P| DataType::Primitive(p);
    let nested = |x: P, k: P, v: P| {
        StructType::new(vec![
            field("n", prim(x)),
            field(
                "s",
                DataType::Struct(Box::new(StructType::new(vec![field(
                    "list",
                    DataType::Array(Box::new(ArrayType {
                        element_type: DataType::Map(Box::new(MapType {
                            key_type: prim(k),
                            value_type: prim(v),
                            value_contains_null: true,
                        })),
                        contains_null: true,
                    })),
                )]))),
            ),
        ])
    };
    let old = nested(P::Integer, P::Float, dec(6, 2));
    let (protocol, metadata) = table(&old, &[]);
    let mut new = nested(P::Long, P::Double, dec(10, 4));
    let (widened, config) = apply(&protocol, &metadata, &mut new).unwrap().unwrap();
    assert!(widened.reader_features.clone().unwrap().contains(&FEATURE.to_string()));
    assert!(widened.writer_features.unwrap().contains(&FEATURE.to_string()));
    assert_eq!(config[PROPERTY], "true");
    assert_eq!(new.fields[0].metadata[TYPE_CHANGES], json!([{"fromType": "integer", "toType": "long"}]));
    let DataType::Struct(s) = &new.fields[1].data_type else { panic!() };
    assert_eq!(
        s.fields[0].metadata[TYPE_CHANGES],
        json!([
            {"fromType": "float", "toType": "double", "fieldPath": "element.key"},
            {"fromType": "decimal(6,2)", "toType": "decimal(10,4)", "fieldPath": "element.value"},
        ])
    );
    check_recorded(&new).unwrap();
    // A second change appends to the history.
    let metadata = Metadata { schema_string: new.to_json(), ..metadata };
    let mut wider = new.clone();
    wider.fields[1] = new.fields[1].clone();
    let DataType::Struct(s) = &mut wider.fields[1].data_type else { panic!() };
    let DataType::Array(a) = &mut s.fields[0].data_type else { panic!() };
    let DataType::Map(m) = &mut a.element_type else { panic!() };
    m.value_type = prim(dec(12, 4));
    apply(&protocol, &metadata, &mut wider).unwrap().unwrap();
    let DataType::Struct(s) = &wider.fields[1].data_type else { panic!() };
    assert_eq!(s.fields[0].metadata[TYPE_CHANGES].as_array().unwrap().len(), 3);
}

#[test]
fn refused_changes_name_the_column_and_uniform_tables_take_icebergs_only() {
    let old = StructType::new(vec![field("d", DataType::Primitive(P::Date)), field("n", DataType::Primitive(P::Long))]);
    let (protocol, metadata) = table(&old, &[]);
    let mut narrower = old.clone();
    narrower.fields[1].data_type = DataType::Primitive(P::Integer);
    let e = apply(&protocol, &metadata, &mut narrower).unwrap_err().to_string();
    assert!(e.contains("column n: long cannot be widened to integer"), "{e}");
    let mut metadata = metadata;
    metadata.configuration.insert("delta.universalFormat.enabledFormats".into(), "iceberg".into());
    let mut ntz = old.clone();
    ntz.fields[0].data_type = DataType::Primitive(P::TimestampNtz);
    let e = apply(&protocol, &metadata, &mut ntz).unwrap_err().to_string();
    assert!(e.contains("column d: date cannot be widened to timestamp_ntz on a UniForm table"), "{e}");
}

#[test]
fn a_recorded_change_deltabus_does_not_know_is_refused() {
    let mut f = field("x", DataType::Primitive(P::Long));
    f.metadata.insert(TYPE_CHANGES.into(), json!([{"fromType": "string", "toType": "long"}]));
    let e = check_recorded(&StructType::new(vec![f])).unwrap_err().to_string();
    assert!(e.contains("column x"), "{e}");
}
