//! The benchmark record of `write_throughput` and `push_throughput` (included with
//! `#[path]`): ten fields, about 250 bytes of JSON, deterministic per index.

/// Record `i` as one JSON object (no newline).
pub fn record(i: usize) -> String {
    format!(
        r#"{{"event_id":{i},"user_id":"user-{:08}","event_type":"{}","amount":{:.2},"country":"{}","ts":"2024-06-{:02}T{:02}:{:02}:{:02}.000000Z","session":"{}","active":{},"score":{},"note":"{}"}}"#,
        i % 100_000,
        ["click", "view", "purchase", "signup"][i % 4],
        (i % 10_000) as f64 / 7.0,
        ["DE", "US", "FR", "JP", "BR"][i % 5],
        i % 28 + 1,
        i % 24,
        i % 60,
        (i * 7) % 60,
        uuid::Uuid::from_u128(i as u128 * 0x9E37_79B9_7F4A_7C15),
        i.is_multiple_of(3),
        i % 1000,
        "x".repeat(30 + i % 20),
    )
}
