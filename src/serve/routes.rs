//! The HTTP endpoints of push ingest (axum):
//!
//! - `POST /v1/tables/{name}/records`: JSON lines (or an Arrow IPC stream) into the table,
//!   answered after the group commit that holds them (see `docs/src/guides/push-contract.md` for every answer);
//! - `GET /v1/tables/{name}/producers/{id}`: a producer's committed sequence, to resume;
//! - `GET /v1/tables`, `GET /v1/openapi.json`, `GET /health`, `GET /ready`, `GET /metrics`.
//!
//! A request is checked in the order that costs least: table, token, producer headers,
//! content type and length, then room in the buffered-bytes budget, then its body is read
//! (within `read_timeout`) and decoded on one of the decoding threads, and handed to the table's group
//! committer. Tokens are compared in constant time and never logged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::body::{self, BadLines, Refusal};
use super::group::{Outcome, Pending};
use super::latest::Latest;
use super::sequence::check_producer_id;
use crate::config::server::{ResolvedServer, ResolvedTable};
use crate::metrics::push::PushMetrics;
use crate::metrics::Metrics;

/// The OpenAPI document of these endpoints.
pub(crate) const OPENAPI: &str = include_str!("openapi.json");

/// The content type of Arrow IPC streams.
const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";

/// One table as the handlers see it.
pub(crate) struct TableHandle {
    pub settings: ResolvedTable,
    pub table: crate::storage::Table,
    /// The table as this server knows it; read fresh for answers about positions.
    pub latest: Arc<Latest>,
    pub ready: Arc<AtomicBool>,
    pub commits: mpsc::UnboundedSender<Pending>,
    pub metrics: Arc<PushMetrics>,
}

/// What every handler shares.
pub(crate) struct AppState {
    pub config: ResolvedServer,
    pub tables: std::collections::BTreeMap<String, TableHandle>,
    pub buffered: Arc<super::budget::Budget>,
    /// The decoding threads, one per core.
    pub decoders: super::decoders::Decoders,
    pub metrics: Arc<Metrics>,
}

/// The router over `state`.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/tables/{name}/records", post(records))
        .route("/v1/tables/{name}/producers/{id}", get(producer))
        .route("/v1/tables", get(tables))
        .route("/v1/openapi.json", get(openapi))
        .route("/health", get(|| async { "ok\n" }))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

fn retry_after(status: StatusCode, message: impl Into<String>, seconds: u32) -> Response {
    let mut r = error(status, message);
    r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    r
}

/// Constant-time comparison: how long it takes says nothing about where a guess went wrong.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `None` when the request may use the table; else the answer (401 or 403).
fn authorize(state: &AppState, table: &TableHandle, headers: &HeaderMap) -> Option<(StatusCode, &'static str)> {
    if !state.config.auth_required() {
        return None;
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    let Some(given) = given else { return Some((StatusCode::UNAUTHORIZED, "a bearer token is required")) };
    let matches = |list: &[String]| list.iter().fold(false, |found, t| found | same(t, given));
    if matches(&state.config.tokens) || matches(&table.settings.tokens) {
        return None;
    }
    let elsewhere = state.tables.values().any(|t| matches(&t.settings.tokens));
    if elsewhere {
        Some((StatusCode::FORBIDDEN, "this token does not open this table"))
    } else {
        Some((StatusCode::UNAUTHORIZED, "unknown bearer token"))
    }
}

/// The producer headers: both or neither, each at most once. A sequence is plain decimal
/// digits (no sign, no spaces), at most `i64::MAX`.
fn producer_of(headers: &HeaderMap) -> Result<Option<(String, i64)>, String> {
    let text = |name: &str| -> Result<Option<&str>, String> {
        let mut values = headers.get_all(name).iter();
        let Some(first) = values.next() else { return Ok(None) };
        if values.next().is_some() {
            return Err(format!("{name} is given more than once"));
        }
        std::str::from_utf8(first.as_bytes()).map(Some).map_err(|_| format!("{name} is not UTF-8"))
    };
    match (text("producer-id")?, text("producer-sequence")?) {
        (None, None) => Ok(None),
        (Some(id), Some(seq)) => {
            check_producer_id(id)?;
            if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("Producer-Sequence {seq:?} is not a whole number from 0 (decimal digits only)"));
            }
            let seq = seq
                .parse::<i64>()
                .map_err(|_| format!("Producer-Sequence {seq} is too large (at most {})", i64::MAX))?;
            Ok(Some((id.to_string(), seq)))
        }
        (Some(_), None) => Err("Producer-Id needs a Producer-Sequence".into()),
        (None, Some(_)) => Err("Producer-Sequence needs a Producer-Id".into()),
    }
}

