//! One type over the payload formats: what decoding a pipeline's records needs, made once from
//! its configuration with the process's registry clients. The table's view of the pipeline
//! decodes payloads through it, keyed topics get their key decoder from it, and routed
//! pipelines read their route field with it ([`super::route_values`]).

use std::sync::Arc;

use super::avro::AvroDecoder;
use super::keyed_avro::KeyDecoder;
use super::protobuf::ProtoDecoder;
use super::registry::{Registries, RegistryClient};
use crate::config::{KafkaPipeline, PayloadFormat};
use crate::error::{Error, Result};

/// A pipeline's payload format, with its decoder.
pub(crate) enum Format {
    /// Plain JSON.
    Json,
    /// Confluent- or Apicurio-framed JSON, checked against the registry's JSON Schema.
    JsonSchema(Arc<RegistryClient>),
    /// Framed Avro with writer schemas from the registry, or plain Avro of a configured schema.
    Avro(AvroDecoder),
    /// Framed Protobuf with `.proto` schemas from the registry.
    Protobuf(ProtoDecoder),
}

impl Format {
    /// The format of `cfg`'s topic.
    ///
    /// # Errors
    /// An unusable registry configuration or Avro schema.
    pub(crate) fn of(cfg: &KafkaPipeline, registries: &Registries) -> Result<Format> {
        Ok(match &cfg.kafka.format {
            PayloadFormat::Json => Format::Json,
            PayloadFormat::JsonSchema(r) => Format::JsonSchema(registries.client(r)?),
            PayloadFormat::Avro(r) => Format::Avro(AvroDecoder::new(registries.client(r)?)),
            PayloadFormat::AvroPlain(schema) => Format::Avro(
                AvroDecoder::plain(schema)
                    .map_err(|e| Error::InvalidArgument(format!("pipeline {}: {e}", cfg.name)))?,
            ),
            PayloadFormat::Protobuf(r) => Format::Protobuf(ProtoDecoder::new(registries.client(r)?)),
        })
    }

    /// Keyed topics of a registry format: the decoder of their framed record keys.
    ///
    /// # Errors
    /// An unusable registry configuration.
    pub(crate) fn keys(cfg: &KafkaPipeline, registries: &Registries) -> Result<Option<KeyDecoder>> {
        if cfg.upsert.is_none() {
            return Ok(None);
        }
        Ok(match &cfg.kafka.format {
            PayloadFormat::Avro(r) => Some(KeyDecoder::Avro(AvroDecoder::new(registries.client(r)?))),
            PayloadFormat::Protobuf(r) => Some(KeyDecoder::Protobuf(ProtoDecoder::new(registries.client(r)?))),
            PayloadFormat::JsonSchema(r) => Some(KeyDecoder::FramedJson(registries.client(r)?.framing())),
            PayloadFormat::Json | PayloadFormat::AvroPlain(_) => None,
        })
    }

    /// Whether payloads are Avro (Debezium's Avro envelopes are unwrapped by the decoder).
    pub(crate) fn is_avro(&self) -> bool {
        matches!(self, Format::Avro(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::pipeline::PipelineConfig;
    use crate::config::{Pipeline, UpsertConfig, UpsertFormat};
    use crate::decode::registry::RegistryConfig;

    fn kafka(format: &str, keyed: bool) -> KafkaPipeline {
        let mut p = PipelineConfig::new("/tmp/t", "127.0.0.1:9092", "t");
        p.kafka.format = format.into();
        if format != "json" {
            p.schema_registry = Some(RegistryConfig { url: "http://127.0.0.1:1".into(), ..RegistryConfig::default() });
        }
        if keyed {
            p.upsert = Some(UpsertConfig {
                key_columns: vec!["id".into()],
                format: UpsertFormat::Plain,
                op_field: None,
                index_memory: crate::config::DEFAULT_INDEX_MEMORY,
            });
        }
        match p.validate("p").unwrap_or_else(|e| panic!("{format}: {e}")).kind() {
            Pipeline::Kafka(k) => k,
            Pipeline::Delta(_) => panic!("a Kafka pipeline"),
        }
    }

    #[test]
    fn each_configured_format_gets_its_decoder_and_keyed_topics_their_key_decoder() {
        let registries = Registries::default();
        let of = |f: &str, keyed: bool| {
            let cfg = kafka(f, keyed);
            (Format::of(&cfg, &registries).unwrap_or_else(|e| panic!("{e}")), Format::keys(&cfg, &registries))
        };
        let (json, keys) = of("json", true);
        assert!(matches!(json, Format::Json) && matches!(keys, Ok(None)), "plain JSON keys are text");
        let (avro, keys) = of("avro", true);
        assert!(avro.is_avro() && matches!(keys, Ok(Some(KeyDecoder::Avro(_)))));
        let (proto, keys) = of("protobuf", false);
        assert!(matches!(proto, Format::Protobuf(_)) && matches!(keys, Ok(None)), "unkeyed: no key decoder");
        let (framed, keys) = of("json-schema", true);
        assert!(matches!(framed, Format::JsonSchema(_)) && matches!(keys, Ok(Some(KeyDecoder::FramedJson(_)))));
        // One registry configuration, one client, whatever asked for it.
        assert_eq!(registries.len(), 1);
    }
}
