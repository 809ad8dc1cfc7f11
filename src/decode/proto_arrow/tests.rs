//! The wire-format decoder against the dynamic path it stands in for.

use std::sync::Arc;

use arrow::datatypes::Field;

use super::*;
use crate::decode::json::PayloadDecoder;
use crate::decode::protobuf::{compile, delta_schema, proto3_options, Proto3};
use prost::Message;
use prost_reflect::DynamicMessage;

const PROTO: &str = r#"syntax = "proto3"; package t;
    import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
    message Row {
      int64 id = 1; int32 small = 2; uint32 u = 3; uint64 big = 4; sint32 s32 = 5; sint64 s64 = 6;
      fixed32 fx32 = 7; fixed64 fx64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10;
      float fl = 11; double db = 12; bool ok = 13; string name = 14;
      Kind kind = 15; Line line = 16; repeated int64 nums = 17; repeated string tags = 18;
      repeated Line lines = 19; google.protobuf.Timestamp at = 20; google.protobuf.Int64Value maybe = 21;
      optional int32 opt = 22; oneof choice { string a = 23; int32 b = 24; }
      repeated Kind kinds = 25; google.protobuf.StringValue sv = 26;
      enum Kind { NEW = 0; PAID = 1; }
      message Line { double amount = 1; int32 qty = 2; Inner inner = 3; }
      message Inner { string note = 1; }
    }"#;

fn desc() -> MessageDescriptor {
    compile(PROTO, &[]).unwrap().get_message_by_name("t.Row").unwrap()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A random message: a random subset of fields; with `edgy`, values at the edges now and
/// then (those only the dynamic path takes: NaN, unknown enum numbers, nanoseconds, ...).
fn random_message(desc: &MessageDescriptor, r: &mut Rng, depth: u32, edgy: bool) -> DynamicMessage {
    let mut m = DynamicMessage::new(desc.clone());
    for f in desc.fields() {
        if r.next(3) == 0 {
            continue;
        }
        let one = |r: &mut Rng| -> Option<Value> {
            // Of each list, the last value is an edge: picked only when edgy, one in four.
            let pick = |r: &mut Rng, n: u64| {
                if edgy && r.next(4) == 0 {
                    n - 1
                } else {
                    r.next(n - 1)
                }
            };
            Some(match f.kind() {
                Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                    Value::I64([0, -1, 7, i64::MIN, i64::MAX][r.next(5) as usize])
                }
                Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                    Value::I32([0, -5, 42, i32::MIN, i32::MAX][r.next(5) as usize])
                }
                Kind::Uint32 | Kind::Fixed32 => Value::U32([0, 9, u32::MAX][r.next(3) as usize]),
                Kind::Uint64 | Kind::Fixed64 => Value::U64([0, 9, i64::MAX as u64, u64::MAX][pick(r, 4) as usize]),
                Kind::Float => Value::F32([0.0, 1.5, -2.25e10, f32::NAN][pick(r, 4) as usize]),
                Kind::Double => Value::F64([0.0, 0.1, -1e300, f64::INFINITY][pick(r, 4) as usize]),
                Kind::Bool => Value::Bool(r.next(2) == 0),
                Kind::String => Value::String(["", "a", "ключ ü 🎉", "x\"y\\z"][r.next(4) as usize].to_string()),
                Kind::Enum(_) => Value::EnumNumber([0, 1, 7][pick(r, 3) as usize]),
                Kind::Message(inner) => match inner.full_name() {
                    "google.protobuf.Timestamp" => {
                        let mut t = DynamicMessage::new(inner.clone());
                        t.set_field_by_name("seconds", Value::I64([0, 1_700_000_000, -86_400][r.next(3) as usize]));
                        t.set_field_by_name("nanos", Value::I32([0, 250_000_000, 123_456_789][pick(r, 3) as usize]));
                        Value::Message(t)
                    }
                    "google.protobuf.Int64Value" => {
                        let mut t = DynamicMessage::new(inner.clone());
                        t.set_field_by_name("value", Value::I64(r.next(100) as i64 - 50));
                        Value::Message(t)
                    }
                    "google.protobuf.StringValue" => {
                        let mut t = DynamicMessage::new(inner.clone());
                        t.set_field_by_name("value", Value::String("wrapped".into()));
                        Value::Message(t)
                    }
                    _ if depth < 3 => Value::Message(random_message(&inner, r, depth + 1, edgy)),
                    _ => return None,
                },
                Kind::Bytes => return None,
            })
        };
        if f.is_list() {
            let values: Vec<Value> = (0..r.next(4)).filter_map(|_| one(r)).collect();
            m.set_field(&f, Value::List(values));
        } else if let Some(v) = one(r) {
            m.set_field(&f, v);
        }
    }
    m
}

/// What the dynamic path makes of one body (`None`: not a row of the table).
fn dynamic(desc: &MessageDescriptor, decoder: &PayloadDecoder, bodies: &[Vec<u8>]) -> Option<RecordBatch> {
    let options = proto3_options();
    let messages: Vec<DynamicMessage> =
        bodies.iter().map(|b| DynamicMessage::decode(desc.clone(), b.as_slice()).ok()).collect::<Option<_>>()?;
    let rows: Vec<Proto3<'_>> = messages.iter().map(|m| Proto3(m, &options)).collect();
    decoder.decode_serialized(&rows)
}

