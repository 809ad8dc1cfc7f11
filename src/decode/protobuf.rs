//! Protobuf payloads in the Confluent wire format: magic byte `0`, a 4-byte schema id, the
//! message-index path (a zigzag varint count, then that many zigzag varints; a single `0`
//! byte means the first message), then the message. The `.proto` text the registry holds
//! under the id is compiled with `protox` (well-known types importable) and the message
//! decoded with `prost-reflect`.
//!
//! A batch whose messages are all of one type goes from the wire format straight into the
//! table's columns ([`ProtoColumns`], no dynamic message per record); otherwise messages
//! are decoded as dynamic messages and handed on as JSON in the proto3 mapping (field names as declared,
//! 64-bit integers as numbers, enums as names, `Timestamp` as RFC 3339, wrappers as their
//! value or null), which the pipeline's JSON decoder reads against the table schema; a new
//! table takes the message descriptor's columns ([`delta_schema`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use prost_reflect::{DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, SerializeOptions};

use super::proto_arrow::ProtoColumns;

use crate::decode::registry::{RegisteredSchema, RegistryClient, SchemaType, Unavailable};
use crate::delta::schema::{ArrayType, DataType, MapType, PrimitiveType, StructField, StructType};

/// A record decoded into JSON, or why it could not be.
pub(crate) type Outcome = Result<(u64, Vec<u8>), String>;

/// Decodes Confluent-framed Protobuf with schemas from a registry.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ProtoDecoder {
    registry: Arc<RegistryClient>,
    pools: HashMap<u64, Result<DescriptorPool, String>>,
    /// Plans from the wire format into a table's columns, by (schema id, message name).
    plans: HashMap<(u64, String), Planned>,
}

/// A message type's plan for the table schema it was made for (`None`: no direct plan).
type Planned = (SchemaRef, Option<Arc<ProtoColumns>>);

impl ProtoDecoder {
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(registry: Arc<RegistryClient>) -> ProtoDecoder {
        ProtoDecoder { registry, pools: HashMap::new(), plans: HashMap::new() }
    }

    async fn pool(&mut self, id: u64) -> Result<DescriptorPool, String> {
        if let Some(p) = self.pools.get(&id) {
            return p.clone();
        }
        let got = match self.registry.schema(id).await {
            Err(Unavailable::Unknown(why)) => Err(why),
            Ok(s) if s.schema_type != SchemaType::Protobuf => {
                Err(format!("schema id {id} is {:?}, not Protobuf (see the pipeline's format)", s.schema_type))
            }
            Ok(s) => {
                compile(&s.schema, &s.all_references()).map_err(|e| format!("schema id {id} does not compile: {e}"))
            }
        };
        self.pools.insert(id, got.clone());
        got
    }

    /// The message a framed payload holds: its descriptor and body.
    async fn message<'p>(&mut self, payload: &'p [u8]) -> Result<(u64, MessageDescriptor, &'p [u8]), String> {
        let framing = self.registry.framing();
        let (id, mut rest) = framing.split(payload).ok_or(framing.unframed())?;
        let pool = self.pool(id).await?;
        let path = message_indexes(&mut rest).ok_or("the message-index path is damaged")?;
        let file = pool.files().find(|f| f.name() == SCHEMA_FILE).ok_or("the schema holds no file")?;
        let mut desc = file
            .messages()
            .nth(*path.first().unwrap_or(&0))
            .ok_or_else(|| format!("schema id {id} has no message {path:?}"))?;
        for i in path.iter().skip(1) {
            let child = desc.child_messages().nth(*i);
            desc = child.ok_or_else(|| format!("schema id {id} has no message {path:?}"))?;
        }
        Ok((id, desc, rest))
    }

    /// The Delta schema of the first decodable record's message (a new table's schema).
    pub(crate) async fn first_schema(&mut self, payloads: &[Option<&[u8]>]) -> Option<StructType> {
        for p in payloads.iter().flatten() {
            if let Ok((_, desc, _)) = self.message(p).await {
                return delta_schema(&desc).ok();
            }
        }
        None
    }

    /// Each payload's message, or why it has none.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn messages(&mut self, payloads: &[Option<&[u8]>]) -> Vec<Result<(u64, DynamicMessage), String>> {
        let mut out = Vec::with_capacity(payloads.len());
        for p in payloads {
            let Some(p) = p else {
                out.push(Err("null payload".into()));
                continue;
            };
            out.push(match self.message(p).await {
                Ok((id, desc, body)) => DynamicMessage::decode(desc, body)
                    .map(|m| (id, m))
                    .map_err(|e| format!("the Protobuf body does not match schema id {id}: {e}")),
                Err(e) => Err(e),
            });
        }
        out
    }

    /// A batch of payloads straight from the wire format into rows of `schema`, when every
    /// one holds a message of one type the columns can be built from directly
    /// ([`ProtoColumns`]); `None` sends the batch the dynamic way (mixed or unknown types,
    /// bad records, values only that path handles).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn columns(&mut self, payloads: &[Option<&[u8]>], schema: &SchemaRef) -> Option<RecordBatch> {
        let mut bodies = Vec::with_capacity(payloads.len());
        let mut first: Option<(u64, MessageDescriptor)> = None;
        for p in payloads {
            let (id, desc, body) = self.message((*p)?).await.ok()?;
            match &first {
                Some((i, d)) if *i != id || d != &desc => return None,
                Some(_) => {}
                None => first = Some((id, desc)),
            }
            bodies.push(body);
        }
        let (id, desc) = first?;
        let key = (id, desc.full_name().to_string());
        let plan = match self.plans.get(&key) {
            Some((s, plan)) if s == schema => plan.clone(),
            _ => {
                let plan = ProtoColumns::plan(&desc, schema).map(Arc::new);
                if plan.is_none() {
                    tracing::debug!(message = %key.1, "protobuf.dynamic: the message type is decoded through dynamic messages");
                }
                self.plans.insert(key, (schema.clone(), plan.clone()));
                plan
            }
        };
        plan?.decode(&bodies)
    }

    /// Each payload as proto3 JSON text, or why not.
    pub(crate) async fn decode(&mut self, payloads: &[Option<&[u8]>]) -> Vec<Outcome> {
        let options = proto3_options();
        self.messages(payloads)
            .await
            .into_iter()
            .zip(payloads)
            .map(|(m, p)| {
                let (id, m) = m?;
                Ok((id, to_json(&m, &options, p.map_or(0, <[u8]>::len) * 2)?))
            })
            .collect()
    }
}

