//! A client of the Confluent Schema Registry REST API (also served by Apicurio's and
//! Redpanda's compatibility endpoints): writer schemas by id, cached for the process.
//!
//! - `GET {url}/schemas/ids/{id}` → `{"schema": "...", "schemaType": "AVRO"|"PROTOBUF"|"JSON",
//!   "references": [{"name", "subject", "version"}]}` (a missing `schemaType` means Avro);
//!   each reference is fetched with `GET {url}/subjects/{subject}/versions/{version}`,
//!   recursively (at most 16 deep), and travels with the schema.
//! - `GET {url}/subjects/{subject}/versions/latest`: a subject's latest schema (a new table's
//!   schema before any record arrives).
//! - `api = "apicurio"`: Apicurio's own serdes — records framed with an 8-byte global id
//!   ([`Framing::Apicurio`]), schemas from `GET {url}/apis/registry/v2/ids/globalIds/{id}`
//!   (the schema text, its type in `X-Registry-ArtifactType`).
//! - Basic (`username`/`password`) or bearer (`token`) authentication; TLS for `https://`
//!   (the system's roots, plus `ca_file`'s); a timeout per request.
//! - A registry that is down or slow is retried at a growing backoff (1 s to 30 s) for as
//!   long as it takes: the pipeline waits and its records stay in Kafka. Only an id the
//!   registry says it does not know (404) or a schema it cannot parse make records dead
//!   letters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use crate::config::registry::{RegistryApi, RegistryConfig};

use crate::common::throttle::LogThrottle;
use crate::error::{Error, Result};

/// How a framed record names its writer schema: magic byte `0`, then the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Framing {
    /// A 4-byte big-endian schema id (Confluent, Apicurio's Confluent-compatible mode).
    Confluent,
    /// An 8-byte big-endian global id (Apicurio's default serdes).
    Apicurio,
}

impl Framing {
    /// The id and the body of a framed payload; `None` when it is not framed so.
    pub(crate) fn split(self, payload: &[u8]) -> Option<(u64, &[u8])> {
        match (self, payload) {
            (Framing::Confluent, [0, a, b, c, d, body @ ..]) => {
                Some((u64::from(u32::from_be_bytes([*a, *b, *c, *d])), body))
            }
            (Framing::Apicurio, [0, id @ ..]) if id.len() >= 8 => {
                let (id, body) = id.split_at(8);
                Some((u64::from_be_bytes(id.try_into().ok()?), body))
            }
            _ => None,
        }
    }

    /// The dead-letter reason of a payload that is not framed.
    pub(crate) fn unframed(self) -> &'static str {
        match self {
            Framing::Confluent => "not in the Confluent wire format (magic byte 0, then a 4-byte schema id)",
            Framing::Apicurio => "not in Apicurio's wire format (magic byte 0, then an 8-byte global id)",
        }
    }
}

/// What a registered schema is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum SchemaType {
    Avro,
    Protobuf,
    Json,
}

/// A writer schema from the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct RegisteredSchema {
    pub id: u64,
    pub schema_type: SchemaType,
    pub schema: String,
    /// The schemas it references (Avro named types, Protobuf imports), by reference name,
    /// each with its own references.
    pub references: Vec<(String, Arc<RegisteredSchema>)>,
}

impl RegisteredSchema {
    /// A schema without references.
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(id: u64, schema_type: SchemaType, schema: impl Into<String>) -> RegisteredSchema {
        RegisteredSchema { id, schema_type, schema: schema.into(), references: Vec::new() }
    }

    /// Every schema it references, directly or not, once each (by reference name), in the
    /// order they are first met.
    pub(crate) fn all_references(&self) -> Vec<(&str, &RegisteredSchema)> {
        let mut out: Vec<(&str, &RegisteredSchema)> = Vec::new();
        let mut stack: Vec<&RegisteredSchema> = vec![self];
        while let Some(s) = stack.pop() {
            for (name, r) in &s.references {
                if !out.iter().any(|(n, _)| n == name) {
                    out.push((name, r));
                    stack.push(r);
                }
            }
        }
        out
    }
}

#[derive(Deserialize)]
struct SchemaResponse {
    schema: String,
    #[serde(rename = "schemaType", default)]
    schema_type: Option<String>,
    #[serde(default)]
    references: Vec<Reference>,
    /// Present in subject-version answers.
    #[serde(default)]
    id: Option<u64>,
}

#[derive(Deserialize)]
struct Reference {
    name: String,
    subject: String,
    version: i64,
}

/// How deep references may nest.
const MAX_REFERENCE_DEPTH: usize = 16;

/// Why a schema could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Unavailable {
    /// The registry does not know the id (or a schema it references): the record is a dead
    /// letter.
    Unknown(String),
}

/// One lookup's outcome: the schema, a permanent refusal (the reason), or a transient failure
/// (retried).
type Lookup = std::result::Result<std::result::Result<RegisteredSchema, String>, String>;

