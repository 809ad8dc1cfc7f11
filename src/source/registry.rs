//! A client of the Confluent Schema Registry REST API (also served by Apicurio's and
//! Redpanda's compatibility endpoints): writer schemas by id, cached for the process.
//!
//! - `GET {url}/schemas/ids/{id}` → `{"schema": "...", "schemaType": "AVRO"|"PROTOBUF"|"JSON"}`
//!   (a missing `schemaType` means Avro).
//! - Basic (`username`/`password`) or bearer (`token`) authentication; TLS for `https://`;
//!   a timeout per request.
//! - A registry that is down or slow is retried at a growing backoff (1 s to 30 s) for as
//!   long as it takes: the pipeline waits and its records stay in Kafka. Only an id the
//!   registry says it does not know (404) or a schema it cannot parse make records dead
//!   letters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::common::throttle::LogThrottle;
use crate::common::units::HumanDuration;
use crate::error::{Error, Result};

/// `[pipelines.<name>.schema_registry]`
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// Base URL, e.g. `http://registry:8081`.
    pub url: String,
    /// Basic authentication.
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    /// Bearer authentication.
    #[serde(default)]
    pub token: Option<String>,
    /// Per request.
    #[serde(default = "default_timeout")]
    pub timeout: HumanDuration,
}

fn default_timeout() -> HumanDuration {
    HumanDuration::from_secs(10)
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig { url: String::new(), username: None, password: None, token: None, timeout: default_timeout() }
    }
}

impl std::fmt::Debug for RegistryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryConfig")
            .field("url", &crate::config::redact::without_userinfo(&self.url))
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What a registered schema is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaType {
    Avro,
    Protobuf,
    Json,
}

/// A writer schema from the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredSchema {
    pub id: u32,
    pub schema_type: SchemaType,
    pub schema: String,
}

#[derive(Deserialize)]
struct SchemaResponse {
    schema: String,
    #[serde(rename = "schemaType", default)]
    schema_type: Option<String>,
}

/// Why a schema could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The registry does not know the id: the record is a dead letter.
    Unknown(String),
}

/// A cached client of one registry.
#[derive(Debug)]
pub struct RegistryClient {
    config: RegistryConfig,
    http: reqwest::Client,
    cache: Mutex<HashMap<u32, Arc<RegisteredSchema>>>,
    throttle: LogThrottle,
}

impl RegistryClient {
    /// A client for `config`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty or unusable URL.
    pub fn new(config: RegistryConfig) -> Result<RegistryClient> {
        let url = config.url.trim_end_matches('/').to_string();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::InvalidArgument(format!(
                "schema_registry.url {:?}: expected http:// or https://",
                crate::config::redact::without_userinfo(&url)
            )));
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout.get())
            .build()
            .map_err(|e| Error::InvalidArgument(format!("schema_registry: {e}")))?;
        Ok(RegistryClient {
            config: RegistryConfig { url, ..config },
            http,
            cache: Mutex::new(HashMap::new()),
            throttle: LogThrottle::default(),
        })
    }

    /// A client whose cache already holds `schemas` (benchmarks; registries answering slowly).
    ///
    /// # Errors
    /// As [`RegistryClient::new`].
    pub fn preloaded(config: RegistryConfig, schemas: Vec<RegisteredSchema>) -> Result<RegistryClient> {
        let client = RegistryClient::new(config)?;
        {
            let mut cache = client.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for s in schemas {
                cache.insert(s.id, Arc::new(s));
            }
        }
        Ok(client)
    }

    /// The schema registered under `id`, from the cache or the registry (waiting out outages).
    ///
    /// # Errors
    /// [`Unavailable::Unknown`] when the registry answers that it has no such id.
    pub async fn schema(&self, id: u32) -> std::result::Result<Arc<RegisteredSchema>, Unavailable> {
        if let Some(s) = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&id) {
            return Ok(s.clone());
        }
        let mut backoff = Duration::from_secs(1);
        loop {
            match self.fetch(id).await {
                Ok(Some(s)) => {
                    if self.throttle.recovered("registry") {
                        tracing::info!(url = %self.config.url, "schema_registry.reachable");
                    }
                    let s = Arc::new(s);
                    self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id, s.clone());
                    return Ok(s);
                }
                Ok(None) => return Err(Unavailable::Unknown(format!("schema id {id} is not in the registry"))),
                Err(e) => {
                    if let Some(held) = self.throttle.allow("registry") {
                        tracing::warn!(url = %crate::config::redact::without_userinfo(&self.config.url), error = %e, held,
                            "schema_registry.unavailable: consumption waits; records stay in Kafka");
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
            }
        }
    }

    /// One request: `Ok(None)` for a 404.
    async fn fetch(&self, id: u32) -> std::result::Result<Option<RegisteredSchema>, String> {
        let mut request = self.http.get(format!("{}/schemas/ids/{id}", self.config.url));
        if let Some(user) = &self.config.username {
            request = request.basic_auth(user, self.config.password.as_deref());
        } else if let Some(token) = &self.config.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        let parsed: SchemaResponse =
            serde_json::from_slice(&body).map_err(|e| format!("unreadable answer for id {id}: {e}"))?;
        let schema_type = match parsed.schema_type.as_deref().unwrap_or("AVRO") {
            "AVRO" => SchemaType::Avro,
            "PROTOBUF" => SchemaType::Protobuf,
            "JSON" => SchemaType::Json,
            other => return Err(format!("schema id {id} has the unknown type {other}")),
        };
        Ok(Some(RegisteredSchema { id, schema_type, schema: parsed.schema }))
    }
}
