//! Who may do what at the Kafka door, tried with librdkafka (the rdkafka crate) and
//! kafka-python: SASL/SCRAM-SHA-256 and -512, PLAIN over TLS only (unless allowed), TLS client
//! certificates as principals, and per-principal permissions on topics and groups, each
//! denial answered with Kafka's own error and nothing of it committed.

use std::path::Path;
use std::time::{Duration, Instant};

use deltabus::config::kafka::{KafkaAcl, KafkaTopic};
use deltabus::config::server::ServerTable;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::types::RDKafkaErrorCode as Code;
use rdkafka::{Message, Offset, TopicPartitionList};
use serde_json::Value;

use crate::support::listener::{config, start};
use crate::support::python::python;

/// A CA, a server certificate for 127.0.0.1 and localhost, and client certificates for
/// `clients` (common names), written as PEM files under `dir`; also a client certificate
/// from another CA (`stranger`).
fn certificates(dir: &Path, clients: &[&str]) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "deltabus test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let leaf = |cn: &str, sans: Vec<String>, issuer: &rcgen::Issuer<'_, &rcgen::KeyPair>, name: &str| {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(sans).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        let cert = params.signed_by(&key, issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    };
    leaf("server", vec!["localhost".into(), "127.0.0.1".into()], &issuer, "server");
    for c in clients {
        leaf(c, Vec::new(), &issuer, c);
    }
    let other_key = rcgen::KeyPair::generate().unwrap();
    let mut other_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    other_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    other_params.distinguished_name.push(rcgen::DnType::CommonName, "another CA");
    let other = rcgen::Issuer::from_params(&other_params, &other_key);
    leaf("carol", Vec::new(), &other, "stranger");
}

fn acl(produce: &[&str], fetch: &[&str], describe: &[&str], groups: &[&str]) -> KafkaAcl {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    KafkaAcl { produce: v(produce), fetch: v(fetch), describe: v(describe), groups: v(groups) }
}

/// A client's settings: TLS trusting the test CA, and SASL when `sasl` names a mechanism.
fn client(kafka: &str, dir: &Path, sasl: Option<(&str, &str, &str)>, cert: Option<&str>) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", kafka)
        .set("ssl.ca.location", dir.join("ca.pem").to_str().unwrap())
        .set("message.timeout.ms", "20000")
        .set("socket.timeout.ms", "20000")
        .set("retries", "0");
    match sasl {
        Some((mechanism, user, password)) => {
            c.set("security.protocol", "SASL_SSL")
                .set("sasl.mechanism", mechanism)
                .set("sasl.username", user)
                .set("sasl.password", password);
        }
        None => {
            c.set("security.protocol", "SSL");
        }
    }
    if let Some(name) = cert {
        c.set("ssl.certificate.location", dir.join(format!("{name}.pem")).to_str().unwrap())
            .set("ssl.key.location", dir.join(format!("{name}.key")).to_str().unwrap());
    }
    c
}

async fn produce(c: &ClientConfig, topic: &str, id: i64) -> Result<(), KafkaError> {
    let p: FutureProducer = c.create().unwrap();
    send(p, topic, id).await
}

/// [`produce`] where the client cannot get in (it would otherwise wait its whole timeout).
async fn produce_shut_out(c: &ClientConfig, topic: &str, id: i64) -> Result<(), KafkaError> {
    send(c.clone().set("message.timeout.ms", "3000").create().unwrap(), topic, id).await
}

async fn send(p: FutureProducer, topic: &str, id: i64) -> Result<(), KafkaError> {
    let value = serde_json::json!({"id": id, "name": "ü"}).to_string();
    p.send(FutureRecord::<str, String>::to(topic).payload(&value), Duration::from_secs(30))
        .await
        .map(|_| ())
        .map_err(|(e, _)| e)
}

/// Assigns `topic`'s partition 0 from the start and polls until a record or an error comes.
fn consume_one(c: &ClientConfig, group: &str, topic: &str) -> Result<(BaseConsumer, i64), KafkaError> {
    let consumer: BaseConsumer = c.clone().set("group.id", group).set("enable.auto.commit", "false").create().unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning).unwrap();
    consumer.assign(&tpl).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "neither a record nor an error from {topic}");
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                let offset = m.offset();
                return Ok((consumer, offset));
            }
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
}

