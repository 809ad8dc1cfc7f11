//! A schema registry speaking the Confluent REST API for clients nobody here wrote (Python's
//! `confluent-kafka` serializers register their schemas with it, deltabus reads them back):
//! `POST /subjects/{subject}/versions` registers a schema (the same text under the same id),
//! `GET /schemas/ids/{id}` and `GET /subjects/{subject}/versions/latest` answer it. No Java
//! registry can be installed from the reachable package registries.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

#[derive(Default)]
struct Schemas {
    /// By id (from 1): (subject, the registered body: schema, schemaType, references).
    by_id: Vec<(String, Value)>,
}

type Shared = Arc<Mutex<Schemas>>;

/// A running registry; it stops with its runtime when dropped.
pub struct Registry {
    pub url: String,
    _runtime: tokio::runtime::Runtime,
}

/// Starts a registry on 127.0.0.1.
pub fn start() -> Registry {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let url = runtime.block_on(async {
        let shared: Shared = Arc::default();
        let app = Router::new()
            .route("/subjects/{subject}/versions", post(register))
            .route("/subjects/{subject}/versions/latest", get(latest))
            .route("/schemas/ids/{id}", get(by_id))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    });
    Registry { url, _runtime: runtime }
}

fn answer(status: StatusCode, v: &Value) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    (status, [("content-type", "application/vnd.schemaregistry.v1+json")], v.to_string())
}

async fn register(
    State(shared): State<Shared>,
    Path(subject): Path<String>,
    body: String,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let Ok(mut body) = serde_json::from_str::<Value>(&body) else {
        return answer(StatusCode::UNPROCESSABLE_ENTITY, &json!({"error_code": 42201, "message": "Invalid schema"}));
    };
    if body.get("schemaType").is_none() {
        body["schemaType"] = json!("AVRO");
    }
    let mut s = shared.lock().unwrap();
    let same = |b: &Value| b["schema"] == body["schema"] && b["schemaType"] == body["schemaType"];
    let id = match s.by_id.iter().position(|(_, b)| same(b)) {
        Some(i) => i + 1,
        None => {
            s.by_id.push((subject, body));
            s.by_id.len()
        }
    };
    answer(StatusCode::OK, &json!({ "id": id }))
}

async fn by_id(
    State(shared): State<Shared>,
    Path(id): Path<usize>,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let s = shared.lock().unwrap();
    match id.checked_sub(1).and_then(|i| s.by_id.get(i)) {
        Some((_, body)) => answer(StatusCode::OK, body),
        None => answer(StatusCode::NOT_FOUND, &json!({"error_code": 40403, "message": "Schema not found"})),
    }
}

async fn latest(
    State(shared): State<Shared>,
    Path(subject): Path<String>,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let s = shared.lock().unwrap();
    match s.by_id.iter().enumerate().rev().find(|(_, (sub, _))| *sub == subject) {
        Some((i, (_, body))) => {
            let mut v = body.clone();
            v["id"] = json!(i + 1);
            v["subject"] = json!(subject);
            v["version"] = json!(1);
            answer(StatusCode::OK, &v)
        }
        None => answer(StatusCode::NOT_FOUND, &json!({"error_code": 40401, "message": "Subject not found"})),
    }
}
