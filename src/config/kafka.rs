//! `[server.kafka]`: the Kafka-protocol listener beside push ingest (`deltabus serve`).
//!
//! Kafka clients produce into, and fetch from, topics that are tables: each entry of
//! `[server.kafka.topics]` names a table of `[server.tables]` (its creation, schema evolution,
//! dead letters and commit grouping are that table's), a payload format and a number of
//! virtual partitions. SASL/PLAIN credentials are never written in the file: each entry of
//! `users` is `env:VARIABLE` or `file:PATH` holding `user:password` lines, read once at start.
//! Without any user the listener takes unauthenticated clients (it listens on 127.0.0.1 unless
//! told otherwise).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::common::units::{ByteSize, HumanDuration};
use crate::error::{Error, Result};

/// `[server.kafka]` as written.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaListenerConfig {
    /// `host:port` to listen on.
    pub listen: String,
    /// `host:port` clients are told to connect to (Metadata, FindCoordinator); default: the
    /// address listened on.
    pub advertised: Option<String>,
    /// SASL users (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN): `env:VARIABLE` or `file:PATH`
    /// entries of `user:password` lines.
    pub users: Vec<String>,
    /// SASL/PLAIN sends the password itself: it is offered only over TLS unless this is set.
    pub plain_without_tls: bool,
    /// PEM certificate chain and private key: TLS when both set.
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    /// PEM CA certificates: a client presenting a certificate they sign is authenticated as
    /// the certificate's common name (no SASL needed). Needs TLS.
    pub tls_client_ca: Option<String>,
    /// Who may do what, by principal (a SASL user, a client certificate's common name, or
    /// `ANONYMOUS`); with any entry, everything not granted is denied.
    pub acls: BTreeMap<String, KafkaAcl>,
    /// Largest request frame; a larger one closes the connection.
    pub max_request: ByteSize,
    /// How long a consumer group's committed offsets hold VACUUM and log cleanup back after
    /// its last commit (Kafka's `offsets.retention.minutes`, 7 days by default); past it the
    /// group's registration no longer counts (`deltabus followers` shows it expired).
    pub offsets_retention: HumanDuration,
    /// The topics clients may use, by name.
    pub topics: BTreeMap<String, KafkaTopic>,
}

impl Default for KafkaListenerConfig {
    fn default() -> Self {
        KafkaListenerConfig {
            listen: "127.0.0.1:9092".into(),
            advertised: None,
            users: Vec::new(),
            plain_without_tls: false,
            tls_cert: None,
            tls_key: None,
            tls_client_ca: None,
            acls: BTreeMap::new(),
            max_request: ByteSize(64 << 20),
            offsets_retention: HumanDuration(std::time::Duration::from_secs(7 * 24 * 3600)),
            topics: BTreeMap::new(),
        }
    }
}

/// One principal's permissions: topics and groups by name, by prefix (`events-*`) or all (`*`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaAcl {
    /// Topics it may produce to (and see).
    pub produce: Vec<String>,
    /// Topics whose change feed it may fetch and list offsets of (and see).
    pub fetch: Vec<String>,
    /// Topics it may see in Metadata, without producing or fetching.
    pub describe: Vec<String>,
    /// Consumer groups whose offsets it may commit and fetch.
    pub groups: Vec<String>,
}

/// The payload format of a topic's record values.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum TopicFormat {
    /// Each value is one JSON object, decoded against the table schema as push ingest does.
    #[default]
    Json,
    /// Key, value and timestamp as they are (binary columns `key` and `value`, and
    /// `timestamp`).
    Bytes,
    /// Confluent- or Apicurio-framed Avro, writer schemas from the topic's `schema_registry`
    /// (a new table takes the first writer schema's columns and types).
    Avro,
    /// Confluent- or Apicurio-framed Protobuf, `.proto` schemas from the topic's
    /// `schema_registry` (a new table takes the first message type's columns).
    Protobuf,
}

setting_values!(TopicFormat { "json" => Json, "bytes" => Bytes, "avro" => Avro, "protobuf" => Protobuf });