#[test]
fn wire_decoding_agrees_with_the_dynamic_path() {
    let desc = desc();
    let schema = Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&delta_schema(&desc).unwrap()));
    let plan = ProtoColumns::plan(&desc, &schema).expect("the message maps onto its own table");
    let decoder = PayloadDecoder::new(schema.clone(), 1 << 20);
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut direct, mut tried) = (0, 0);
    for _ in 0..10_000 {
        let edgy = r.next(2) == 0;
        let mut body = random_message(&desc, &mut r, 0, edgy).encode_to_vec();
        match r.next(if edgy { 8 } else { 16 }) {
            // Two encodings back to back: the dynamic path merges them.
            0 => body.extend(random_message(&desc, &mut r, 0, false).encode_to_vec()),
            // An unknown field, skipped by both.
            1 => body.extend([0xf8, 0x06, 0x05]),
            // Damage.
            2 if !body.is_empty() => {
                let at = r.next(body.len() as u64) as usize;
                body[at] ^= 1 << r.next(8);
            }
            3 => body.truncate(r.next(body.len() as u64 + 1) as usize),
            _ => {}
        }
        tried += 1;
        if let Some(got) = plan.decode(&[body.as_slice()]) {
            direct += 1;
            let want = dynamic(&desc, &decoder, std::slice::from_ref(&body)).unwrap_or_else(|| {
                let m = DynamicMessage::decode(desc.clone(), body.as_slice());
                let json = m.as_ref().map(|m| crate::decode::protobuf::to_json(m, &proto3_options(), 0));
                panic!("only the direct path decodes {body:?}: {json:?}")
            });
            for (i, f) in schema.fields().iter().enumerate() {
                assert_eq!(got.column(i), want.column(i), "column {} of {body:?}", f.name());
            }
        }
    }
    assert!(direct * 3 > tried, "only {direct} of {tried} decoded directly");
    // A whole batch of good messages at once, as a poll hands them over.
    let bodies: Vec<Vec<u8>> = (0..200)
        .map(|_| random_message(&desc, &mut r, 0, false).encode_to_vec())
        .filter(|b| plan.decode(&[b.as_slice()]).is_some())
        .collect();
    let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    assert_eq!(plan.decode(&refs), dynamic(&desc, &decoder, &bodies));
}

#[test]
fn descriptors_it_cannot_map_exactly_get_no_plan() {
    let pool = compile(
        r#"syntax = "proto3"; message M { map<string, int32> counts = 1; }
           message B { bytes raw = 1; } message W { int64 id = 1; }"#,
        &[],
    )
    .unwrap();
    for name in ["M", "B"] {
        let d = pool.get_message_by_name(name).unwrap();
        let schema = Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&delta_schema(&d).unwrap()));
        assert!(ProtoColumns::plan(&d, &schema).is_none(), "{name}");
    }
    // A column of another type, or a field without a column.
    let w = pool.get_message_by_name("W").unwrap();
    let other = Arc::new(arrow::datatypes::Schema::new(vec![Field::new("id", A::Int32, true)]));
    assert!(ProtoColumns::plan(&w, &other).is_none());
    let none = Arc::new(arrow::datatypes::Schema::new(vec![Field::new("x", A::Int64, true)]));
    assert!(ProtoColumns::plan(&w, &none).is_none());
    // A column that takes no null is filled by a field that always has a value.
    let required = Arc::new(arrow::datatypes::Schema::new(vec![Field::new("id", A::Int64, false)]));
    let plan = ProtoColumns::plan(&w, &required).unwrap();
    assert_eq!(plan.decode(&[&[][..]]).unwrap().column(0).null_count(), 0);
    // Extra nullable columns read as null.
    let wider = Arc::new(arrow::datatypes::Schema::new(vec![
        Field::new("id", A::Int64, true),
        Field::new("later", A::Utf8, true),
    ]));
    let plan = ProtoColumns::plan(&w, &wider).unwrap();
    let batch = plan.decode(&[&[0x08, 0x2a][..], &[][..]]).unwrap();
    use arrow::array::{Array, AsArray};
    let ids = batch.column(0).as_primitive::<arrow::datatypes::Int64Type>();
    assert_eq!((ids.value(0), ids.value(1)), (42, 0));
    assert_eq!(batch.column(1).null_count(), 2);
}

/// String columns, nested ones too, are sized from what the last batch's rows took.
#[test]
fn string_columns_get_the_room_their_rows_took() {
    let desc = desc();
    let schema = Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&delta_schema(&desc).unwrap()));
    let plan = ProtoColumns::plan(&desc, &schema).unwrap();
    let bodies = |n: usize| -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut m = DynamicMessage::new(desc.clone());
                m.set_field_by_name("id", Value::I64(i as i64));
                m.set_field_by_name("name", Value::String("ü".repeat(300)));
                m.encode_to_vec()
            })
            .collect()
    };
    let name_room = |bodies: &[Vec<u8>]| {
        let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
        let batch = plan.decode(&refs).expect("plain messages take the wire path");
        batch.column_by_name("name").unwrap().get_buffer_memory_size()
    };
    name_room(&bodies(100));
    let learned = name_room(&bodies(1000));
    assert!(learned <= 600_000 * 9 / 8 + 8_192, "{learned}: doubling from 16 bytes a row gives 1,024,000");
}
