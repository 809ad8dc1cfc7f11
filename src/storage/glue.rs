//! AWS Glue registration of UniForm tables: a small client of the Glue JSON API (SigV4 by
//! object_store's signer, credentials from object_store's AWS chain: environment, web
//! identity, ECS and EC2 instance metadata) and the register-or-move step run after each
//! conversion.
//!
//! The pointer only moves forward: a Glue table already at this metadata file or a later one
//! is left alone, and a move is an `UpdateTable` conditioned on the `VersionId` read, retried
//! from a fresh read when another writer moved it first. Endpoint: `AWS_ENDPOINT_URL_GLUE`,
//! else `AWS_ENDPOINT_URL`, else `https://glue.<region>.amazonaws.com`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use object_store::aws::{AmazonS3Builder, AwsAuthorizer, AwsCredentialProvider};
use object_store::client::{HttpRequest, HttpRequestBody};
use serde_json::{json, Value};

use super::iceberg::IcebergState;
use crate::error::{Error, Result};
use crate::iceberg::glue::{delta_table_input, glue_target, iceberg_table_input, metadata_number, GlueTarget};
use crate::iceberg::metadata_file_name;

/// A Glue client for one region.
#[derive(Debug)]
struct Glue {
    http: reqwest::Client,
    endpoint: String,
    region: String,
    credentials: AwsCredentialProvider,
}

/// A Glue error answer: its type (`EntityNotFoundException`, ...) and message.
#[derive(Debug)]
struct GlueError {
    kind: String,
    message: String,
}

fn glue_failed(what: impl std::fmt::Display) -> Error {
    Error::Storage {
        path: "glue".into(),
        source: object_store::Error::Generic { store: "glue", source: what.to_string().into() },
    }
}

impl Glue {
    /// The process's client for `region` (credentials are cached by their provider).
    fn for_region(region: &str) -> Result<Arc<Glue>> {
        static CLIENTS: OnceLock<Mutex<HashMap<String, Arc<Glue>>>> = OnceLock::new();
        let mut clients = CLIENTS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = clients.get(region) {
            return Ok(c.clone());
        }
        let endpoint = std::env::var("AWS_ENDPOINT_URL_GLUE")
            .or_else(|_| std::env::var("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|_| format!("https://glue.{region}.amazonaws.com"));
        // object_store's credential chain; the bucket is never used.
        let s3 =
            AmazonS3Builder::from_env().with_bucket_name("glue").with_region(region).build().map_err(glue_failed)?;
        let client = Arc::new(Glue {
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()
                .map_err(glue_failed)?,
            endpoint,
            region: region.to_string(),
            credentials: s3.credentials().clone(),
        });
        clients.insert(region.to_string(), client.clone());
        Ok(client)
    }

    /// Calls `operation` with `body`: the answer, or Glue's error.
    async fn call(&self, operation: &str, body: &Value) -> Result<std::result::Result<Value, GlueError>> {
        let credential = self.credentials.get_credential().await.map_err(glue_failed)?;
        let payload = serde_json::to_vec(body).map_err(|e| Error::Internal(e.to_string()))?;
        let mut request: HttpRequest = http::Request::builder()
            .method("POST")
            .uri(&self.endpoint)
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", format!("AWSGlue.{operation}"))
            .body(HttpRequestBody::from(payload.clone()))
            .map_err(glue_failed)?;
        AwsAuthorizer::new(&credential, "glue", &self.region).try_authorize(&mut request, None).map_err(glue_failed)?;
        let mut send = self.http.post(&self.endpoint).body(payload);
        for (k, v) in request.headers() {
            send = send.header(k.as_str(), v.as_bytes());
        }
        let answer = send.send().await.map_err(glue_failed)?;
        let status = answer.status();
        let text = answer.text().await.map_err(glue_failed)?;
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(Ok(value));
        }
        let kind = value["__type"].as_str().unwrap_or("").rsplit('#').next().unwrap_or("").to_string();
        if kind.is_empty() {
            return Err(glue_failed(format!(
                "{operation}: HTTP {status}: {}",
                text.chars().take(200).collect::<String>()
            )));
        }
        let message = value["message"].as_str().or(value["Message"].as_str()).unwrap_or("").to_string();
        Ok(Err(GlueError { kind, message }))
    }

    /// The table, or `None` when Glue has no such table (or database).
    async fn get_table(&self, t: &GlueTarget, name: &str) -> Result<Option<Value>> {
        let mut body = json!({"DatabaseName": t.database, "Name": name});
        with_catalog(&mut body, t);
        match self.call("GetTable", &body).await? {
            Ok(v) => Ok(Some(v["Table"].clone())),
            Err(e) if e.kind == "EntityNotFoundException" => Ok(None),
            Err(e) => Err(glue_failed(format!("GetTable {}.{name}: {}: {}", t.database, e.kind, e.message))),
        }
    }

    /// Creates the table; `false` when another writer created it first.
    async fn create_table(&self, t: &GlueTarget, input: &Value) -> Result<bool> {
        let mut body = json!({"DatabaseName": t.database, "TableInput": input});
        with_catalog(&mut body, t);
        for _ in 0..2 {
            match self.call("CreateTable", &body).await? {
                Ok(_) => return Ok(true),
                Err(e) if e.kind == "AlreadyExistsException" => return Ok(false),
                Err(e) if e.kind == "EntityNotFoundException" => {
                    // The database is missing: create it, then the table.
                    let mut db = json!({"DatabaseInput": {"Name": t.database}});
                    with_catalog(&mut db, t);
                    match self.call("CreateDatabase", &db).await? {
                        Ok(_) => {}
                        Err(e) if e.kind == "AlreadyExistsException" => {}
                        Err(e) => {
                            return Err(glue_failed(format!(
                                "CreateDatabase {}: {}: {}",
                                t.database, e.kind, e.message
                            )))
                        }
                    }
                }
                Err(e) => return Err(glue_failed(format!("CreateTable {}: {}: {}", t.database, e.kind, e.message))),
            }
        }
        Err(glue_failed(format!("CreateTable {}: the database could not be created", t.database)))
    }
}

fn with_catalog(body: &mut Value, t: &GlueTarget) {
    if let Some(c) = &t.catalog_id {
        body["CatalogId"] = json!(c);
    }
}

/// What a registration did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Registered {
    pub database: String,
    pub table: String,
    pub delta_table: Option<String>,
    pub metadata_location: String,
    /// Whether the Iceberg table was created or its pointer moved by this call.
    pub moved: bool,
}