/// The registry clients of a process: one per registry configuration, so that every pipeline
/// and routed table shares one cache and fetches each schema id once.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Registries(Arc<Mutex<HashMap<String, Arc<RegistryClient>>>>);

impl Registries {
    /// The client of `config`, made on first use.
    ///
    /// # Errors
    /// As [`RegistryClient::new`].
    pub(crate) fn client(&self, config: &RegistryConfig) -> Result<Arc<RegistryClient>> {
        let key = serde_json::to_string(config).map_err(|e| Error::Internal(format!("registry key: {e}")))?;
        let mut clients = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = clients.get(&key) {
            return Ok(c.clone());
        }
        let client = Arc::new(RegistryClient::new(config.clone())?);
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// How many clients were made.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().map_or(0, |c| c.len())
    }
}

/// A cached client of one registry.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct RegistryClient {
    config: RegistryConfig,
    http: reqwest::Client,
    cache: Mutex<HashMap<u64, Arc<RegisteredSchema>>>,
    framing: Framing,
    throttle: LogThrottle,
}

impl RegistryClient {
    /// A client for `config`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty or unusable URL.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(config: RegistryConfig) -> Result<RegistryClient> {
        let url = config.url.trim_end_matches('/').to_string();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::InvalidArgument(format!(
                "schema_registry.url {:?}: expected http:// or https://",
                crate::config::redact::without_userinfo(&url)
            )));
        }
        let framing = match config.api {
            RegistryApi::Confluent => Framing::Confluent,
            RegistryApi::Apicurio => Framing::Apicurio,
        };
        if framing == Framing::Apicurio && config.subject.is_some() {
            return Err(Error::InvalidArgument(
                "schema_registry.subject: subject lookups use the Confluent API (api = \"confluent\")".into(),
            ));
        }
        let mut builder = reqwest::Client::builder().timeout(config.timeout.get());
        if let Some(path) = &config.ca_file {
            let bad = |e: String| Error::InvalidArgument(format!("schema_registry.ca_file {path:?}: {e}"));
            let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad("no PEM certificate in it".into()));
            }
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        let http = builder.build().map_err(|e| Error::InvalidArgument(format!("schema_registry: {e}")))?;
        Ok(RegistryClient {
            config: RegistryConfig { url, ..config },
            http,
            cache: Mutex::new(HashMap::new()),
            framing,
            throttle: LogThrottle::default(),
        })
    }

    /// How this registry's records are framed.
    pub(crate) fn framing(&self) -> Framing {
        self.framing
    }

    /// A client whose cache already holds `schemas` (benchmarks; registries answering slowly).
    ///
    /// # Errors
    /// As [`RegistryClient::new`].
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn preloaded(config: RegistryConfig, schemas: Vec<RegisteredSchema>) -> Result<RegistryClient> {
        let client = RegistryClient::new(config)?;
        {
            let mut cache = client.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for s in schemas {
                cache.insert(s.id, Arc::new(s));
            }
        }
        Ok(client)
    }

    /// The schema registered under `id` (with its references), from the cache or the
    /// registry (waiting out outages).
    ///
    /// # Errors
    /// [`Unavailable::Unknown`] when the registry answers that it has no such id, or no schema
    /// the id's schema references.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn schema(&self, id: u64) -> std::result::Result<Arc<RegisteredSchema>, Unavailable> {
        if let Some(s) = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&id) {
            return Ok(s.clone());
        }
        let path = match self.framing {
            Framing::Confluent => format!("/schemas/ids/{id}"),
            Framing::Apicurio => format!("/apis/registry/v2/ids/globalIds/{id}"),
        };
        let s = Arc::new(self.retried(&path, Some(id)).await?);
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id, s.clone());
        Ok(s)
    }

    /// The latest version registered under `subject` (with its references), waiting out
    /// outages; not cached (a later call sees a newer version).
    ///
    /// # Errors
    /// [`Unavailable::Unknown`] when the registry has no such subject.
    pub(crate) async fn latest(&self, subject: &str) -> std::result::Result<Arc<RegisteredSchema>, Unavailable> {
        Ok(Arc::new(self.retried(&format!("/subjects/{}/versions/latest", encode(subject)), None).await?))
    }

    async fn retried(&self, path: &str, id: Option<u64>) -> std::result::Result<RegisteredSchema, Unavailable> {
        let mut failures = 0u32;
        loop {
            match self.lookup(path, id, 0).await {
                Ok(found) => {
                    if self.throttle.recovered("registry") {
                        tracing::info!(url = %crate::config::redact::without_userinfo(&self.config.url), "schema_registry.reachable");
                    }
                    return found.map_err(Unavailable::Unknown);
                }
                Err(e) => {
                    if let Some(held) = self.throttle.allow("registry") {
                        tracing::warn!(url = %crate::config::redact::without_userinfo(&self.config.url), error = %e, held,
                            "schema_registry.unavailable: consumption waits; records stay in Kafka");
                    }
                    tokio::time::sleep(crate::common::backoff::OUTAGES.delay(failures)).await;
                    failures = failures.saturating_add(1);
                }
            }
        }
    }

    /// One schema and, recursively, the schemas it references.
    fn lookup<'a>(
        &'a self,
        path: &'a str,
        id: Option<u64>,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Lookup> + Send + 'a>> {
        Box::pin(async move {
            let what = match id {
                Some(id) => format!("schema id {id}"),
                None => format!("schema {}", path.trim_start_matches("/subjects/")),
            };
            let Some(parsed) = self.get(path).await? else {
                return Ok(Err(format!("{what} is not in the registry")));
            };
            let schema_type = match parsed.schema_type.as_deref().unwrap_or("AVRO") {
                "AVRO" => SchemaType::Avro,
                "PROTOBUF" => SchemaType::Protobuf,
                "JSON" => SchemaType::Json,
                other => return Ok(Err(format!("{what} has the unknown type {other}"))),
            };
            let mut references = Vec::new();
            for r in &parsed.references {
                if depth >= MAX_REFERENCE_DEPTH {
                    return Ok(Err(format!("{what}: references nest deeper than {MAX_REFERENCE_DEPTH}")));
                }
                let path = format!("/subjects/{}/versions/{}", encode(&r.subject), r.version);
                match self.lookup(&path, None, depth + 1).await? {
                    Ok(s) => references.push((r.name.clone(), Arc::new(s))),
                    Err(why) => return Ok(Err(format!("{what} references {}: {why}", r.name))),
                }
            }
            let id = id.or(parsed.id).unwrap_or(0);
            Ok(Ok(RegisteredSchema { id, schema_type, schema: parsed.schema, references }))
        })
    }

    /// One request: `Ok(None)` for a 404.
    async fn get(&self, path: &str) -> std::result::Result<Option<SchemaResponse>, String> {
        let mut request = self.http.get(format!("{}{path}", self.config.url));
        if let Some(user) = &self.config.username {
            request = request.basic_auth(user, self.config.password.as_deref());
        } else if let Some(token) = &self.config.token {
            request = request.bearer_auth(token);
        }
        // (Errors without the URL: it may carry credentials.)
        let response = request.send().await.map_err(|e| e.without_url().to_string())?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        if self.framing == Framing::Apicurio {
            // Apicurio answers with the schema itself; its type is a header.
            let kind = response
                .headers()
                .get("x-registry-artifacttype")
                .and_then(|v| v.to_str().ok())
                .map(str::to_ascii_uppercase);
            let schema = response.text().await.map_err(|e| e.without_url().to_string())?;
            let schema_type = kind.or_else(|| Some(guess_type(&schema).to_string()));
            return Ok(Some(SchemaResponse { schema, schema_type, references: Vec::new(), id: None }));
        }
        let body = response.bytes().await.map_err(|e| e.without_url().to_string())?;
        serde_json::from_slice(&body).map(Some).map_err(|e| format!("unreadable answer for {path}: {e}"))
    }
}