/// The table a request names, or the answer: with tokens on, a request without a token that
/// opens some table learns nothing about which tables exist (401 before 404).
fn table_of<'a>(state: &'a AppState, name: &str, headers: &HeaderMap) -> Result<&'a TableHandle, Box<Response>> {
    match state.tables.get(name) {
        Some(t) => Ok(t),
        None if state.config.auth_required()
            && !state.tables.values().any(|t| authorize(state, t, headers).is_none()) =>
        {
            let mut r = error(StatusCode::UNAUTHORIZED, "a bearer token is required");
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            Err(Box::new(r))
        }
        None => Err(Box::new(error(StatusCode::NOT_FOUND, format!("no table {name:?} is configured on this server")))),
    }
}

#[derive(serde::Deserialize, Default)]
struct RecordsQuery {
    bad_lines: Option<String>,
}

#[derive(Clone, Copy)]
enum Kind {
    JsonLines,
    Arrow,
}

fn kind_of(headers: &HeaderMap) -> Option<Kind> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let ct = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match ct.as_str() {
        ""
        | "application/x-ndjson"
        | "application/jsonl"
        | "application/json-lines"
        | "application/json"
        | "text/plain" => Some(Kind::JsonLines),
        ARROW_STREAM => Some(Kind::Arrow),
        _ => None,
    }
}

