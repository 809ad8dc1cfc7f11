//! `[server]`: push ingest over HTTP (`deltabus serve`, and `deltabus run` when tables are
//! configured).
//!
//! Producers `POST /v1/tables/{name}/records`; `{name}` is a key of `[server.tables]`, never a
//! path or URL. Each table names its Delta table and how it is created and evolved. Bearer
//! tokens are never written in the file: each entry of `tokens` is `env:VARIABLE` or
//! `file:PATH` (one token per line), read once at start. Global tokens open every table; a
//! table's own tokens open only that table. Without any token the server takes anonymous
//! requests (it listens on 127.0.0.1 unless told otherwise).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::common::units::{ByteSize, HumanDuration};
use crate::error::{Error, Result};

/// What a push request holds of `server.max_buffered`, in multiples of its body, from when it
/// is admitted until it is answered: the body, its copy and tape while decoding (the peak, about
/// five bodies in a heap profile of 4 MiB JSON bodies), then the rows and their share of the
/// commit's Parquet encoding.
pub const HOLD_FACTOR: u64 = 6;
/// `[server]` as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// `host:port` to listen on.
    pub listen: String,
    /// Bearer tokens accepted for every table: `env:VARIABLE` or `file:PATH` entries.
    pub tokens: Vec<String>,
    /// PEM certificate chain and private key: TLS (HTTP/1.1 and HTTP/2 by ALPN) when both set.
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    /// Requests arriving within this window of the first one land in one commit.
    pub commit_window: HumanDuration,
    /// A commit closes early once its requests hold this many bytes.
    pub max_commit_bytes: ByteSize,
    /// Largest request body (413 above it).
    pub max_body: ByteSize,
    /// Longest JSON line (413 naming the line above it).
    pub max_line: ByteSize,
    /// Bytes all requests in flight may hold (each holds [`HOLD_FACTOR`] times its body: the
    /// bytes, their decoding, the rows and their Parquet encoding); past it requests are
    /// answered 429 with `Retry-After`.
    pub max_buffered: ByteSize,
    /// A client must send its headers, and then its body, within this long (408 otherwise).
    pub read_timeout: HumanDuration,
    /// The tables producers may write, by name.
    pub tables: BTreeMap<String, ServerTable>,
    /// `[server.kafka]`: a Kafka-protocol listener whose topics are these tables.
    pub kafka: Option<super::kafka::KafkaListenerConfig>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:8080".into(),
            tokens: Vec::new(),
            tls_cert: None,
            tls_key: None,
            commit_window: HumanDuration::from_millis(100),
            max_commit_bytes: ByteSize(64 << 20),
            max_body: ByteSize(64 << 20),
            max_line: ByteSize(1 << 20),
            max_buffered: ByteSize(512 << 20),
            read_timeout: HumanDuration::from_secs(30),
            tables: BTreeMap::new(),
            kafka: None,
        }
    }
}

/// `[server.tables.<name>]`
#[derive(Debug, Clone, Deserialize, Serialize, Default, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerTable {
    /// URL or path of the Delta table.
    pub table: String,
    /// Create the table from the first request's rows when it does not exist.
    pub create: bool,
    /// Delta schema (JSON) of a new table; default: inferred from the first request.
    pub schema: Option<String>,
    /// Partition columns of a new table (as `write --partition-by`).
    pub partition_by: Vec<String>,
    /// Clustering columns of a new table (as `write --cluster-by`).
    pub cluster_by: Vec<String>,
    /// Table properties of a new table.
    pub properties: BTreeMap<String, String>,
    /// Add new nullable columns found in the records to the table schema.
    pub evolve_schema: bool,
    /// JSON fields that land as `variant` columns whatever their shape (as a pipeline's).
    pub variant_columns: Vec<String>,
    /// The `variant` column the whole JSON record lands in (as a pipeline's).
    pub record_variant: Option<String>,
    /// A Delta table for the bad lines of requests that ask for it (`?bad_lines=dead_letter`).
    pub dead_letters: Option<String>,
    /// Key columns (strings, integers, decimals, dates or timestamps): rows upsert by key instead of appending, as keyed
    /// pipelines do, and Kafka tombstones (a null value) delete their record key's row.
    pub key_columns: Vec<String>,
    /// Tokens that open this table only (`env:` / `file:` entries).
    pub tokens: Vec<String>,
}

/// `[server]`, checked: addresses parsed, durations and sizes as numbers, tokens read.
#[derive(Clone)]
pub struct ResolvedServer {
    pub listen: std::net::SocketAddr,
    pub tls: Option<(String, String)>,
    pub commit_window: Duration,
    pub max_commit_bytes: u64,
    pub max_body: usize,
    pub max_line: usize,
    pub max_buffered: u64,
    pub read_timeout: Duration,
    /// Tokens that open every table.
    pub tokens: Vec<String>,
    pub tables: BTreeMap<String, ResolvedTable>,
    pub kafka: Option<super::kafka::ResolvedKafka>,
}

