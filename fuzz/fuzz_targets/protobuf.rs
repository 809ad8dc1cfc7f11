//! Protobuf messages from the wire format into the table's rows, as a Protobuf pipeline takes
//! them: the bytes decoded against a message descriptor (nested messages, repeated fields,
//! maps, enums, oneofs, well-known timestamps), turned into JSON by deltabus's rules and then
//! into Arrow against the table schema derived from the descriptor. Nothing may panic, and a
//! message that decodes is a row or a dead letter; where the wire-format decoder builds a row
//! directly, it equals the dynamic path's.
#![no_main]
use std::sync::{Arc, OnceLock};

use deltabus::common::record::RawRecord;
use deltabus::decode::json::PayloadDecoder;
use deltabus::decode::proto_arrow::ProtoColumns;
use deltabus::decode::protobuf::{delta_schema, proto3_options, to_json, Proto3};
use deltabus::delta::arrow_schema::arrow_schema_strict;
use libfuzzer_sys::fuzz_target;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};

const PROTO: &str = r#"syntax = "proto3";
package fuzz;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string name = 2;
  double amount = 3;
  repeated string tags = 4;
  enum Kind { A = 0; B = 1; }
  Kind kind = 5;
  map<string, int32> counts = 6;
  google.protobuf.Timestamp at = 7;
  Inner inner = 8;
  oneof choice { string text = 9; bytes blob = 10; }
  uint64 big = 11;
  sint32 small = 12;
  float ratio = 13;
  bool ok = 14;
}
message Inner { bool ok = 1; repeated Leaf children = 2; }
message Tree { bool ok = 1; repeated Tree children = 2; }
message Flat {
  int64 id = 1;
  string name = 2;
  double amount = 3;
  repeated string tags = 4;
  enum Kind { A = 0; B = 1; }
  Kind kind = 5;
  google.protobuf.Timestamp at = 7;
  Leaf leaf = 8;
  oneof choice { string text = 9; int32 number = 10; }
  uint64 big = 11;
  sint32 small = 12;
  float ratio = 13;
  bool ok = 14;
  repeated sfixed64 packed = 15;
  optional fixed32 maybe = 16;
  repeated Leaf leaves = 17;
}
message Leaf { bool ok = 1; string note = 2; }
"#;

/// The one file of the schema, with Google's well-known types beside it.
struct Schema;

impl protox::file::FileResolver for Schema {
    fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
        match name {
            "fuzz.proto" => protox::file::File::from_source(name, PROTO),
            _ => Err(protox::Error::file_not_found(name)),
        }
    }
}

fn descriptor() -> &'static MessageDescriptor {
    &descriptors().0
}

fn descriptors() -> &'static (MessageDescriptor, MessageDescriptor, MessageDescriptor) {
    static DESC: OnceLock<(MessageDescriptor, MessageDescriptor, MessageDescriptor)> = OnceLock::new();
    DESC.get_or_init(|| {
        let mut resolver = protox::file::ChainFileResolver::new();
        resolver.add(Schema);
        resolver.add(protox::file::GoogleFileResolver::new());
        let mut compiler = protox::Compiler::with_file_resolver(resolver);
        compiler.include_imports(true);
        compiler.open_file("fuzz.proto").expect("the proto compiles");
        let pool: DescriptorPool = compiler.descriptor_pool();
        let order = pool.get_message_by_name("fuzz.Order").expect("the message exists");
        (
            order,
            pool.get_message_by_name("fuzz.Flat").expect("the message exists"),
            pool.get_message_by_name("fuzz.Tree").expect("the message exists"),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    wire_path_agrees(data);
    // A recursive message decodes within the decoder's depth limit, and no table is made of it.
    let tree = &descriptors().2;
    let _ = DynamicMessage::decode(tree.clone(), data);
    assert!(delta_schema(tree).is_err(), "a recursive message is refused as a table");
    let desc = descriptor();
    let Ok(message) = DynamicMessage::decode(desc.clone(), data) else { return };
    let Ok(json) = to_json(&message, &proto3_options(), data.len() * 2 + 64) else { return };
    let schema = delta_schema(desc).expect("the descriptor maps to a table schema");
    let decoder = PayloadDecoder::new(Arc::new(arrow_schema_strict(&schema)), 1 << 20);
    let record =
        RawRecord { topic: "t", partition: 0, offset: 0, timestamp_ms: Some(0), key: None, payload: Some(&json) };
    let decoded = decoder.decode(&[record]);
    let rows = decoded.batch.as_ref().map_or(0, |b| b.num_rows());
    assert_eq!(rows + decoded.dead_letters.len(), 1, "the message is a row or a dead letter");
});

/// Where the wire-format decoder builds rows, the dynamic path builds the same ones.
fn wire_path_agrees(data: &[u8]) {
    let flat = &descriptors().1;
    let schema = Arc::new(arrow_schema_strict(&delta_schema(flat).expect("a table schema")));
    let plan = ProtoColumns::plan(flat, &schema).expect("the flat message maps onto its table");
    let Some(direct) = plan.decode(&[data]) else { return };
    let message = DynamicMessage::decode(flat.clone(), data).expect("what decodes directly decodes dynamically");
    let options = proto3_options();
    let decoder = PayloadDecoder::new(schema, 1 << 20);
    let dynamic = decoder.decode_serialized(&[Proto3(&message, &options)]);
    assert_eq!(Some(direct), dynamic, "the two paths give the same row");
}
