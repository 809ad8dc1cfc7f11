//! The one public error type of deltabus.
//!
//! Every fallible public function returns [`Result`]. Variants carry structured fields (path,
//! version, feature) so callers can react without parsing messages, and [`Error::kind`]
//! classifies each error as the user's input, an external system, or a bug of ours.
//! A commit conflict is *not* an error: the committer returns it as an outcome value.

use std::fmt;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Who has to act on an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad input: a malformed or hostile table, a wrong argument, an invalid config.
    User,
    /// An external system failed: storage, network, broker.
    External,
    /// An invariant of deltabus itself did not hold.
    Internal,
}

/// Everything that can go wrong in deltabus.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No `_delta_log` with any commit or checkpoint at the location.
    #[error("no Delta table at {location}: no commit or checkpoint found in _delta_log")]
    NotATable { location: String },

    /// A version that was asked for, or that replay needs, is not in the log.
    #[error("version {version} of the table is missing from the log: {reason}")]
    MissingVersion { version: u64, reason: String },

    /// The log breaks the Delta protocol (bad JSON, missing required fields, invalid actions).
    #[error("invalid Delta log at {path}: {message}")]
    InvalidLog { path: String, message: String },

    /// The table uses a protocol version or feature that deltabus does not implement.
    #[error("unsupported table protocol: {message}")]
    Unsupported { message: String },

    /// A path in the log resolves outside the table root, or cannot be used.
    #[error("refused path {path:?} from the log: {reason}")]
    PathRefused { path: String, reason: String },

    /// A deletion vector could not be decoded or does not match its descriptor.
    #[error("invalid deletion vector {id}: {reason}")]
    DeletionVector { id: String, reason: String },

    /// A data file could not be read or converted to the table schema.
    #[error("cannot read data file {path}: {message}")]
    DataFile { path: String, message: String },

    /// The object store failed.
    #[error("storage error at {path}: {source}")]
    Storage {
        path: String,
        #[source]
        source: object_store::Error,
    },

    /// A commit could not land because of a concurrent commit (reported by commands that
    /// surface a [`CommitOutcome::Conflict`](crate::delta::transaction::CommitOutcome) as a
    /// failure; the library itself returns conflicts as outcomes).
    #[error("commit conflict at version {version}: {reason}")]
    CommitConflict { version: u64, reason: String },

    /// A commit was sent but whether it landed is unknown: the store failed after the PUT
    /// (an answer lost, a timeout) and the version could not be read back. Its staged files
    /// are kept (an orphan is vacuum's; a deleted file of a landed commit would break the
    /// table). Retrying is safe for writes that carry a `txn`: the table tells whether the
    /// first attempt landed.
    #[error("the outcome of the commit at version {version} is unknown ({reason}); its files are kept, a retry re-reads the table")]
    CommitUnknown { version: u64, reason: String },

    /// The Kafka client or brokers failed.
    #[error("kafka: {0}")]
    Kafka(String),

    /// The Kafka brokers refused this client's credentials or permissions (a wrong password,
    /// an unknown user, a missing ACL): waiting does not help, the configuration must change.
    #[error("kafka refused the client: {0}")]
    KafkaRefused(String),

    /// A newer holder of the same role (a transactional producer of the same id) took over:
    /// this one may no longer write for it.
    #[error("fenced: {0}")]
    Fenced(String),

    /// A user-supplied argument or configuration value is invalid.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A configuration key (`pipelines.orders.kafka.start`, `server.listen`) or the setting
    /// behind a flag has a value it does not take: callers that show the setting under another
    /// name (a flag) match on `key`, never on the message.
    #[error("invalid argument: {key}: {why}")]
    InvalidConfig { key: String, why: String },

    /// Local I/O failed (stdout, local files outside the object store).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// A bug: an internal invariant was violated.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Classifies the error for exit codes, logs and retries.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Storage { .. }
            | Error::Io(_)
            | Error::CommitConflict { .. }
            | Error::CommitUnknown { .. }
            | Error::Kafka(_)
            | Error::Fenced(_) => ErrorKind::External,
            Error::Internal(_) => ErrorKind::Internal,
            _ => ErrorKind::User,
        }
    }

    /// Whether retrying the same operation may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Storage { source, .. } => !matches!(
                source,
                object_store::Error::NotFound { .. }
                    | object_store::Error::InvalidPath { .. }
                    | object_store::Error::NotSupported { .. }
                    | object_store::Error::NotImplemented { .. }
                    | object_store::Error::UnknownConfigurationKey { .. }
            ),
            // A closed pipe stays closed: the reader is gone, and the command ends quietly.
            Error::Io(e) => e.kind() != std::io::ErrorKind::BrokenPipe,
            Error::CommitConflict { .. } | Error::CommitUnknown { .. } => true,
            _ => false,
        }
    }

    pub(crate) fn invalid_log(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Error::InvalidLog { path: path.to_string(), message: message.to_string() }
    }

    pub(crate) fn invalid_config(key: impl fmt::Display, why: impl fmt::Display) -> Self {
        Error::InvalidConfig { key: key.to_string(), why: why.to_string() }
    }

    pub(crate) fn unsupported(message: impl fmt::Display) -> Self {
        Error::Unsupported { message: message.to_string() }
    }

    pub(crate) fn storage(path: impl fmt::Display, source: object_store::Error) -> Self {
        let text = source.to_string();
        // Which store failed is typed; the set-up mistakes below are not (object_store reports
        // them as text inside `Generic`), so its own words are recognised here, once, and
        // become typed errors with each store's fix.
        let store = match &source {
            object_store::Error::Generic { store, .. } => *store,
            _ => "",
        };
        let azure = store == "MicrosoftAzure";
        let gcs = store == "GCS" || text.contains("metadata.google.internal");
        if matches!(source, object_store::Error::UnknownConfigurationKey { .. }) {
            return Error::InvalidArgument(format!(
                "{path}: {text}: storage options are the object store's own keys (aws_*, azure_*, google_*; see the docs' Configuration guide)"
            ));
        }
        if text.contains("Account must be specified") {
            return Error::InvalidArgument(format!(
                "{path}: no Azure storage account: give azure_storage_account_name (storage option or the \
                 AZURE_STORAGE_ACCOUNT_NAME variable) or a URL naming it (abfss://container@account.dfs.core.windows.net/...)"
            ));
        }
        if text.contains("169.254.169.254") || text.contains("metadata.google.internal") {
            let fix = if azure {
                "no Azure credentials: give azure_storage_account_key, azure_storage_sas_key or azure_client_id / \
                 azure_client_secret / azure_tenant_id (storage options or the AZURE_* variables), or run with a managed identity"
            } else if gcs {
                "no Google Cloud credentials: give google_service_account (a key file path) or google_service_account_key \
                 (storage options, or GOOGLE_APPLICATION_CREDENTIALS), or run on a GCP machine with a service account"
            } else {
                "no S3 credentials: give aws_access_key_id and aws_secret_access_key (storage options, \
                 DELTABUS__STORAGE__OPTIONS__..., or the AWS_* environment variables) or run with an instance role"
            };
            return Error::InvalidArgument(format!("{path}: {fix}"));
        }
        if text.contains("builder error") {
            return Error::InvalidArgument(format!(
                "{path}: the storage client refused its settings ({text}); an http:// endpoint needs aws_allow_http=true \
                 (azure_allow_http / google: allow_http)"
            ));
        }
        Error::Storage { path: path.to_string(), source }
    }

    pub(crate) fn data_file(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        Error::DataFile { path: path.to_string(), message: message.to_string() }
    }

    pub(crate) fn dv(id: impl fmt::Display, reason: impl fmt::Display) -> Self {
        Error::DeletionVector { id: id.to_string(), reason: reason.to_string() }
    }
}