/// A message as JSON text.
///
/// # Errors
/// What the serializer reports.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn to_json(m: &DynamicMessage, options: &SerializeOptions, capacity: usize) -> Result<Vec<u8>, String> {
    let mut ser = serde_json::Serializer::new(Vec::with_capacity(capacity));
    m.serialize_with_options(&mut ser, options).map_err(|e| e.to_string())?;
    Ok(ser.into_inner())
}

/// How messages are written as rows: proto3 JSON with field names as declared, 64-bit
/// integers as numbers, and defaults written (proto3 omits a zero, an empty string or the
/// first enum value otherwise, and the row would read null where the message says 0).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn proto3_options() -> SerializeOptions {
    SerializeOptions::new().stringify_64_bit_integers(false).use_proto_field_name(true).skip_default_fields(false)
}

/// A message serialized as its proto3 JSON form ([`proto3_options`]), for serializers that
/// build Arrow directly.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Proto3<'a>(pub &'a DynamicMessage, pub &'a SerializeOptions);

impl serde::Serialize for Proto3<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_with_options(serializer, self.1)
    }
}

const SCHEMA_FILE: &str = "registry.proto";

/// The Delta schema of the first message of a registered `.proto` (a subject's latest).
///
/// # Errors
/// A schema that does not compile or holds no message.
pub(crate) fn first_message_schema(schema: &RegisteredSchema) -> Result<StructType, String> {
    let pool = compile(&schema.schema, &schema.all_references())?;
    let file = pool.files().find(|f| f.name() == SCHEMA_FILE).ok_or("the schema holds no file")?;
    let desc = file.messages().next().ok_or("the schema holds no message")?;
    delta_schema(&desc)
}

/// Compiles the registry's schema: `.proto` text, or a base64 `FileDescriptorProto` (the form
/// Confluent's Python serializer registers); its imports resolve to the schemas it references
/// (by reference name, e.g. `address.proto`) and to Google's well-known types.
pub(super) fn compile(source: &str, references: &[(&str, &RegisteredSchema)]) -> Result<DescriptorPool, String> {
    struct Files(std::collections::HashMap<String, String>);
    impl protox::file::FileResolver for Files {
        fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
            match self.0.get(name) {
                Some(text) => match serialized_file(name, text) {
                    Some(file) => Ok(file),
                    None => protox::file::File::from_source(name, text),
                },
                None => Err(protox::Error::file_not_found(name)),
            }
        }
    }
    let mut files: std::collections::HashMap<String, String> =
        references.iter().map(|(name, r)| (name.to_string(), r.schema.clone())).collect();
    files.insert(SCHEMA_FILE.to_string(), source.to_string());
    let mut resolver = protox::file::ChainFileResolver::new();
    resolver.add(Files(files));
    resolver.add(protox::file::GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_imports(true);
    compiler.open_file(SCHEMA_FILE).map_err(|e| e.to_string())?;
    Ok(compiler.descriptor_pool())
}