fn code(e: &KafkaError) -> Option<Code> {
    e.rdkafka_error_code()
}

#[tokio::test(flavor = "multi_thread")]
async fn principals_get_what_they_are_granted_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path(), &["carol"]);
    let orders = dir.path().join("orders").to_string_lossy().into_owned();
    let secret = dir.path().join("secret").to_string_lossy().into_owned();
    let mut cfg = config(&orders, 1);
    cfg.tables.insert("secret".into(), ServerTable { table: secret.clone(), create: true, ..ServerTable::default() });
    let k = cfg.kafka.as_mut().unwrap();
    k.topics.clear();
    for t in ["orders", "secret"] {
        let table = if t == "orders" { "events" } else { "secret" };
        k.topics.insert(t.into(), KafkaTopic { table: table.into(), partitions: 1, ..KafkaTopic::default() });
    }
    let pem = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    k.tls_cert = Some(pem("server.pem"));
    k.tls_key = Some(pem("server.key"));
    k.tls_client_ca = Some(pem("ca.pem"));
    k.users = vec!["env:KAFKA_USERS".into()];
    k.acls.insert("alice".into(), acl(&["orders"], &[], &[], &[]));
    k.acls.insert("bob ☃".into(), acl(&[], &["orders"], &["secret"], &["billing*"]));
    k.acls.insert("carol".into(), acl(&[], &[], &["orders"], &[]));
    let users = "alice:a-pw\nbob ☃:b:pw\n";
    let (kafka, _http, _stop, metrics) = start(cfg, &[("KAFKA_USERS", users)]).await;
    let d = dir.path();

    // alice produces to orders with each mechanism (PLAIN too: the listener is TLS).
    for (i, mechanism) in ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"].iter().enumerate() {
        let alice = client(&kafka, d, Some((mechanism, "alice", "a-pw")), None);
        produce(&alice, "orders", i as i64 + 1).await.unwrap_or_else(|e| panic!("{mechanism}: {e}"));
    }
    let alice = client(&kafka, d, Some(("SCRAM-SHA-256", "alice", "a-pw")), None);
    let denied = produce(&alice, "secret", 9).await.unwrap_err();
    assert_eq!(code(&denied), Some(Code::TopicAuthorizationFailed), "{denied}");
    let denied = consume_one(&alice, "billing", "orders").map(|_| ()).unwrap_err();
    assert_eq!(code(&denied), Some(Code::TopicAuthorizationFailed), "{denied}");
    // A wrong password, under both SCRAM mechanisms.
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let wrong = client(&kafka, d, Some((mechanism, "alice", "guess")), None);
        assert!(produce_shut_out(&wrong, "orders", 99).await.is_err(), "{mechanism}");
    }

    // bob (a name with a space and a snowman, a password with a colon) fetches and commits.
    let bob = client(&kafka, d, Some(("SCRAM-SHA-512", "bob ☃", "b:pw")), None);
    let denied = produce(&bob, "orders", 10).await.unwrap_err();
    assert_eq!(code(&denied), Some(Code::TopicAuthorizationFailed), "{denied}");
    let (consumer, offset) = consume_one(&bob, "billing-eu", "orders").unwrap();
    let mut at = TopicPartitionList::new();
    at.add_partition_offset("orders", 0, Offset::Offset(offset + 1)).unwrap();
    consumer.commit(&at, CommitMode::Sync).unwrap();
    let (other, offset) = consume_one(&bob, "payroll", "orders").unwrap();
    let mut at = TopicPartitionList::new();
    at.add_partition_offset("orders", 0, Offset::Offset(offset + 1)).unwrap();
    let denied = other.commit(&at, CommitMode::Sync).unwrap_err();
    assert!(denied.to_string().contains("uthoriz"), "{denied}");
    // bob sees secret but may not read it (a topic one may not even see is never found).
    let denied = consume_one(&bob, "billing", "secret").map(|_| ()).unwrap_err();
    assert_eq!(code(&denied), Some(Code::TopicAuthorizationFailed), "{denied}");

    // carol, by her certificate alone: sees orders only, may not produce to it.
    let carol = client(&kafka, d, None, Some("carol"));
    let probe: BaseConsumer = carol.create().unwrap();
    let md = tokio::task::spawn_blocking(move || probe.fetch_metadata(None, Duration::from_secs(20)).unwrap())
        .await
        .unwrap();
    let seen: Vec<&str> = md.topics().iter().map(|t| t.name()).collect();
    assert_eq!(seen, ["orders"]);
    let denied = produce(&carol, "orders", 11).await.unwrap_err();
    assert_eq!(code(&denied), Some(Code::TopicAuthorizationFailed), "{denied}");
    // A certificate from another CA fails the handshake; no certificate and no SASL: nothing.
    assert!(produce_shut_out(&client(&kafka, d, None, Some("stranger")), "orders", 12).await.is_err());
    assert!(produce_shut_out(&client(&kafka, d, None, None), "orders", 13).await.is_err());

    // kafka-python, an implementation of its own: SCRAM both ways, and a denial.
    if let Some(py) = python() {
        let script = r#"
import json, sys
from kafka import KafkaProducer
from kafka.errors import KafkaError
bootstrap, ca = sys.argv[1], sys.argv[2]
out = {}
for mech, topic in [("SCRAM-SHA-256", "orders"), ("SCRAM-SHA-512", "orders"), ("SCRAM-SHA-256", "secret")]:
    try:
        p = KafkaProducer(bootstrap_servers=bootstrap, security_protocol="SASL_SSL", sasl_mechanism=mech,
                          sasl_plain_username="alice", sasl_plain_password="a-pw", ssl_cafile=ca,
                          ssl_check_hostname=False, max_block_ms=20000, retries=0)
        p.send(topic, json.dumps({"id": 20 + len(out)}).encode()).get(timeout=20)
        p.close()
        out[mech + " " + topic] = "ok"
    except Exception as e:
        out[mech + " " + topic] = type(e).__name__
print(json.dumps(out))
"#;
        let out = std::process::Command::new(&py)
            .args(["-c", script, kafka.as_str(), d.join("ca.pem").to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(text.lines().last().unwrap_or("null"))
            .unwrap_or_else(|_| panic!("{text} {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(v["SCRAM-SHA-256 orders"], "ok", "{v}");
        assert_eq!(v["SCRAM-SHA-512 orders"], "ok", "{v}");
        assert!(v["SCRAM-SHA-256 secret"].as_str().unwrap().contains("TopicAuthorizationFailed"), "{v}");
    }
    let mut landed = crate::support::ids(&orders);
    landed.retain(|id| *id < 20);
    assert_eq!(landed, vec![1, 2, 3], "only what was granted landed");
    let log = std::path::Path::new(&secret).join("_delta_log");
    assert!(std::fs::read_dir(&log).map_or(true, |mut d| d.next().is_none()), "nothing reached secret");
    let rendered = metrics.render();
    assert!(rendered.contains("reason=\"denied\""), "{rendered}");
    assert!(!rendered.contains("a-pw") && !rendered.contains("b:pw"));
}

/// Without TLS, PLAIN (which sends the password itself) is not offered unless
/// `plain_without_tls` says so; SCRAM is.
#[tokio::test(flavor = "multi_thread")]
async fn plain_needs_tls_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events").to_string_lossy().into_owned();
    for allowed in [false, true] {
        let mut cfg = config(&events, 1);
        let k = cfg.kafka.as_mut().unwrap();
        k.users = vec!["env:KAFKA_USERS".into()];
        k.plain_without_tls = allowed;
        let (kafka, _http, _stop, _metrics) = start(cfg, &[("KAFKA_USERS", "alice:pw")]).await;
        let with = |mechanism: &str| {
            let mut c = ClientConfig::new();
            c.set("bootstrap.servers", &kafka)
                .set("security.protocol", "SASL_PLAINTEXT")
                .set("sasl.mechanism", mechanism)
                .set("sasl.username", "alice")
                .set("sasl.password", "pw")
                .set("message.timeout.ms", "10000");
            c
        };
        produce(&with("SCRAM-SHA-256"), "events", 1).await.unwrap();
        let plain = produce(&with("PLAIN"), "events", 2).await;
        assert_eq!(plain.is_ok(), allowed, "plain_without_tls = {allowed}: {plain:?}");
    }
}
