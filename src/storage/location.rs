//! Table locations: a URL (or plain path) to an object store and a root inside it.
//!
//! Supported: `file://` and plain paths, `memory://`, `s3://` (also `s3a://`), `az://`,
//! `abfs[s]://`, `adl://`, `azure://`, `gs://`. Credentials and endpoints come from the
//! environment (`AWS_*`, `AZURE_*`, `GOOGLE_*`) and from explicit options, which win.

use std::collections::HashMap;
use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::{Path, PathPart};
use object_store::ObjectStore;
use url::Url;

use crate::delta::paths::resolve_in_table;
use crate::error::{Error, Result};

/// Options for opening a table's storage.
#[derive(Clone, Default)]
pub struct StorageOptions {
    /// Backend options (`aws_endpoint`, `azure_storage_account_name`, ...), as object_store
    /// names them. Values are never printed.
    pub options: HashMap<String, String>,
    /// Accept absolute paths in the log when they lie under the table root.
    pub allow_absolute_paths: bool,
    /// The one clock of every table opened with these options.
    pub clock: crate::common::clock::Clock,
}

/// Refuses an option no backend knows (a misspelling), whatever the location: options for
/// another backend are ignored by a local or in-memory table (one configuration may serve
/// tables on several backends), unknown ones are not.
fn check_option_keys(location: &str, options: &StorageOptions) -> Result<()> {
    for key in options.options.keys() {
        let known = key.parse::<object_store::aws::AmazonS3ConfigKey>().is_ok()
            || key.parse::<object_store::azure::AzureConfigKey>().is_ok()
            || key.parse::<object_store::gcp::GoogleConfigKey>().is_ok();
        if !known {
            return Err(Error::InvalidArgument(format!(
                "{location}: unknown storage option {key:?} (object_store's names: aws_endpoint, aws_region, azure_storage_account_name, google_service_account, ...)"
            )));
        }
    }
    Ok(())
}

impl std::fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&String> = self.options.keys().collect();
        f.debug_struct("StorageOptions")
            .field("option_keys", &keys)
            .field("allow_absolute_paths", &self.allow_absolute_paths)
            .finish()
    }
}

/// An open table location.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Table {
    pub(crate) store: Arc<dyn ObjectStore>,
    /// The table root inside the store.
    pub(crate) root: Path,
    /// The table root as a URL string, without a trailing slash.
    pub(crate) url: String,
    pub(crate) options: StorageOptions,
    /// The key index of keyed writes through this handle and its clones.
    pub(crate) key_index: super::key_index::SharedIndex,
    /// Work after each landed commit ([`super::hooks`]).
    pub(crate) hooks: super::hooks::Hooks,
}