impl Registered {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "database": self.database,
            "table": self.table,
            "deltaTable": self.delta_table,
            "metadataLocation": self.metadata_location,
            "moved": self.moved,
        })
    }
}

impl super::iceberg::Uniform<'_> {
    /// [`Table::register_glue`] for a converted snapshot.
    ///
    /// # Errors
    /// As [`Table::register_glue`].
    pub(crate) async fn register_uniform(
        &self,
        at: &super::iceberg::DeltaVersion<'_>,
        state: &IcebergState,
    ) -> Result<Option<Registered>> {
        let schema = crate::delta::iceberg_compat::schema::iceberg_schema(at.schema, 0)?;
        self.register_glue(&at.metadata.configuration, state, &schema).await
    }

    /// Registers the converted state in Glue, or moves the Glue pointer to it, when the
    /// table's properties ask for it (`None`: they do not).
    ///
    /// # Errors
    /// Glue errors (one line with the operation and Glue's answer), a name taken by a table
    /// that is not this one's Iceberg table.
    pub(crate) async fn register_glue(
        &self,
        configuration: &HashMap<String, String>,
        state: &IcebergState,
        iceberg_schema: &Value,
    ) -> Result<Option<Registered>> {
        let region_env = std::env::var("AWS_REGION").or_else(|_| std::env::var("AWS_DEFAULT_REGION")).ok();
        let Some(target) = glue_target(configuration, self.url(), region_env.as_deref()) else { return Ok(None) };
        let glue = Glue::for_region(&target.region)?;
        let location = self.url().trim_end_matches('/').to_string();
        let metadata_location = format!("{location}/metadata/{}", metadata_file_name(state.metadata_version));
        let mut moved = false;
        let mut settled = false;
        for _ in 0..crate::common::retry::CATALOG_SYNCS {
            let Some(current) = glue.get_table(&target, &target.table).await? else {
                let input = iceberg_table_input(&target.table, &location, &metadata_location, None, iceberg_schema);
                if glue.create_table(&target, &input).await? {
                    moved = true;
                    settled = true;
                    break;
                }
                continue;
            };
            let params = &current["Parameters"];
            if !params["table_type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case("ICEBERG")) {
                return Err(Error::InvalidArgument(format!(
                    "Glue table {}.{} exists and is not an Iceberg table: name another with deltabus.glue.table",
                    target.database, target.table
                )));
            }
            let there = params["metadata_location"].as_str().unwrap_or_default();
            if !there.starts_with(&format!("{location}/metadata/")) && !there.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "Glue table {}.{} points at another table ({there}): name another with deltabus.glue.table",
                    target.database, target.table
                )));
            }
            if metadata_number(there).is_some_and(|n| n >= state.metadata_version) {
                settled = true;
                break;
            }
            let input = iceberg_table_input(
                &target.table,
                &location,
                &metadata_location,
                Some(there).filter(|p| !p.is_empty()),
                iceberg_schema,
            );
            let mut body = json!({"DatabaseName": target.database, "TableInput": input});
            if let Some(v) = current["VersionId"].as_str() {
                body["VersionId"] = json!(v);
            }
            with_catalog(&mut body, &target);
            match glue.call("UpdateTable", &body).await? {
                Ok(_) => {
                    moved = true;
                    settled = true;
                    break;
                }
                // Another writer moved it first: read again.
                Err(e) if e.kind == "ConcurrentModificationException" => continue,
                Err(e) => {
                    return Err(glue_failed(format!(
                        "UpdateTable {}.{}: {}: {}",
                        target.database, target.table, e.kind, e.message
                    )))
                }
            }
        }
        if !settled {
            return Err(glue_failed(format!(
                "{}.{}: other writers kept moving the pointer; the next commit or `deltabus uniform` tries again",
                target.database, target.table
            )));
        }
        if let Some(name) = &target.delta_table {
            if glue.get_table(&target, name).await?.is_none() {
                glue.create_table(&target, &delta_table_input(name, &location, iceberg_schema)).await?;
            }
        }
        Ok(Some(Registered {
            database: target.database,
            table: target.table,
            delta_table: target.delta_table,
            metadata_location,
            moved,
        }))
    }
}