/// One table of the server, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedTable {
    pub name: String,
    pub settings: ServerTable,
    pub schema: Option<crate::delta::schema::StructType>,
    /// The fields that land as variant columns.
    pub variants: super::variants::Variants,
    /// Tokens that open this table only.
    pub tokens: Vec<String>,
}

impl std::fmt::Debug for ResolvedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedServer")
            .field("listen", &self.listen)
            .field("tls", &self.tls.is_some())
            .field("tokens", &self.tokens.len())
            .field("tables", &self.tables.keys().collect::<Vec<_>>())
            .field("kafka", &self.kafka)
            .finish()
    }
}

impl ResolvedServer {
    /// Whether any token is configured: then every HTTP request needs one.
    pub fn auth_required(&self) -> bool {
        !self.tokens.is_empty() || self.tables.values().any(|t| !t.tokens.is_empty())
    }
}

/// Whether `name` may name a table in a URL path (and in `DELTABUS__SERVER__TABLES__<NAME>`).
pub fn valid_table_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() <= 128
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
}

impl ServerConfig {
    /// Checks the settings and reads the tokens (`lookup` answers environment variables).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the key: an address that does not parse, half a TLS
    /// pair, a bad table name or URL, a token entry that is neither `env:` nor `file:` or
    /// names nothing.
    pub fn resolve(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<ResolvedServer> {
        let bad = |key: &str, why: String| Error::invalid_config(format!("server.{key}"), why);
        let listen = self
            .listen
            .parse()
            .map_err(|_| bad("listen", format!("{:?} is not host:port (e.g. 127.0.0.1:8080)", self.listen)))?;
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) if !c.is_empty() && !k.is_empty() => Some((c.clone(), k.clone())),
            (None, None) => None,
            (Some(c), Some(k)) if c.is_empty() && k.is_empty() => None,
            _ => return Err(bad("tls_cert", "tls_cert and tls_key go together".into())),
        };
        let positive = |key: &str, v: u64| if v == 0 { Err(bad(key, "must be above zero".into())) } else { Ok(v) };
        let max_body = positive("max_body", self.max_body.get())?;
        let max_line = positive("max_line", self.max_line.get())?;
        let max_buffered = positive("max_buffered", self.max_buffered.get())?;
        if max_buffered < HOLD_FACTOR * max_body {
            let why = format!("must hold at least one request: {HOLD_FACTOR} times max_body");
            return Err(bad("max_buffered", why));
        }
        if self.read_timeout.get().is_zero() {
            return Err(bad("read_timeout", "must be above zero".into()));
        }
        let tokens = read_secrets("tokens", &self.tokens, lookup)?;
        let mut tables = BTreeMap::new();
        for (name, t) in &self.tables {
            if !valid_table_name(name) {
                return Err(bad(
                    &format!("tables.{name}"),
                    "a table name is lowercase letters, digits, '_', '-' and '.', starting with a letter or digit"
                        .into(),
                ));
            }
            if t.table.trim().is_empty() {
                return Err(bad(&format!("tables.{name}.table"), "the Delta table's URL or path is required".into()));
            }
            let schema = match &t.schema {
                Some(s) => Some(
                    crate::delta::schema::StructType::parse(s)
                        .map_err(|e| bad(&format!("tables.{name}.schema"), e.to_string()))?,
                ),
                None => None,
            };
            if let Some(why) = crate::delta::clustering::settings_refusal(&t.partition_by, &t.cluster_by) {
                return Err(bad(&format!("tables.{name}.cluster_by"), why));
            }
            let mut seen = std::collections::BTreeSet::new();
            for k in &t.key_columns {
                if k.trim().is_empty() || !seen.insert(k) {
                    return Err(bad(&format!("tables.{name}.key_columns"), format!("{k:?}: empty or repeated")));
                }
                if let Some(s) = &schema {
                    if s.field(k).is_none() {
                        return Err(bad(&format!("tables.{name}.key_columns"), format!("{k:?} is not in the schema")));
                    }
                }
            }
            let variants = super::variants::Variants::new(&t.variant_columns, t.record_variant.as_deref())
                .and_then(|v| schema.as_ref().map_or(Ok(()), |s| v.check(s)).map(|()| v))
                .map_err(|e| bad(&format!("tables.{name}.variant_columns"), e))?;
            let own = read_secrets(&format!("tables.{name}.tokens"), &t.tokens, lookup)?;
            let resolved = ResolvedTable { name: name.clone(), settings: t.clone(), schema, variants, tokens: own };
            tables.insert(name.clone(), resolved);
        }
        let kafka = self.kafka.as_ref().map(|k| k.resolve(&self.tables, lookup)).transpose()?;
        if let Some(k) = &kafka {
            if (k.max_request as u64).saturating_mul(HOLD_FACTOR) > max_buffered {
                let why = format!("must hold at least one Kafka request: {HOLD_FACTOR} times server.kafka.max_request");
                return Err(bad("max_buffered", why));
            }
        }
        Ok(ResolvedServer {
            kafka,
            listen,
            tls,
            commit_window: self.commit_window.get(),
            max_commit_bytes: self.max_commit_bytes.get().max(1),
            max_body: usize::try_from(max_body).unwrap_or(usize::MAX),
            max_line: usize::try_from(max_line).unwrap_or(usize::MAX),
            max_buffered,
            read_timeout: self.read_timeout.get(),
            tokens,
            tables,
        })
    }
}