impl TopicFormat {
    /// Whether values are framed with schema ids of a registry.
    pub fn uses_registry(self) -> bool {
        matches!(self, TopicFormat::Avro | TopicFormat::Protobuf)
    }
}

/// What to do with records that do not decode.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case", try_from = "String")]
pub enum BadRecords {
    /// The batch is refused with INVALID_RECORD naming the records; nothing of it lands.
    #[default]
    Refuse,
    /// Bad records go to the table's dead-letter table (with producer and sequence); the rest
    /// lands.
    DeadLetter,
}

setting_values!(BadRecords { "refuse" => Refuse, "dead_letter" => DeadLetter });

/// `[server.kafka.topics.<name>]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaTopic {
    /// A key of `[server.tables]`: the table the topic writes and whose feed it reads.
    pub table: String,
    pub format: TopicFormat,
    /// Virtual partitions (producers spread over them; each has its own sequences).
    pub partitions: u32,
    pub bad_records: BadRecords,
    /// Avro and Protobuf topics: the registry their schema ids name (the top-level
    /// `[schema_registry]` when not given).
    pub schema_registry: Option<crate::config::registry::RegistryConfig>,
}

impl Default for KafkaTopic {
    fn default() -> Self {
        KafkaTopic {
            table: String::new(),
            format: TopicFormat::Json,
            partitions: 1,
            bad_records: BadRecords::Refuse,
            schema_registry: None,
        }
    }
}

/// `[server.kafka]`, checked.
#[derive(Clone)]
pub struct ResolvedKafka {
    pub listen: std::net::SocketAddr,
    /// Host and port told to clients.
    pub advertised: (String, u16),
    pub tls: Option<(String, String)>,
    /// CA certificates verifying clients' certificates.
    pub tls_client_ca: Option<String>,
    /// (user, password) pairs; empty: no authentication.
    pub users: Vec<(String, String)>,
    pub plain_without_tls: bool,
    pub acls: BTreeMap<String, KafkaAcl>,
    pub max_request: usize,
    pub offsets_retention: std::time::Duration,
    pub topics: BTreeMap<String, KafkaTopic>,
}