/// A schema in its serialized form: base64 of a `FileDescriptorProto` (one word, no `.proto`
/// syntax), named `name` whatever name it was serialized with.
fn serialized_file(name: &str, text: &str) -> Option<protox::file::File> {
    use base64::Engine;
    let word = text.trim();
    if word.is_empty() || word.contains(|c: char| c.is_whitespace() || matches!(c, ';' | '{' | '"')) {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(word).ok()?;
    let mut file =
        <prost_reflect::prost_types::FileDescriptorProto as prost::Message>::decode(bytes.as_slice()).ok()?;
    file.name = Some(name.to_string());
    Some(protox::file::File::from_file_descriptor_proto(file))
}

fn zigzag_varint(buf: &mut &[u8]) -> Option<i64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    None
}

/// Confluent's message-index path.
fn message_indexes(buf: &mut &[u8]) -> Option<Vec<usize>> {
    let count = zigzag_varint(buf)?;
    if count == 0 {
        return Some(vec![0]);
    }
    (0..count.min(64)).map(|_| zigzag_varint(buf).and_then(|i| usize::try_from(i).ok())).collect()
}

/// The Delta schema of a message: proto3 fields are all nullable.
///
/// # Errors
/// A field of no Delta type, or nesting deeper than 32 (a recursive message).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn delta_schema(desc: &MessageDescriptor) -> Result<StructType, String> {
    struct_of(desc, 0)
}

fn struct_of(desc: &MessageDescriptor, depth: u32) -> Result<StructType, String> {
    if depth > 32 {
        return Err(format!("{} nests too deeply (a recursive message?)", desc.full_name()));
    }
    desc.fields()
        .map(|f| Ok(StructField::new(f.name(), field_type(&f, depth)?, true)))
        .collect::<Result<_, String>>()
        .map(StructType::new)
}

fn field_type(f: &FieldDescriptor, depth: u32) -> Result<DataType, String> {
    if f.is_map() {
        let Kind::Message(entry) = f.kind() else { return Err(format!("map {} without an entry", f.name())) };
        return Ok(DataType::Map(Box::new(MapType {
            key_type: kind_type(&entry.map_entry_key_field().kind(), depth)?,
            value_type: kind_type(&entry.map_entry_value_field().kind(), depth)?,
            value_contains_null: true,
        })));
    }
    let t = kind_type(&f.kind(), depth)?;
    Ok(if f.is_list() { DataType::Array(Box::new(ArrayType { element_type: t, contains_null: true })) } else { t })
}

