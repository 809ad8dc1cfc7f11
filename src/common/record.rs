//! [sync] The plain values every record source hands up (Kafka messages, lines of push
//! requests): a consumed record borrowed from its message, its headers, and a record that
//! could not be decoded (a dead letter) with why. Neutral: decoding, pipelines and the push
//! server use them without knowing where a record came from.

/// One consumed record, borrowed from the consumer's message.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct RawRecord<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub timestamp_ms: Option<i64>,
    pub key: Option<&'a [u8]>,
    pub payload: Option<&'a [u8]>,
}

/// A record that could not be decoded, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct DeadLetter {
    pub reason: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub timestamp_ms: Option<i64>,
    pub key: Option<Vec<u8>>,
    pub payload: Option<Vec<u8>>,
}

impl DeadLetter {
    /// A letter for `r` with `reason`.
    pub(crate) fn of(r: &RawRecord<'_>, reason: impl Into<String>) -> Self {
        DeadLetter {
            reason: reason.into(),
            topic: r.topic.to_string(),
            partition: r.partition,
            offset: r.offset,
            timestamp_ms: r.timestamp_ms,
            key: r.key.map(<[u8]>::to_vec),
            payload: r.payload.map(<[u8]>::to_vec),
        }
    }
}

/// A record's headers, borrowed from the message.
pub(crate) type Headers<'a> = Vec<(&'a str, Option<&'a [u8]>)>;