impl std::fmt::Debug for ResolvedKafka {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedKafka")
            .field("listen", &self.listen)
            .field("advertised", &self.advertised)
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.len())
            .field("acls", &self.acls.keys().collect::<Vec<_>>())
            .field("topics", &self.topics.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Whether `name` is a legal Kafka topic name: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl KafkaListenerConfig {
    /// Checks the settings against the server's `tables` and reads the users.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the key.
    pub fn resolve(
        &self,
        tables: &BTreeMap<String, super::server::ServerTable>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedKafka> {
        let bad = |key: &str, why: String| Error::invalid_config(format!("server.kafka.{key}"), why);
        let listen: std::net::SocketAddr = self
            .listen
            .parse()
            .map_err(|_| bad("listen", format!("{:?} is not host:port (e.g. 127.0.0.1:9092)", self.listen)))?;
        let advertised = match &self.advertised {
            None => (listen.ip().to_string(), listen.port()),
            Some(a) => {
                let (host, port) =
                    a.rsplit_once(':').ok_or_else(|| bad("advertised", format!("{a:?} is not host:port")))?;
                let port = port.parse().map_err(|_| bad("advertised", format!("{a:?}: the port is not a number")))?;
                if host.is_empty() {
                    return Err(bad("advertised", format!("{a:?}: the host is empty")));
                }
                (host.to_string(), port)
            }
        };
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) if !c.is_empty() && !k.is_empty() => Some((c.clone(), k.clone())),
            (None, None) => None,
            _ => return Err(bad("tls_cert", "tls_cert and tls_key go together".into())),
        };
        let mut users = Vec::new();
        for line in super::server::read_secrets("kafka.users", &self.users, lookup)? {
            let (user, password) = line
                .split_once(':')
                .filter(|(u, p)| !u.is_empty() && !p.is_empty())
                .ok_or_else(|| bad("users", "each user is a `user:password` line".into()))?;
            users.push((user.to_string(), password.to_string()));
        }
        let max_request = usize::try_from(self.max_request.get()).unwrap_or(usize::MAX);
        if max_request < 1024 {
            return Err(bad("max_request", "must be at least 1 KiB".into()));
        }
        for (name, topic) in &self.topics {
            if !valid_topic_name(name) {
                return Err(bad(&format!("topics.{name}"), "a topic name is 1 to 249 of [a-zA-Z0-9._-]".into()));
            }
            if !tables.contains_key(&topic.table) {
                let why = format!("{:?} is not a table of [server.tables]", topic.table);
                return Err(bad(&format!("topics.{name}.table"), why));
            }
            if topic.format == TopicFormat::Bytes && !tables[&topic.table].key_columns.is_empty() {
                let why =
                    format!("a bytes topic cannot write the keyed table {:?} (its key column is binary)", topic.table);
                return Err(bad(&format!("topics.{name}.format"), why));
            }
            match (&topic.schema_registry, topic.format.uses_registry()) {
                (Some(r), true) if r.url.trim().is_empty() => {
                    return Err(bad(&format!("topics.{name}.schema_registry.url"), "is empty".into()))
                }
                (Some(_), true) | (None, false) => {}
                (None, true) => {
                    let why = format!("a {:?} topic needs schema_registry (its url)", topic.format);
                    return Err(bad(&format!("topics.{name}.schema_registry"), why.to_lowercase()));
                }
                (Some(_), false) => {
                    let why = "only avro and protobuf topics read a schema registry".to_string();
                    return Err(bad(&format!("topics.{name}.schema_registry"), why));
                }
            }
            if topic.partitions == 0 || topic.partitions > 10_000 {
                return Err(bad(&format!("topics.{name}.partitions"), "must be 1 to 10000".into()));
            }
            if topic.bad_records == BadRecords::DeadLetter && tables[&topic.table].dead_letters.is_none() {
                let why = format!("server.tables.{}.dead_letters is not set", topic.table);
                return Err(bad(&format!("topics.{name}.bad_records"), why));
            }
        }
        let offsets_retention = self.offsets_retention.get();
        if offsets_retention.is_zero() {
            return Err(bad("offsets_retention", "must be longer than zero".into()));
        }
        let tls_client_ca = self.tls_client_ca.clone().filter(|c| !c.is_empty());
        if tls_client_ca.is_some() && tls.is_none() {
            return Err(bad("tls_client_ca", "client certificates need TLS: set tls_cert and tls_key".into()));
        }
        for (principal, acl) in &self.acls {
            let mut patterns = acl.produce.iter().chain(&acl.fetch).chain(&acl.describe).chain(&acl.groups);
            if let Some(p) = patterns.find(|p| p.is_empty() || p.strip_suffix('*').unwrap_or(p).contains('*')) {
                return Err(bad(&format!("acls.{principal}"), format!("{p:?}: a name, a prefix ending in *, or *")));
            }
        }
        Ok(ResolvedKafka {
            listen,
            advertised,
            tls,
            tls_client_ca,
            users,
            plain_without_tls: self.plain_without_tls,
            acls: self.acls.clone(),
            max_request,
            offsets_retention,
            topics: self.topics.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::server::ServerTable;

    fn tables() -> BTreeMap<String, ServerTable> {
        BTreeMap::from([("events".to_string(), ServerTable { table: "/t".into(), ..ServerTable::default() })])
    }

    #[test]
    fn users_come_from_the_environment_and_are_never_printed() {
        let mut c = KafkaListenerConfig { users: vec!["env:KAFKA_USERS".into()], ..Default::default() };
        c.topics.insert("orders".into(), KafkaTopic { table: "events".into(), ..KafkaTopic::default() });
        let env = |k: &str| (k == "KAFKA_USERS").then(|| "alice:s3cr:et".to_string());
        let r = c.resolve(&tables(), &env).unwrap();
        assert_eq!(r.users, vec![("alice".to_string(), "s3cr:et".to_string())]);
        assert_eq!(r.advertised, ("127.0.0.1".to_string(), 9092));
        assert!(!format!("{r:?}").contains("s3cr"));
        c.users = vec!["alice:pw".into()];
        assert!(c.resolve(&tables(), &env).unwrap_err().to_string().contains("env:VARIABLE or file:PATH"));
        let env = |_: &str| Some("no-colon".to_string());
        c.users = vec!["env:X".into()];
        assert!(c.resolve(&tables(), &env).unwrap_err().to_string().contains("user:password"));
    }

    #[test]
    fn user_lists_parse_alike_from_the_environment_and_files() {
        let text = "# producers\nalice:pw1\r\n\n  bob:pâss:wörd  \n";
        let want = vec![("alice".to_string(), "pw1".to_string()), ("bob".to_string(), "pâss:wörd".to_string())];
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("users");
        std::fs::write(&file, text).unwrap();
        let env = |k: &str| (k == "KAFKA_USERS").then(|| text.to_string());
        for entry in ["env:KAFKA_USERS".to_string(), format!("file:{}", file.display())] {
            let mut c = KafkaListenerConfig { users: vec![entry.clone()], ..Default::default() };
            c.topics.insert("orders".into(), KafkaTopic { table: "events".into(), ..KafkaTopic::default() });
            assert_eq!(c.resolve(&tables(), &env).unwrap().users, want, "{entry}");
        }
        let blank = |_: &str| Some("# nobody\n\n".to_string());
        let c = KafkaListenerConfig { users: vec!["env:KAFKA_USERS".into()], ..Default::default() };
        assert!(c.resolve(&tables(), &blank).unwrap_err().to_string().contains("holds no secret"));
    }

    #[test]
    fn topics_name_served_tables() {
        let none = |_: &str| None;
        let mut c = KafkaListenerConfig::default();
        c.topics.insert("orders".into(), KafkaTopic { table: "missing".into(), ..KafkaTopic::default() });
        assert!(c.resolve(&tables(), &none).unwrap_err().to_string().contains("topics.orders.table"));
        c.topics.clear();
        c.topics.insert("bad/name".into(), KafkaTopic { table: "events".into(), ..KafkaTopic::default() });
        assert!(c.resolve(&tables(), &none).unwrap_err().to_string().contains("topics.bad/name"));
        c.topics.clear();
        let t = KafkaTopic { table: "events".into(), bad_records: BadRecords::DeadLetter, ..KafkaTopic::default() };
        c.topics.insert("orders".into(), t);
        assert!(c.resolve(&tables(), &none).unwrap_err().to_string().contains("dead_letters is not set"));
        c.topics.clear();
        let t = KafkaTopic { table: "events".into(), format: TopicFormat::Avro, ..KafkaTopic::default() };
        c.topics.insert("orders".into(), t.clone());
        let e = c.resolve(&tables(), &none).unwrap_err().to_string();
        assert!(e.contains("topics.orders.schema_registry: a avro topic needs schema_registry"), "{e}");
        let registry =
            crate::config::registry::RegistryConfig { url: "http://127.0.0.1:8081".into(), ..Default::default() };
        c.topics.insert("orders".into(), KafkaTopic { schema_registry: Some(registry.clone()), ..t });
        assert!(c.resolve(&tables(), &none).is_ok());
        let t = KafkaTopic { table: "events".into(), schema_registry: Some(registry), ..KafkaTopic::default() };
        c.topics.insert("orders".into(), t);
        assert!(c.resolve(&tables(), &none).unwrap_err().to_string().contains("only avro and protobuf topics"));
        c.topics.clear();
        c.advertised = Some("broker.example:x".into());
        assert!(c.resolve(&tables(), &none).is_err());
    }

    #[test]
    fn topic_names() {
        assert!(valid_topic_name("orders.eu_1-a") && valid_topic_name(&"a".repeat(249)));
        assert!(!valid_topic_name("") && !valid_topic_name("..") && !valid_topic_name("ö") && !valid_topic_name("a b"));
    }
}
