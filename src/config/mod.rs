//! The one configuration loader: typed, validated once, secrets redacted.
//!
//! Sources, later ones winning: `config/default.toml` (embedded at build time, so the
//! binary always knows every default), an optional file, and `DELTABUS__SECTION__KEY`
//! environment variables. Unknown keys are refused so a typo never silently does nothing.
//!
//! - [`pipeline`]: `[pipelines.<name>]` with its Kafka, flush, column, dead-letter and
//!   compaction settings, and their validation.
//! - [`commit`]: `[pipelines.<name>.commit]`, per-worker or coordinated commits.
//! - [`sources`]: the `[delta]` source and `[upsert]` keyed-ingestion settings.
//! - [`server`]: `[server]`, push ingest over HTTP and its tables; [`kafka`]: `[server.kafka]`,
//!   the Kafka-protocol listener whose topics are those tables.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::storage::StorageOptions;

/// `FromStr` for a setting's enum from its spellings, and deserialization through it
/// (`#[serde(try_from = "String")]`): a value it does not take is refused naming them all.
macro_rules! setting_values {
    ($ty:ident { $($text:literal => $variant:ident),+ $(,)? }) => {
        impl std::str::FromStr for $ty {
            type Err = String;

            fn from_str(s: &str) -> std::result::Result<$ty, String> {
                match s {
                    $($text => Ok($ty::$variant),)+
                    other => Err(format!("{other:?} is not {}", $crate::config::one_of(&[$($text),+]))),
                }
            }
        }

        impl TryFrom<String> for $ty {
            type Error = String;

            fn try_from(s: String) -> std::result::Result<$ty, String> {
                s.parse()
            }
        }
    };
}

/// `a, b or c`.
pub(crate) fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

pub mod commit;
pub mod kafka;
mod layers;
pub mod pipeline;
pub mod redact;
pub mod registry;
mod resolved;
pub mod server;
pub mod sources;
pub mod variants;

pub use pipeline::{
    DeltaPipeline, KafkaPipeline, PayloadFormat, Pipeline, PipelineConfig, PipelineSource, ResolvedCompaction,
    ResolvedKafka, ResolvedPipeline, Route, StartPosition, Topics, UpsertConfig, UpsertFormat, DEFAULT_INDEX_MEMORY,
};

/// The embedded defaults file.
pub const DEFAULTS_TOML: &str = include_str!("../../config/default.toml");

/// The whole configuration.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub storage: StorageConfig,
    pub log: LogConfig,
    pub run: RunConfig,
    pub metrics: MetricsConfig,
    /// `[telemetry]`: OpenTelemetry export over OTLP.
    pub telemetry: TelemetryConfig,
    /// `deltabus run`'s pipelines by name (lowercase, so environment overrides can name them).
    #[serde(default)]
    pub pipelines: std::collections::BTreeMap<String, PipelineConfig>,
    /// `[kafka]`: brokers and client properties every Kafka pipeline starts from (its own
    /// `[pipelines.<name>.kafka]` keys win), so credentials are written once.
    #[serde(default)]
    pub kafka: Option<KafkaDefaults>,
    /// `[schema_registry]`: the registry of every Avro pipeline without its own.
    #[serde(default)]
    pub schema_registry: Option<registry::RegistryConfig>,
    /// `[server]`: push ingest over HTTP.
    #[serde(default)]
    pub server: server::ServerConfig,
}

/// `[kafka]`
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct KafkaDefaults {
    #[serde(default)]
    pub brokers: Option<String>,
    #[serde(default)]
    pub properties: std::collections::BTreeMap<String, String>,
}

/// `[run]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// How long a graceful shutdown may take to flush and commit before the process gives up.
    pub shutdown_timeout: crate::common::units::HumanDuration,
}

/// `[metrics]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Address of the HTTP endpoint (`/metrics`, `/health`, `/ready`); empty = none.
    pub addr: String,
}

/// `[telemetry]`: OpenTelemetry export (traces and metrics over OTLP); each key falls back
/// to its standard `OTEL_*` variable.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's address (`http://host:4318` for http/protobuf, `:4317` for grpc); empty:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, else off.
    pub endpoint: String,
    /// `http/protobuf` or `grpc`; default: `OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf.
    #[serde(default)]
    pub protocol: Option<String>,
    /// The `service.name` resource; default: `OTEL_SERVICE_NAME`, else `deltabus`.
    #[serde(default)]
    pub service_name: Option<String>,
    /// How often metrics are exported.
    pub metrics_interval: crate::common::units::HumanDuration,
}

