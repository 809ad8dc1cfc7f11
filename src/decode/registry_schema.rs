//! A new table's schema from the registry: `schema_registry.subject`'s latest version, read
//! at start so a table exists (with the registry's types) before any record arrives.
//!
//! ```text
//! [pipelines.orders.schema_registry]
//! url = "http://registry:8081"
//! subject = "orders-value"
//! ```

use crate::config::{KafkaPipeline, PayloadFormat};
use crate::decode::registry::{Registries, SchemaType};
use crate::delta::arrow_schema::delta_struct_of;
use crate::delta::schema::StructType;
use crate::error::{Error, Result};

/// With `schema_registry.subject`: the Delta schema of the subject's latest version.
pub(crate) async fn subject_schema(cfg: &KafkaPipeline, registries: &Registries) -> Result<Option<StructType>> {
    let registry = match &cfg.kafka.format {
        PayloadFormat::Avro(r) | PayloadFormat::Protobuf(r) | PayloadFormat::JsonSchema(r) => r,
        _ => return Ok(None),
    };
    let Some(subject) = &registry.subject else { return Ok(None) };
    let bad =
        |e: String| Error::InvalidArgument(format!("pipeline {}: schema_registry.subject {subject:?}: {e}", cfg.name));
    let latest = registries.client(registry)?.latest(subject).await.map_err(|u| match u {
        crate::decode::registry::Unavailable::Unknown(why) => bad(why),
    })?;
    let schema = match latest.schema_type {
        SchemaType::Avro => delta_struct_of(&*crate::decode::avro::arrow_schema_of(&latest).map_err(bad)?)?,
        SchemaType::Protobuf => crate::decode::protobuf::first_message_schema(&latest).map_err(bad)?,
        SchemaType::Json => crate::decode::json_schema::delta_schema(&latest.schema)?,
    };
    tracing::info!(subject = %subject, id = latest.id, "table schema from the registry subject's latest version");
    Ok(Some(schema))
}
