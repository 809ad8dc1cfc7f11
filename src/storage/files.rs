//! Plain file operations on a table's own files, by path relative to its root: listing with
//! sizes and times, reading, writing, sizing and deleting. The operations above the storage
//! shell (registrations, VACUUM, log cleanup, deletion-vector files) use these instead of the
//! object store, so every store call goes through one place and its error wording.

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::location::Table;
use crate::error::{Error, Result};

/// One listed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    /// Relative to the table root, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Last modification, in milliseconds since the epoch.
    pub modified_ms: i64,
}

impl Table {
    /// Every file under `dir` (relative to the root; empty for the whole table), recursively.
    ///
    /// # Errors
    /// Storage errors.
    pub async fn list_files(&self, dir: &str) -> Result<Vec<ListedFile>> {
        let root = self.root_path();
        let under = if dir.is_empty() { root.clone() } else { self.relative_path(dir) };
        let listed: Vec<_> =
            self.store.list(Some(&under)).try_collect().await.map_err(|e| Error::storage(self.url(), e))?;
        let prefix = root.as_ref().len();
        Ok(listed
            .into_iter()
            .map(|m| {
                let full = m.location.as_ref();
                let path = full.get(prefix..).unwrap_or(full).trim_start_matches('/').to_string();
                ListedFile { path, size: m.size, modified_ms: m.last_modified.timestamp_millis() }
            })
            .collect())
    }

    /// The bytes of a file.
    ///
    /// # Errors
    /// Storage errors, including not found.
    pub async fn read_bytes(&self, rel: &str) -> Result<Bytes> {
        self.get_bytes(&self.relative_path(rel)).await
    }

    /// Writes (or overwrites) a file.
    ///
    /// # Errors
    /// Storage errors.
    pub async fn put_bytes(&self, rel: &str, bytes: impl Into<Bytes>) -> Result<()> {
        let path = self.relative_path(rel);
        self.store.put(&path, PutPayload::from(bytes.into())).await.map_err(|e| Error::storage(rel, e))?;
        Ok(())
    }

    /// Creates a file unless it exists (put-if-absent): `true` when created, `false` when the
    /// file was already there. A lost answer is an error: the caller reads the file back.
    ///
    /// # Errors
    /// Storage errors, including an outcome not known.
    pub async fn create_file(&self, rel: &str, bytes: impl Into<Bytes>) -> Result<bool> {
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        match self.store.put_opts(&self.relative_path(rel), PutPayload::from(bytes.into()), opts).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(Error::storage(rel, e)),
        }
    }

    /// A file's size; `None` when there is no such file.
    ///
    /// # Errors
    /// Storage errors other than not found.
    pub async fn file_size(&self, rel: &str) -> Result<Option<u64>> {
        match self.store.head(&self.relative_path(rel)).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Error::storage(rel, e)),
        }
    }

    /// Deletes a file; a file already gone is not an error.
    ///
    /// # Errors
    /// Storage errors.
    pub async fn delete_file(&self, rel: &str) -> Result<()> {
        match self.store.delete(&self.relative_path(rel)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Error::storage(format!("{}/{rel}", self.url()), e)),
        }
    }
}