/// `[storage]`
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    pub allow_absolute_paths: bool,
    #[serde(default)]
    pub options: HashMap<String, String>,
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageConfig")
            .field("allow_absolute_paths", &self.allow_absolute_paths)
            .field("options", &self.options.keys().map(|k| (k, "<redacted>")).collect::<HashMap<_, _>>())
            .finish()
    }
}

/// `[log]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum LogFormat {
    Text,
    Json,
}

setting_values!(LogFormat { "text" => Text, "json" => Json });

impl Config {
    /// Loads defaults, then `file`, then the environment.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the bad key or file.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        Self::load_with_env(file, std::env::vars())
    }

    /// As [`Config::load`] with an explicit environment, so tests need not touch the process's.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the bad key or file.
    pub fn load_with_env(file: Option<&Path>, env: impl IntoIterator<Item = (String, String)>) -> Result<Config> {
        let env: Vec<(String, String)> = env.into_iter().collect();
        let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let mut tree: toml::Value = toml::from_str(DEFAULTS_TOML)
            .map_err(|e| Error::Internal(format!("the embedded defaults do not parse: {e}")))?;
        if let Some(f) = file {
            if !f.is_file() {
                return Err(Error::InvalidArgument(format!("config file {} does not exist", f.display())));
            }
            // Syntax errors are reported here, without the offending line (it may hold a secret).
            let text = std::fs::read_to_string(f)?;
            if let Some(e) = redact::syntax_error(f, &text) {
                return Err(Error::InvalidArgument(format!("configuration: {e}")));
            }
            let mut from_file: toml::Value = toml::from_str(&text)
                .map_err(|_| Error::InvalidArgument(format!("configuration: {} does not parse", f.display())))?;
            layers::interpolate(&mut from_file, "", &lookup)?;
            layers::merge(&mut tree, from_file);
        }
        let overrides = layers::env_overrides(&env, &tree)?;
        layers::merge(&mut tree, overrides);
        layers::apply_defaults(&mut tree);
        // Typed through the `config` crate, which reads numbers and booleans from text values.
        let merged = toml::to_string(&tree).map_err(|e| Error::Internal(format!("configuration tree: {e}")))?;
        let bad = |e: config::ConfigError| match e {
            // A value refused at a key (a type, a choice): name the key, never the value.
            config::ConfigError::At { error, key: Some(key), .. } => {
                Error::invalid_config(key, redact::without_values(&error.to_string()))
            }
            config::ConfigError::Type { key: Some(key), expected, .. } => {
                Error::invalid_config(key, format!("expected {expected}"))
            }
            other => Error::InvalidArgument(format!("configuration: {}", redact::without_values(&other.to_string()))),
        };
        let raw = config::Config::builder()
            .add_source(config::File::from_str(&merged, config::FileFormat::Toml))
            .build()
            .map_err(bad)?;
        let config: Config = raw.try_deserialize().map_err(bad)?;
        config.resolved_pipelines()?;
        if !config.metrics.addr.is_empty() && config.metrics.addr.parse::<std::net::SocketAddr>().is_err() {
            return Err(Error::InvalidArgument(format!("metrics.addr {:?} is not host:port", config.metrics.addr)));
        }
        Ok(config)
    }

    /// The pipelines, validated.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad pipeline key.
    pub fn resolved_pipelines(&self) -> Result<Vec<ResolvedPipeline>> {
        self.pipelines.iter().map(|(name, p)| p.validate(name)).collect()
    }

    /// The storage options for opening tables.
    pub fn storage_options(&self) -> StorageOptions {
        StorageOptions {
            options: self.storage.options.clone(),
            allow_absolute_paths: self.storage.allow_absolute_paths,
            ..StorageOptions::default()
        }
    }

    /// The configuration as TOML with option values redacted.
    pub fn to_redacted_toml(&self) -> String {
        let mut shown = self.clone();
        let hide = |k: &String, v: &mut String| {
            if redact::is_secret_key(k) {
                *v = "<redacted>".into();
            }
        };
        shown.storage.options.iter_mut().for_each(|(k, v)| hide(k, v));
        for p in shown.pipelines.values_mut() {
            p.kafka.properties.iter_mut().for_each(|(k, v)| hide(k, v));
            if let Some(r) = p.schema_registry.as_mut() {
                r.password = r.password.as_ref().map(|_| "<redacted>".into());
                r.token = r.token.as_ref().map(|_| "<redacted>".into());
            }
        }
        if let Some(k) = shown.kafka.as_mut() {
            k.properties.iter_mut().for_each(|(k, v)| hide(k, v));
        }
        let topics = shown.server.kafka.iter_mut().flat_map(|k| k.topics.values_mut());
        for r in shown.schema_registry.iter_mut().chain(topics.filter_map(|t| t.schema_registry.as_mut())) {
            r.password = r.password.as_ref().map(|_| "<redacted>".into());
            r.token = r.token.as_ref().map(|_| "<redacted>".into());
        }
        let mut value = toml::Value::try_from(&shown).unwrap_or(toml::Value::String("<unprintable>".into()));
        redact::redact_tree(&mut value);
        toml::to_string_pretty(&value).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_load() {
        let c = Config::load_with_env(None, env(&[])).unwrap();
        assert!(!c.storage.allow_absolute_paths);
        assert!(c.storage.options.is_empty());
        assert_eq!(c.log.format, LogFormat::Text);
    }

    #[test]
    fn env_overrides_and_redaction() {
        let c = Config::load_with_env(
            None,
            env(&[
                ("DELTABUS__STORAGE__ALLOW_ABSOLUTE_PATHS", "true"),
                ("DELTABUS__STORAGE__OPTIONS__AWS_SECRET_ACCESS_KEY", "hunter2"),
            ]),
        )
        .unwrap();
        assert!(c.storage.allow_absolute_paths);
        assert_eq!(c.storage.options.get("aws_secret_access_key").map(String::as_str), Some("hunter2"));
        assert!(!format!("{c:?}").contains("hunter2"));
        let mut p = PipelineConfig::new("/t", "user:pw@broker:9092", "t");
        p.kafka.properties.insert("sasl.password".into(), "hunter2".into());
        let shown = format!("{p:?}");
        assert!(!shown.contains("pw@") && !shown.contains("hunter2") && shown.contains("broker:9092"), "{shown}");
        assert!(!c.to_redacted_toml().contains("hunter2"));
    }

    #[test]
    fn registry_topics_of_the_kafka_listener_take_the_top_level_registry_and_hide_its_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[schema_registry]\nurl = \"http://127.0.0.1:8081\"\nusername = \"svc\"\npassword = \"hunter2\"\n\
             [server.tables.t]\ntable = \"/t\"\n\
             [server.kafka.topics.a]\ntable = \"t\"\nformat = \"avro\"\n\
             [server.kafka.topics.j]\ntable = \"t\"\n",
        )
        .unwrap();
        let c = Config::load_with_env(Some(path.as_path()), env(&[])).unwrap();
        let topics = &c.server.kafka.as_ref().unwrap().topics;
        assert_eq!(topics["a"].schema_registry.as_ref().map(|r| r.url.as_str()), Some("http://127.0.0.1:8081"));
        assert!(topics["j"].schema_registry.is_none(), "JSON topics read no registry");
        let shown = c.to_redacted_toml();
        assert!(!shown.contains("hunter2") && shown.contains("svc"), "{shown}");
    }

    #[test]
    fn resolved_kafka_settings_show_every_field_but_secrets() {
        let mut c = Config::load_with_env(None, env(&[])).unwrap();
        let mut p = PipelineConfig::new("/t", "user:pw@broker:9092", "t");
        p.kafka.properties.insert("sasl.password".into(), "hunter2".into());
        c.pipelines.insert("p".into(), p);
        let resolved = c.resolved_pipelines().unwrap();
        let shown = format!("{:?}", resolved[0].source);
        assert!(shown.contains("stall_timeout") && shown.contains("stop_at_end"), "{shown}");
        assert!(!shown.contains("hunter2") && !shown.contains("pw@"), "{shown}");
    }

    #[test]
    fn unknown_keys_and_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(&f, "[storage]\nallow_absolute_pathz = true\n").unwrap();
        let e = Config::load_with_env(Some(&f), env(&[])).unwrap_err();
        assert!(e.to_string().contains("allow_absolute_pathz"), "{e}");
        assert!(Config::load_with_env(Some(&dir.path().join("missing.toml")), env(&[])).is_err());
        assert!(Config::load_with_env(None, env(&[("DELTABUS__LOG__FORMAT", "yaml")])).is_err());
    }

    #[test]
    fn a_refused_value_names_its_key_and_choices_but_not_the_value() {
        let e = Config::load_with_env(None, env(&[("DELTABUS__LOG__FORMAT", "sëcret")])).unwrap_err();
        let Error::InvalidConfig { key, why } = &e else { panic!("{e:?}") };
        assert_eq!((key.as_str(), why.as_str()), ("log.format", "\"<redacted>\" is not text or json"));
    }
}