impl Table {
    /// Opens a location.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unparsable location or unsupported scheme;
    /// [`Error::Storage`] when the backend rejects its configuration.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn open(location: &str, options: StorageOptions) -> Result<Table> {
        let url = parse_location(location)?;
        check_option_keys(location, &options)?;
        let (store, root): (Arc<dyn ObjectStore>, Path) = match url.scheme() {
            "file" => {
                let dir =
                    url.to_file_path().map_err(|_| Error::InvalidArgument(format!("not a local path: {location}")))?;
                if !dir.is_dir() {
                    return Err(Error::NotATable { location: location.to_string() });
                }
                let fs = LocalFileSystem::new_with_prefix(&dir).map_err(|e| Error::storage(location, e))?;
                (Arc::new(fs), Path::default())
            }
            "memory" => (memory_store(url.host_str().unwrap_or("default")), path_from_url(&url)),
            "s3" | "s3a" => {
                let mut b = object_store::aws::AmazonS3Builder::from_env().with_url(url.as_str());
                for (k, v) in &options.options {
                    b = b.with_config(k.parse().map_err(|e| Error::storage(location, e))?, v);
                }
                (Arc::new(b.build().map_err(|e| Error::storage(location, e))?), path_from_url(&url))
            }
            "az" | "abfs" | "abfss" | "adl" | "azure" => {
                let mut b = object_store::azure::MicrosoftAzureBuilder::from_env().with_url(url.as_str());
                for (k, v) in &options.options {
                    b = b.with_config(k.parse().map_err(|e| Error::storage(location, e))?, v);
                }
                (Arc::new(b.build().map_err(|e| Error::storage(location, e))?), path_from_url(&url))
            }
            "gs" => {
                if !gcs_credentials_given(&options) && !on_google_cloud() {
                    // Without credentials the client asks the metadata server of a Google
                    // Cloud machine, retrying for seconds; off Google Cloud that cannot work.
                    return Err(Error::InvalidArgument(format!(
                        "{location}: no Google Cloud credentials: give google_service_account (a key file path) or \
                         google_service_account_key (storage options, or GOOGLE_APPLICATION_CREDENTIALS), or run on a \
                         GCP machine with a service account"
                    )));
                }
                let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(url.as_str());
                for (k, v) in &options.options {
                    b = b.with_config(k.parse().map_err(|e| Error::storage(location, e))?, v);
                }
                (Arc::new(b.build().map_err(|e| Error::storage(location, e))?), path_from_url(&url))
            }
            other => return Err(Error::InvalidArgument(format!("unsupported storage scheme {other:?} in {location}"))),
        };
        let url = url.as_str().trim_end_matches('/').to_string();
        // Transient errors of repeatable calls are retried; injected faults (tests) sit below.
        let store: Arc<dyn ObjectStore> =
            Arc::new(super::retrying::RetryingStore::new(super::faulty::wrap_if_armed(store)));
        let (key_index, hooks) = (super::key_index::SharedIndex::default(), super::hooks::default_hooks());
        Ok(Table { store, root, url, options, key_index, hooks })
    }

    /// Opens a location for writing: a local directory is created when missing.
    ///
    /// # Errors
    /// As [`Table::open`], and [`Error::Io`] when the directory cannot be created.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn open_for_write(location: &str, options: StorageOptions) -> Result<Table> {
        let looks_local = !location.contains("://") || location.starts_with("file://");
        if looks_local {
            let path = location.strip_prefix("file://").unwrap_or(location);
            if std::path::Path::new(path).exists() && !std::path::Path::new(path).is_dir() {
                return Err(Error::InvalidArgument(format!("{path} is a file, not a table directory")));
            }
            std::fs::create_dir_all(path).map_err(|e| {
                Error::Io(std::io::Error::new(e.kind(), format!("cannot create the table directory {path}: {e}")))
            })?;
        }
        Table::open(location, options)
    }

    /// The same table through a decorated store (request counting, throttling, fault
    /// injection): `wrap` receives the current store and returns its replacement.
    #[must_use]
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn map_store(mut self, wrap: impl FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore>) -> Table {
        self.store = wrap(self.store);
        self
    }

    /// The clock this table's commits, files and retention rules read.
    pub(crate) fn clock(&self) -> &crate::common::clock::Clock {
        &self.options.clock
    }

    /// The table root as a URL.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Best-effort deletion of files a transaction wrote but did not commit (paths as they
    /// would appear in the log). Nothing references them, so a failure only leaves an orphan
    /// for vacuum.
    pub(crate) async fn delete_uncommitted(&self, log_paths: &[String]) {
        use object_store::ObjectStoreExt;
        for raw in log_paths {
            if let Ok((path, _)) = self.data_path(raw.as_str()) {
                let _ = self.store.delete(&path).await;
            }
        }
    }

    /// The first of `log_paths` (add paths as the log spells them) that no longer exists:
    /// a commit must never name files that are gone.
    ///
    /// # Errors
    /// Storage errors other than not-found; paths outside the root.
    pub(crate) async fn first_missing(&self, log_paths: &[String]) -> Result<Option<String>> {
        use object_store::ObjectStoreExt;
        for raw in log_paths {
            let (path, rel) = self.data_path(raw.as_str())?;
            match self.store.head(&path).await {
                Ok(_) => {}
                Err(object_store::Error::NotFound { .. }) => return Ok(Some(rel)),
                Err(e) => return Err(Error::storage(rel, e)),
            }
        }
        Ok(None)
    }

    /// The table root inside [`Table::object_store`].
    pub(crate) fn root_path(&self) -> Path {
        self.root.clone()
    }

    /// The object store holding the table (its root is [`Table::url`]'s path).
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn object_store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// The object path of `_delta_log/<name>`.
    pub(crate) fn log_path(&self, name: &str) -> Path {
        self.root.clone().join("_delta_log").join(name)
    }

    /// The object path of a path taken from the log, after containment checks.
    ///
    /// # Errors
    /// [`Error::PathRefused`] when the path leaves the table root.
    pub(crate) fn data_path(&self, raw: &str) -> Result<(Path, String)> {
        let rel = resolve_in_table(raw, &self.url, self.options.allow_absolute_paths)?;
        Ok((self.relative_path(&rel), rel))
    }

    /// The object path of a decoded path relative to the root.
    ///
    /// Segments are kept verbatim where object_store accepts them (so a file literally named
    /// `p=a%3Ab` is found), and escaped only when they hold characters it cannot represent.
    pub(crate) fn relative_path(&self, rel: &str) -> Path {
        rel.split('/').filter(|s| !s.is_empty()).fold(self.root.clone(), |p, seg| match PathPart::parse(seg) {
            Ok(part) => p.join(part),
            Err(_) => p.join(PathPart::from(seg)),
        })
    }
}