fn kind_type(kind: &Kind, depth: u32) -> Result<DataType, String> {
    let p = |t| Ok(DataType::Primitive(t));
    match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => p(PrimitiveType::Integer),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint32 | Kind::Fixed32 | Kind::Uint64 | Kind::Fixed64 => {
            p(PrimitiveType::Long)
        }
        Kind::Float => p(PrimitiveType::Float),
        Kind::Double => p(PrimitiveType::Double),
        Kind::Bool => p(PrimitiveType::Boolean),
        // Bytes travel as base64 text in the JSON mapping.
        Kind::String | Kind::Bytes | Kind::Enum(_) => p(PrimitiveType::String),
        Kind::Message(m) => match m.full_name() {
            "google.protobuf.Timestamp" => p(PrimitiveType::Timestamp),
            "google.protobuf.Duration" | "google.protobuf.StringValue" | "google.protobuf.BytesValue" => {
                p(PrimitiveType::String)
            }
            "google.protobuf.Int32Value" | "google.protobuf.UInt32Value" => p(PrimitiveType::Integer),
            "google.protobuf.Int64Value" | "google.protobuf.UInt64Value" => p(PrimitiveType::Long),
            "google.protobuf.FloatValue" => p(PrimitiveType::Float),
            "google.protobuf.DoubleValue" => p(PrimitiveType::Double),
            "google.protobuf.BoolValue" => p(PrimitiveType::Boolean),
            _ => Ok(DataType::Struct(Box::new(struct_of(m, depth + 1)?))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_index_paths() {
        assert_eq!(message_indexes(&mut &[0u8][..]), Some(vec![0]));
        // count 2 (zigzag 4), then 1 (2) and 0 (0)
        assert_eq!(message_indexes(&mut &[4u8, 2, 0][..]), Some(vec![1, 0]));
        assert_eq!(message_indexes(&mut &[][..]), None);
    }

    #[test]
    fn imports_resolve_to_referenced_schemas() {
        let address = RegisteredSchema::new(
            0,
            SchemaType::Protobuf,
            "syntax = \"proto3\"; package geo; message Address { string city = 1; }",
        );
        let pool = compile(
            "syntax = \"proto3\"; package shop; import \"geo/address.proto\"; message Order { geo.Address ship = 1; }",
            &[("geo/address.proto", &address)],
        )
        .unwrap();
        let desc = pool.get_message_by_name("shop.Order").unwrap();
        assert!(delta_schema(&desc).unwrap().to_json().contains("city"));
        let e = compile("syntax = \"proto3\"; import \"missing.proto\"; message M { int32 a = 1; }", &[]).unwrap_err();
        assert!(e.contains("missing.proto"), "{e}");
    }

    #[test]
    fn serialized_descriptors_compile_like_their_text() {
        use base64::Engine;
        let text = "syntax = \"proto3\"; package shop; import \"google/protobuf/timestamp.proto\";\n\
                    message Order { int64 id = 1; google.protobuf.Timestamp at = 2; }";
        let pool = compile(text, &[]).unwrap();
        let file = pool.get_file_by_name(SCHEMA_FILE).unwrap().file_descriptor_proto().clone();
        let encoded = base64::engine::general_purpose::STANDARD.encode(prost::Message::encode_to_vec(&file));
        let again = compile(&encoded, &[]).unwrap();
        let (a, b) =
            (pool.get_message_by_name("shop.Order").unwrap(), again.get_message_by_name("shop.Order").unwrap());
        assert_eq!(delta_schema(&a).unwrap(), delta_schema(&b).unwrap());
        assert!(compile("bm90IGEgZGVzY3JpcHRvcg==", &[]).is_err(), "base64 of something else is no schema");
    }

    #[test]
    fn proto_text_compiles_to_delta_types() {
        let pool = compile(
            r#"syntax = "proto3"; package shop; import "google/protobuf/timestamp.proto";
               import "google/protobuf/wrappers.proto";
               message Order { int64 id = 1; string customer = 2; repeated string tags = 3;
                 map<string, int32> counts = 4; google.protobuf.Timestamp at = 5;
                 google.protobuf.Int64Value maybe = 6; Kind kind = 7; Line line = 8;
                 enum Kind { NEW = 0; PAID = 1; } message Line { double amount = 1; } }"#,
            &[],
        )
        .unwrap();
        let desc = pool.get_message_by_name("shop.Order").unwrap();
        let json = delta_schema(&desc).unwrap().to_json();
        for want in [
            r#"{"name":"id","type":"long""#,
            r#""name":"tags","type":{"type":"array","elementType":"string""#,
            r#""name":"counts","type":{"type":"map","keyType":"string","valueType":"integer""#,
            r#"{"name":"at","type":"timestamp""#,
            r#"{"name":"maybe","type":"long""#,
            r#"{"name":"kind","type":"string""#,
            r#""name":"line","type":{"type":"struct","fields":[{"name":"amount","type":"double""#,
        ] {
            assert!(json.contains(want), "{want}: {json}");
        }
    }

    #[test]
    fn messages_serialize_straight_into_arrow() {
        use arrow::array::AsArray;
        let pool = compile(
            r#"syntax = "proto3"; package shop; import "google/protobuf/timestamp.proto";
               message Order { int64 id = 1; repeated string tags = 2; google.protobuf.Timestamp at = 3;
                 Kind kind = 4; Line line = 5; map<string, int32> counts = 6;
                 enum Kind { NEW = 0; PAID = 1; } message Line { double amount = 1; int32 qty = 2; } }"#,
            &[],
        )
        .unwrap();
        let desc = pool.get_message_by_name("shop.Order").unwrap();
        let schema = delta_schema(&desc).unwrap();
        let arrow = std::sync::Arc::new(crate::delta::arrow_schema::arrow_schema_strict(&schema));
        let json = r#"{"id": 7, "tags": ["a"], "at": "2026-11-30T12:00:00Z", "kind": "PAID", "line": {"amount": 1.5}, "counts": {"x": 2}}"#;
        let mut de = serde_json::Deserializer::from_str(json);
        let full = DynamicMessage::deserialize(desc.clone(), &mut de).unwrap();
        let zero = DynamicMessage::new(desc);
        let options = proto3_options();
        let rows = [Proto3(&full, &options), Proto3(&zero, &options)];
        let decoder = crate::decode::json::PayloadDecoder::new(arrow, 1 << 20);
        let batch = decoder.decode_serialized(&rows).expect("messages fit the descriptor's table");
        assert_eq!(batch.num_rows(), 2);
        let ids = batch.column_by_name("id").unwrap().as_primitive::<arrow::datatypes::Int64Type>();
        assert_eq!((ids.value(0), ids.value(1)), (7, 0), "a default id is 0, not null");
        let kind = batch.column_by_name("kind").unwrap().as_string::<i32>();
        assert_eq!((kind.value(0), kind.value(1)), ("PAID", "NEW"));
        let at = batch.column_by_name("at").unwrap().as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        assert_eq!(at.value(0), 1_796_040_000_000_000);
    }
}
