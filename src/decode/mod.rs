//! The decoding room: what a record's bytes mean, in every format deltabus reads, with no I/O
//! but the schema registry's.
//!
//! - [`format`]: one type over the formats (JSON, JSON Schema, Avro, Protobuf), made once per
//!   pipeline; its key decoder for keyed topics.
//! - [`json`] [sync]: JSON payloads straight into Arrow against the table schema; bad records
//!   into dead letters.
//! - [`json_values`] [sync]: how a JSON value lands in a column (exactly, or refused by field),
//!   the one set of rules of every JSON decoder (`deltabus write` too); `json_scan`: their
//!   byte-level pass; [`json_text`]: a value's raw text read exactly; [`json_columns`]: JSON
//!   records straight into Arrow columns, the rules applied on the way; [`text_room`]: how much
//!   room a decoder gives a string column, learned from the last batch.
//! - [`json_schema`] [sync]: a registry's JSON Schema as a Delta schema.
//! - [`avro`]: Confluent-framed (or plain) Avro payloads into Arrow, writer schemas from the
//!   registry; [`avro_refs`] [sync]: referenced Avro types inlined into a writer schema.
//! - [`protobuf`]: Confluent-framed Protobuf payloads into proto3 JSON or Arrow;
//!   [`proto_arrow`] [sync]: messages from the wire format straight into Arrow columns.
//! - [`registry`]: the schema-registry client, and `Registries`, one per registry for the
//!   whole process; [`registry_schema`]: a new table's schema from a subject.
//! - [`header_ids`] [sync]: Apicurio's header-carried schema ids as in-band frames.
//! - [`columns`] [sync]: the optional record columns (key, headers, topic, partition,
//!   offset, timestamp).
//! - [`keyed`] [sync]: keys, Debezium JSON envelopes, the last change per key;
//!   [`key_types`] [sync]: a key read from bytes, converted to the key columns' types;
//!   [`keyed_avro`]: framed record keys and Debezium's Avro envelope.
//! - [`projection`] [sync]: rows of a writer schema onto the table's columns by name;
//!   [`exact`] [sync]: the value rules every cast of typed input obeys.
//! - [`route_values`]: a routed pipeline's field in every payload format (`Format::route_values`).
//!
//! The pipeline's `decode` walks one partition's records through these (tombstones, envelopes,
//! keys, payloads against the table schema, generated columns) and gets rows, deletes and dead
//! letters back as values.

internal_mods!(avro);
internal_mods!(avro_refs);
internal_mods!(columns);
internal_mods!(exact);
internal_mods!(format);
internal_mods!(header_ids);
internal_mods!(json);
internal_mods!(json_columns);
mod json_scan;
internal_mods!(json_schema);
internal_mods!(json_text);
mod json_variant;
internal_mods!(json_values);
internal_mods!(key_types);
internal_mods!(keyed);
internal_mods!(keyed_avro);
internal_mods!(projection);
internal_mods!(proto_arrow);
internal_mods!(protobuf);
internal_mods!(registry);
internal_mods!(registry_schema);
internal_mods!(route_values);
mod variant;
mod variant_bytes;
internal_mods!(widening);
pub(crate) mod text_room;
