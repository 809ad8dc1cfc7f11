//! A Kafka-protocol listener in process for tests: a server config with one table served as a
//! topic, the server started and ready, and one raw request answered.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use deltabus::config::kafka::{KafkaListenerConfig, KafkaTopic};
use deltabus::config::server::{ServerConfig, ServerTable};
use deltabus::metrics::Metrics;

fn table_config(url: &str) -> ServerTable {
    ServerTable { table: url.into(), create: true, ..ServerTable::default() }
}

/// A server config with one table `events` at `url` served as topic `events` (`partitions`).
pub fn config(url: &str, partitions: u32) -> ServerConfig {
    let mut cfg = ServerConfig { listen: "127.0.0.1:0".into(), ..ServerConfig::default() };
    cfg.commit_window = deltabus::common::units::HumanDuration::from_millis(30);
    cfg.tables.insert("events".into(), table_config(url));
    let mut kafka = KafkaListenerConfig { listen: "127.0.0.1:0".into(), ..KafkaListenerConfig::default() };
    kafka.topics.insert("events".into(), KafkaTopic { table: "events".into(), partitions, ..KafkaTopic::default() });
    cfg.kafka = Some(kafka);
    cfg
}

/// An in-process server: its Kafka address, HTTP address and stop handle.
pub async fn start(
    cfg: ServerConfig,
    env: &[(&str, &str)],
) -> (String, String, tokio::sync::watch::Sender<bool>, Arc<Metrics>) {
    let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let resolved = cfg.resolve(&|k| env.get(k).cloned()).unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let metrics = Arc::new(Metrics::default());
    let storage = deltabus::storage::StorageOptions::default();
    let server =
        deltabus::serve::start(resolved, storage, metrics.clone(), stopped, Duration::from_secs(5)).await.unwrap();
    let kafka = server.kafka_addr.unwrap().to_string();
    let http = format!("http://{}", server.local_addr);
    tokio::spawn(server.stopped());
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while client.get(format!("{http}/ready")).send().await.map(|r| r.status().as_u16()).ok() != Some(200) {
        assert!(Instant::now() < deadline, "server not ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (kafka, http, stop, metrics)
}

/// Sends one request on `stream` and reads its answer's body (after the correlation id).
pub async fn call<Q: kafka_protocol::protocol::Encodable, A: kafka_protocol::protocol::Decodable>(
    stream: &mut tokio::net::TcpStream,
    api: kafka_protocol::messages::ApiKey,
    version: i16,
    request: &Q,
) -> A {
    use kafka_protocol::messages::{RequestHeader, ResponseHeader};
    use kafka_protocol::protocol::{Decodable, Encodable};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut body = bytes::BytesMut::new();
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(42);
    header.encode(&mut body, api.request_header_version(version)).unwrap();
    request.encode(&mut body, version).unwrap();
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream.write_all(&frame).await.unwrap();
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).await.unwrap();
    let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut answer).await.unwrap();
    let mut answer = bytes::Bytes::from(answer);
    let header = ResponseHeader::decode(&mut answer, api.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 42);
    A::decode(&mut answer, version).unwrap()
}
