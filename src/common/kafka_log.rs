//! librdkafka's own log lines and client errors, for every Kafka client deltabus creates
//! (pipeline consumers, dead-letter and change-feed producers, progress readers, metadata
//! clients): into `tracing` under the target `librdkafka`, with credentials redacted.
//!
//! - Broker addresses in librdkafka's lines may carry user-info (`user:password@host:9092`);
//!   every line passes [`redact`] first, so no password reaches a log.
//! - A normal end of partition (`PartitionEOF`, asked for with `enable.partition.eof`) is
//!   not an error: it is logged at debug, never at error.
//! - Other client errors are warnings (librdkafka retries on its own); the pipeline
//!   consumer counts and throttles them with its own context.

use std::sync::LazyLock;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use regex::Regex;

use crate::error::Error;

static USERINFO: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?P<scheme>[A-Za-z][A-Za-z0-9+._-]*://)?[^\s/@,()\[\]<>]+@").ok());

/// `line` with the user-info of every `[scheme://]user[:password]@host` replaced.
pub(crate) fn redact(line: &str) -> String {
    match USERINFO.as_ref() {
        Some(re) if line.contains('@') => re.replace_all(line, "${scheme}<redacted>@").into_owned(),
        _ => line.to_string(),
    }
}

/// Whether a client error is librdkafka telling of a normal end of partition.
pub(crate) fn is_end_of_partition(error: &KafkaError) -> bool {
    matches!(error.rdkafka_error_code(), Some(RDKafkaErrorCode::PartitionEOF))
}

/// Whether a client error is the brokers refusing the client's credentials or permissions
/// (a failed SASL or TLS authentication, a missing ACL), which no retry mends: Kafka's Java
/// client throws these from `poll` and `send` instead of retrying.
pub(crate) fn is_refusal(error: &KafkaError) -> bool {
    use RDKafkaErrorCode as C;
    matches!(
        error.rdkafka_error_code(),
        Some(
            C::Authentication
                | C::SaslAuthenticationFailed
                | C::TopicAuthorizationFailed
                | C::GroupAuthorizationFailed
                | C::ClusterAuthorizationFailed
        )
    )
}

/// Logs one librdkafka line at its level, redacted. `held` is how many like it a caller's
/// throttle held back (`None`: not throttled).
pub(crate) fn log_line(level: RDKafkaLogLevel, fac: &str, message: &str, held: Option<u64>) {
    use RDKafkaLogLevel as L;
    let message = redact(message);
    let held = held.unwrap_or(0);
    match level {
        L::Emerg | L::Alert | L::Critical | L::Error => tracing::error!(target: "librdkafka", fac, held, "{message}"),
        L::Warning => tracing::warn!(target: "librdkafka", fac, held, "{message}"),
        L::Notice | L::Info => tracing::info!(target: "librdkafka", fac, "{message}"),
        L::Debug => tracing::debug!(target: "librdkafka", fac, "{message}"),
    }
}

/// The context of every Kafka client but the pipeline consumer (which has its own, with
/// events and throttling): redacted logs and errors.
///
/// It keeps the first refusal of the client's credentials or permissions it is told of
/// ([`is_refusal`]): a call that fails after one (librdkafka reports a transport failure or a
/// timeout) is explained by it ([`LoggedContext::failure`]).
/// Clones share what they keep: a clone kept beside a client explains its failures.
#[derive(Clone, Default)]
pub(crate) struct LoggedContext {
    refused: std::sync::Arc<std::sync::OnceLock<String>>,
}

impl LoggedContext {
    /// The error of a failed call `what`: [`Error::KafkaRefused`] with the refusal when the
    /// brokers refused this client, else [`Error::Kafka`] with `e`.
    pub(crate) fn failure(&self, what: &str, e: impl std::fmt::Display) -> Error {
        match self.refused.get() {
            Some(why) => Error::KafkaRefused(format!("{what}: {why}")),
            None => Error::Kafka(format!("{what}: {e}")),
        }
    }
}

impl LoggedContext {
    /// Keeps `error` as the refusal that explains later failures, unless one is kept already.
    fn note_refusal(&self, error: &KafkaError, reason: &str) {
        let _ = self.refused.set(if reason.is_empty() {
            error.to_string()
        } else {
            format!("{error}: {}", redact(reason))
        });
    }
}

impl ClientContext for LoggedContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        log_line(level, fac, message, None);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_end_of_partition(&error) {
            tracing::debug!(target: "librdkafka", "end of partition: {}", redact(reason));
            return;
        }
        if is_refusal(&error) {
            self.note_refusal(&error, reason);
        }
        tracing::warn!(target: "librdkafka", error = %redact(&error.to_string()), reason = %redact(reason), "kafka.client_error");
    }
}

impl ConsumerContext for LoggedContext {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_credentials_and_permissions_not_outages() {
        let global = |c| KafkaError::Global(c);
        for c in [RDKafkaErrorCode::Authentication, RDKafkaErrorCode::SaslAuthenticationFailed] {
            assert!(is_refusal(&global(c)), "{c:?}");
        }
        assert!(is_refusal(&KafkaError::MessageConsumption(RDKafkaErrorCode::TopicAuthorizationFailed)));
        assert!(is_refusal(&KafkaError::MessageConsumption(RDKafkaErrorCode::GroupAuthorizationFailed)));
        for c in [RDKafkaErrorCode::AllBrokersDown, RDKafkaErrorCode::BrokerTransportFailure, RDKafkaErrorCode::SSL] {
            assert!(!is_refusal(&global(c)), "{c:?} passes");
        }
    }

    #[test]
    fn user_info_is_redacted_wherever_it_appears() {
        assert_eq!(
            redact("sasl_ssl://alice:hunter2@broker-1:9092/bootstrap: Connect failed"),
            "sasl_ssl://<redacted>@broker-1:9092/bootstrap: Connect failed"
        );
        assert_eq!(
            redact("[thrd:sasl_plaintext://alice:hunter2@127.0.0.1:9092/b]: down"),
            "[thrd:sasl_plaintext://<redacted>@127.0.0.1:9092/b]: down"
        );
        assert!(!redact("[thrd:alice:hunter2@127.0.0.1:9092/b]: down").contains("hunter2"));
        assert!(!redact("user:hunter2@a:1,bob:pw@b:2").contains("hunter2"));
        assert_eq!(redact("no credentials here"), "no credentials here");
    }
}