/// Whether GCS credentials (or an anonymous client) are configured through storage options
/// or the variables the client reads.
fn gcs_credentials_given(options: &StorageOptions) -> bool {
    let keys = [
        "google_service_account",
        "google_service_account_path",
        "google_service_account_key",
        "google_application_credentials",
        "google_skip_signature",
        "service_account",
        "service_account_key",
    ];
    options.options.keys().any(|k| keys.contains(&k.to_ascii_lowercase().as_str()))
        || [
            "GOOGLE_SERVICE_ACCOUNT",
            "GOOGLE_SERVICE_ACCOUNT_PATH",
            "GOOGLE_SERVICE_ACCOUNT_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GOOGLE_SKIP_SIGNATURE",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// Whether this is a Google Cloud machine (whose metadata server can lend credentials).
fn on_google_cloud() -> bool {
    std::env::var_os("GCE_METADATA_HOST").is_some()
        || std::fs::read_to_string("/sys/class/dmi/id/product_name").is_ok_and(|n| n.contains("Google"))
}

fn parse_location(location: &str) -> Result<Url> {
    if location.is_empty() {
        return Err(Error::InvalidArgument("empty table location".into()));
    }
    let looks_like_url = location
        .split_once("://")
        .is_some_and(|(s, _)| s.len() > 1 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'));
    if looks_like_url {
        return Url::parse(location)
            .map_err(|e| Error::InvalidArgument(format!("invalid table URL {location:?}: {e}")));
    }
    let path = std::path::Path::new(location);
    let abs = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir()?.join(path) };
    let abs = abs.canonicalize().map_err(|_| Error::NotATable { location: location.to_string() })?;
    Url::from_directory_path(&abs).map_err(|_| Error::InvalidArgument(format!("invalid local path {location:?}")))
}

fn path_from_url(url: &Url) -> Path {
    Path::from_url_path(url.path()).unwrap_or_default()
}

/// In-memory stores are shared per name within the process, so tests can open one twice.
fn memory_store(name: &str) -> Arc<dyn ObjectStore> {
    use std::sync::{Mutex, OnceLock};
    static STORES: OnceLock<Mutex<HashMap<String, Arc<InMemory>>>> = OnceLock::new();
    let map = STORES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut guard = match map.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    guard.entry(name.to_string()).or_insert_with(|| Arc::new(InMemory::new())).clone()
}