async fn records(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(query): Query<RecordsQuery>,
    headers: HeaderMap,
    request_body: Body,
) -> Response {
    let started = Instant::now();
    let table = match table_of(&state, &name, &headers) {
        Ok(t) => t,
        Err(answer) => return *answer,
    };
    let m = &table.metrics;
    let refuse = |status: StatusCode, reason: &str, message: String| {
        m.rejected(reason);
        m.answered(None, "rejected", 0, 0, started.elapsed().as_secs_f64());
        error(status, message)
    };
    if let Some((status, why)) = authorize(&state, table, &headers) {
        let reason = if status == StatusCode::FORBIDDEN { "forbidden" } else { "unauthorized" };
        let mut r = refuse(status, reason, why.into());
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    let producer = match producer_of(&headers) {
        Ok(p) => p,
        Err(why) => return refuse(StatusCode::BAD_REQUEST, "bad_header", why),
    };
    let bad_lines = match query.bad_lines.as_deref() {
        None | Some("refuse") => BadLines::Refuse,
        Some("dead_letter") if table.settings.settings.dead_letters.is_some() => BadLines::DeadLetter,
        Some("dead_letter") => {
            let why = format!("table {name:?} has no dead-letter table (server.tables.{name}.dead_letters)");
            return refuse(StatusCode::BAD_REQUEST, "bad_query", why);
        }
        Some(other) => {
            return refuse(StatusCode::BAD_REQUEST, "bad_query", format!("bad_lines={other:?}: refuse or dead_letter"))
        }
    };
    let Some(kind) = kind_of(&headers) else {
        let why = format!("Content-Type: application/x-ndjson (JSON lines) or {ARROW_STREAM}");
        return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_type", why);
    };
    let max_body = state.config.max_body;
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if length.is_some_and(|l| l > max_body as u64) {
        let why = format!("the body is over the limit of {max_body} bytes (server.max_body)");
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", why);
    }
    if !table.ready.load(Ordering::Acquire) {
        return retry_after(StatusCode::SERVICE_UNAVAILABLE, "the table is not open yet", 1);
    }
    // Room for the body and its rows, or 429: memory stays within server.max_buffered.
    let hold = length.unwrap_or(max_body as u64).saturating_mul(crate::config::server::HOLD_FACTOR).max(1);
    let permits = u32::try_from(hold).unwrap_or(u32::MAX);
    let Some(_permit) = state.buffered.try_take(u64::from(permits)) else {
        m.rejected("overloaded");
        return retry_after(StatusCode::TOO_MANY_REQUESTS, "over capacity: too many bytes in flight", 1);
    };
    m.buffered().inc_by(i64::from(permits));
    let _release = ReleaseGauge(m.clone(), i64::from(permits));
    let read = tokio::time::timeout(state.config.read_timeout, axum::body::to_bytes(request_body, max_body)).await;
    let bytes = match read {
        Err(_) => return refuse(StatusCode::REQUEST_TIMEOUT, "timeout", "the body did not arrive in time".into()),
        Ok(Err(e)) if is_length_limit(&e) => {
            let why = format!("the body is over the limit of {max_body} bytes (server.max_body)");
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", why);
        }
        Ok(Err(e)) => return refuse(StatusCode::BAD_REQUEST, "bad_body", format!("reading the body: {e}")),
        Ok(Ok(b)) => b,
    };
    let body_bytes = bytes.len() as u64;
    // A retry of a committed sequence writes nothing. The cached view is only ever behind
    // the table, so what it calls committed is; the number answered is read fresh.
    let view = table.latest.cached();
    if let (Some((id, seq)), Some(v)) = (&producer, &view) {
        if v.producers.get(id).is_some_and(|d| d >= seq) {
            let fresh = table.latest.fresh().await.ok().flatten().or(view.clone());
            let done = fresh.and_then(|v| v.producers.get(id).copied()).unwrap_or(*seq);
            m.answered(Some(id), "already_committed", 0, 0, started.elapsed().as_secs_f64());
            return already(&name, id, *seq, done);
        }
    }
    let decode = |view: Option<Arc<super::latest::TableView>>| {
        let (settings, max_line, bytes) = (table.settings.clone(), state.config.max_line, bytes.clone());
        state.decoders.run(move || {
            let current = view.as_ref().map(|v| &v.schema);
            match kind {
                Kind::JsonLines => body::json_lines(&bytes, &settings, current, max_line, bad_lines),
                Kind::Arrow => body::arrow_stream(&bytes, &settings, current),
            }
        })
    };
    let mut decoded = decode(view.clone()).await;
    // Refused against the schema as last seen: judged again against the table as it is.
    if matches!(decoded, Some(Err(Refusal::Bad(_) | Refusal::NoTable(_)))) {
        if let Ok(fresh) = table.latest.fresh().await {
            if fresh.as_ref().map(|v| v.version) != view.as_ref().map(|v| v.version) {
                decoded = decode(fresh).await;
            }
        }
    }
    let mut rows = match decoded {
        Some(Ok(rows)) => rows,
        Some(Err(Refusal::Bad(why))) => return refuse(StatusCode::BAD_REQUEST, "bad_line", why),
        Some(Err(Refusal::TooLarge(why))) => return refuse(StatusCode::PAYLOAD_TOO_LARGE, "too_large", why),
        Some(Err(Refusal::NoTable(why))) => return refuse(StatusCode::NOT_FOUND, "no_table", why),
        None => return refuse(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the decoder failed".into()),
    };
    if producer.is_none() && rows.count == 0 && rows.bad.is_empty() {
        m.answered(None, "committed", 0, body_bytes, started.elapsed().as_secs_f64());
        return Json(json!({"outcome": "nothing_to_commit", "table": name, "rows": 0})).into_response();
    }
    // A dead letter names who sent it and when it arrived.
    let arrived_ms = table.latest.now_ms();
    for letter in &mut rows.bad {
        letter.key = producer.as_ref().map(|(id, _)| id.as_bytes().to_vec());
        letter.timestamp_ms = Some(arrived_ms);
    }
    let bad: Vec<Value> = rows.bad.iter().map(|l| json!({"line": l.offset, "reason": l.reason})).collect();
    let count = rows.count;
    let (reply, answer) = oneshot::channel();
    let pending = Pending {
        producer: producer.as_ref().map(|(id, seq)| super::sequence::Sequenced::push(id, *seq)),
        rows: rows.batches,
        schema: rows.schema,
        bad_lines: rows.bad,
        bytes: body_bytes,
        keyed: None,
        connection: None,
        door: super::group::Door::Http,
        reply,
    };
    if table.commits.send(pending).is_err() {
        return retry_after(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down", 1);
    }
    let outcome = answer.await.unwrap_or(Outcome::Failed("the commit task stopped".into()));
    let seconds = started.elapsed().as_secs_f64();
    let who = producer.as_ref().map(|(id, _)| id.as_str());
    match outcome {
        Outcome::Committed { version } => {
            m.answered(who, "committed", count, body_bytes, seconds);
            let mut answer = json!({"outcome": "committed", "table": name, "version": version, "rows": count});
            match &producer {
                Some((id, seq)) => {
                    answer["producer"] = json!(id);
                    answer["sequence"] = json!(seq);
                    answer["delivery"] = json!("exactly_once");
                }
                None => {
                    answer["delivery"] = json!("at_least_once");
                    answer["note"] =
                        json!("no Producer-Id and Producer-Sequence: a retry of this request writes its rows again");
                }
            }
            if !bad.is_empty() {
                answer["bad_lines"] = Value::Array(bad);
            }
            Json(answer).into_response()
        }
        Outcome::Already { committed } => {
            m.answered(who, "already_committed", 0, 0, seconds);
            let (id, seq) = producer.unwrap_or_default();
            already(&name, &id, seq, committed)
        }
        Outcome::Gap { expected } => {
            m.rejected("sequence_gap");
            m.answered(who, "rejected", 0, 0, seconds);
            let seq = producer.map_or(-1, |(_, s)| s);
            let message = format!("sequence gap: got {seq}, the next sequence of this producer is {expected}");
            (StatusCode::CONFLICT, Json(json!({"error": message, "expected_sequence": expected}))).into_response()
        }
        Outcome::Refused(why) => refuse(StatusCode::CONFLICT, "schema", why),
        Outcome::Failed(why) => {
            m.rejected("store");
            m.answered(who, "rejected", 0, 0, seconds);
            let message = format!("not committed ({why}); retry with the same Producer-Sequence");
            retry_after(StatusCode::SERVICE_UNAVAILABLE, message, 1)
        }
    }
}

fn already(name: &str, id: &str, seq: i64, committed: i64) -> Response {
    Json(json!({
        "outcome": "already_committed", "table": name, "producer": id, "sequence": seq,
        "committed_sequence": committed, "rows": 0,
    }))
    .into_response()
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// Gives back the gauge's share when the request ends, however it ends.
struct ReleaseGauge(Arc<PushMetrics>, i64);

impl Drop for ReleaseGauge {
    fn drop(&mut self) {
        self.0.buffered().dec_by(self.1);
    }
}

async fn producer(
    State(state): State<Arc<AppState>>,
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let table = match table_of(&state, &name, &headers) {
        Ok(t) => t,
        Err(answer) => return *answer,
    };
    if let Some((status, why)) = authorize(&state, table, &headers) {
        return error(status, why);
    }
    // A position is answered from the table as it is now, never from a cache.
    let view = match table.latest.fresh().await {
        Ok(v) => v,
        Err(e) => return retry_after(StatusCode::SERVICE_UNAVAILABLE, format!("reading the table: {e}"), 1),
    };
    let committed = view.as_ref().and_then(|v| v.producers.get(&id).copied());
    Json(json!({
        "table": name, "producer": id, "committed_sequence": committed,
        "next_sequence": committed.map_or(0, |c| c + 1),
    }))
    .into_response()
}

/// The tables a token opens (every table without tokens).
async fn tables(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let open: Vec<&String> =
        state.tables.iter().filter(|(_, t)| authorize(&state, t, &headers).is_none()).map(|(name, _)| name).collect();
    if open.is_empty() && state.config.auth_required() {
        return error(StatusCode::UNAUTHORIZED, "a bearer token that opens a table is required");
    }
    Json(json!({"tables": open})).into_response()
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

async fn ready(State(state): State<Arc<AppState>>) -> (StatusCode, &'static str) {
    if state.tables.values().all(|t| t.ready.load(Ordering::Acquire)) {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let openmetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(header::CONTENT_TYPE, openmetrics)], state.metrics.render()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producer_headers_go_together_and_are_checked() {
        let mut h = HeaderMap::new();
        assert_eq!(producer_of(&h), Ok(None));
        h.insert("producer-id", HeaderValue::from_static("p1"));
        assert!(producer_of(&h).is_err());
        h.insert("producer-sequence", HeaderValue::from_static("7"));
        assert_eq!(producer_of(&h), Ok(Some(("p1".into(), 7))));
        for bad in ["-1", "+0", " 0 ", "0x1", ""] {
            h.insert("producer-sequence", HeaderValue::from_static(bad));
            assert!(producer_of(&h).unwrap_err().contains("not a whole number"), "{bad:?}");
        }
        h.insert("producer-sequence", HeaderValue::from_static("99999999999999999999999"));
        assert!(producer_of(&h).unwrap_err().contains("too large"));
        h.insert("producer-sequence", HeaderValue::from_static("1"));
        h.append("producer-sequence", HeaderValue::from_static("2"));
        assert!(producer_of(&h).unwrap_err().contains("more than once"));
        h.insert("producer-id", HeaderValue::from_bytes("Zürich".as_bytes()).unwrap());
        h.insert("producer-sequence", HeaderValue::from_static("0"));
        assert_eq!(producer_of(&h), Ok(Some(("Zürich".into(), 0))));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd") && !same("abc", "ab") && !same("", "a"));
    }

    #[test]
    fn content_types() {
        let mut h = HeaderMap::new();
        assert!(matches!(kind_of(&h), Some(Kind::JsonLines)));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-ndjson; charset=utf-8"));
        assert!(matches!(kind_of(&h), Some(Kind::JsonLines)));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ARROW_STREAM));
        assert!(matches!(kind_of(&h), Some(Kind::Arrow)));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/xml"));
        assert!(kind_of(&h).is_none());
    }
}