/// The type of a schema Apicurio served without its type header: `.proto` text, a JSON
/// Schema, or Avro.
fn guess_type(schema: &str) -> &'static str {
    let t = schema.trim_start();
    if !t.starts_with('{') {
        "PROTOBUF"
    } else if t.contains("\"$schema\"") || t.contains("\"properties\"") {
        "JSON"
    } else {
        "AVRO"
    }
}

/// A subject name as one URL path segment.
fn encode(subject: &str) -> String {
    percent_encoding::utf8_percent_encode(subject, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Log lines written while a test runs.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A registry that answers 503 once, then the schema.
    async fn flaky_registry() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        tokio::spawn(async move {
            for answer in 0.. {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let mut buf = vec![0u8; 4096];
                let _ = s.read(&mut buf).await;
                let (status, body) = if answer == 0 {
                    ("503 Service Unavailable", "{}")
                } else {
                    ("200 OK", r#"{"schema":"\"string\""}"#)
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            }
        });
        format!("http://svc:hunter2@{addr}")
    }

    #[test]
    fn logs_never_show_the_registry_credentials() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
        tracing::subscriber::with_default(subscriber, || {
            rt.block_on(async {
                let url = flaky_registry().await;
                let client = RegistryClient::new(RegistryConfig { url, ..RegistryConfig::default() })
                    .unwrap_or_else(|e| panic!("{e}"));
                let schema = client.schema(7).await.unwrap_or_else(|_| panic!("schema 7"));
                assert_eq!(schema.schema, "\"string\"");
            });
        });
        let text =
            String::from_utf8_lossy(&captured.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)).into_owned();
        assert!(text.contains("schema_registry.unavailable") && text.contains("schema_registry.reachable"), "{text}");
        assert!(!text.contains("hunter2"), "credentials in the log:\n{text}");
    }
}