/// Reads a list of secrets (tokens, `user:password` lines) from `env:VARIABLE` and
/// `file:PATH` entries, parsed alike: one secret a line, surrounding spaces trimmed, empty
/// lines and `#` comments skipped. An entry that holds no secret is an error.
///
/// # Errors
/// [`Error::InvalidArgument`] for an unset variable, an unreadable or empty source, or an
/// entry of another form.
pub(crate) fn read_secrets(
    key: &str,
    entries: &[String],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>> {
    let bad = |why: String| Error::invalid_config(format!("server.{key}"), why);
    let mut out = Vec::new();
    for entry in entries {
        let (text, source) = if let Some(var) = entry.strip_prefix("env:") {
            let text = lookup(var).ok_or_else(|| bad(format!("environment variable {var} is not set")))?;
            (text, format!("environment variable {var}"))
        } else if let Some(path) = entry.strip_prefix("file:") {
            let text = std::fs::read_to_string(path).map_err(|e| bad(format!("file {path}: {e}")))?;
            (text, format!("file {path}"))
        } else {
            return Err(bad("each entry is env:VARIABLE or file:PATH (secrets are never written in the file)".into()));
        };
        let before = out.len();
        out.extend(secret_lines(&text).map(String::from));
        if out.len() == before {
            return Err(bad(format!("{source} holds no secret")));
        }
    }
    Ok(out)
}

/// The secrets of a text: one a line, trimmed; empty lines and `#` comments skipped.
fn secret_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn defaults_listen_on_loopback_without_tls_or_tokens() {
        let r = ServerConfig::default().resolve(&no_env).unwrap();
        assert_eq!(r.listen.to_string(), "127.0.0.1:8080");
        assert!(r.tls.is_none() && !r.auth_required());
        assert_eq!(r.commit_window, Duration::from_millis(100));
    }

    #[test]
    fn tokens_come_from_the_environment_and_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens");
        std::fs::write(&file, "# producers\nalpha\n\n  beta  \n").unwrap();
        let mut c = ServerConfig {
            tokens: vec!["env:PUSH_TOKEN".into(), format!("file:{}", file.display())],
            ..ServerConfig::default()
        };
        let env = |k: &str| (k == "PUSH_TOKEN").then(|| "s3cr3t".to_string());
        let r = c.resolve(&env).unwrap();
        assert_eq!(r.tokens, vec!["s3cr3t", "alpha", "beta"]);
        assert!(r.auth_required());
        assert!(!format!("{r:?}").contains("s3cr3t"), "tokens never printed");
        c.tokens = vec!["s3cr3t".into()];
        assert!(c.resolve(&env).unwrap_err().to_string().contains("env:VARIABLE or file:PATH"));
        c.tokens = vec!["env:MISSING".into()];
        assert!(c.resolve(&env).unwrap_err().to_string().contains("MISSING is not set"));
    }

    #[test]
    fn bad_settings_are_named() {
        let mut c = ServerConfig { listen: "localhost".into(), ..ServerConfig::default() };
        assert!(c.resolve(&no_env).unwrap_err().to_string().contains("server.listen"));
        c.listen = "127.0.0.1:0".into();
        c.tls_cert = Some("cert.pem".into());
        assert!(c.resolve(&no_env).unwrap_err().to_string().contains("go together"));
        c.tls_cert = None;
        c.tables.insert("Ünï".into(), ServerTable { table: "/t".into(), ..ServerTable::default() });
        assert!(c.resolve(&no_env).unwrap_err().to_string().contains("server.tables.Ünï"));
        c.tables.clear();
        c.tables.insert("events".into(), ServerTable::default());
        assert!(c.resolve(&no_env).unwrap_err().to_string().contains("tables.events.table"));
        c.max_buffered = ByteSize(1);
        assert!(c.resolve(&no_env).is_err());
    }

    #[test]
    fn table_names() {
        assert!(valid_table_name("events") && valid_table_name("2024.orders_eu-1"));
        assert!(!valid_table_name("") && !valid_table_name("Events") && !valid_table_name("../x"));
        assert!(!valid_table_name(".hidden") && !valid_table_name("a/b") && !valid_table_name(&"a".repeat(129)));
    }
}
