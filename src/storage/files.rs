//! Plain file operations on a table's own files, by path relative to its root: listing with
//! sizes and times, reading, writing, sizing and deleting. The operations above the storage
//! shell (registrations, VACUUM, log cleanup, deletion-vector files) use these instead of the
//! object store, so every store call goes through one place and its error wording.

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::location::Table;
use crate::error::{Error, Result};

/// The part size of a streamed copy ([`Table::copy_file_from`]); files up to this size are
/// copied with one request. Above S3's 5 MiB minimum part size.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) const COPY_PART: usize = 8 * 1024 * 1024;

/// One listed file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ListedFile {
    /// Relative to the table root, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Last modification, in milliseconds since the epoch.
    pub modified_ms: i64,
}

table_view!(
    /// Plain file operations on a table's own files (by path relative to its root).
    Objects,
    /// Plain file operations on the table's own files.
    objects
);

impl Objects<'_> {
    /// Every file under `dir` (relative to the root; empty for the whole table), recursively.
    ///
    /// # Errors
    /// Storage errors.
    pub(crate) async fn list_files(&self, dir: &str) -> Result<Vec<ListedFile>> {
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
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn read_bytes(&self, rel: &str) -> Result<Bytes> {
        self.get_bytes(&self.relative_path(rel)).await
    }

    /// Writes (or overwrites) a file.
    ///
    /// # Errors
    /// Storage errors.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn put_bytes(&self, rel: &str, bytes: impl Into<Bytes>) -> Result<()> {
        let path = self.relative_path(rel);
        self.store.put(&path, PutPayload::from(bytes.into())).await.map_err(|e| Error::storage(rel, e))?;
        Ok(())
    }

    /// Copies the file at `rel` in `source` to the same path in this table, streaming: a file
    /// larger than one part is sent as a multipart upload of [`COPY_PART`]-byte parts, at most
    /// two in flight, so a copy holds about three parts in memory whatever the file's size.
    /// Returns the bytes copied. A copy that fails part way is aborted (nothing at `rel`, or
    /// what was there before).
    ///
    /// # Errors
    /// Storage errors on either side, including the source file not found.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn copy_file_from(&self, source: &Table, rel: &str) -> Result<u64> {
        let fail = |e| Error::storage(format!("{}/{rel}", source.url()), e);
        let got = source.store.get(&source.relative_path(rel)).await.map_err(fail)?;
        let size = got.meta.size;
        let to = self.relative_path(rel);
        let put_fail = |e| Error::storage(format!("{}/{rel}", self.url()), e);
        if size <= COPY_PART as u64 {
            let bytes = got.bytes().await.map_err(fail)?;
            self.store.put(&to, PutPayload::from(bytes)).await.map_err(put_fail)?;
            return Ok(size);
        }
        let upload = self.store.put_multipart(&to).await.map_err(put_fail)?;
        let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, COPY_PART);
        let mut stream = got.into_stream();
        let sent = async {
            while let Some(chunk) = stream.try_next().await.map_err(fail)? {
                writer.wait_for_capacity(2).await.map_err(put_fail)?;
                writer.put(chunk);
            }
            Ok::<(), Error>(())
        }
        .await;
        match sent {
            Ok(()) => {
                writer.finish().await.map_err(put_fail)?;
                Ok(size)
            }
            Err(e) => {
                if let Err(abort) = writer.abort().await {
                    tracing::warn!(path = rel, error = %abort, "copy.abort_failed: the partial upload is the store's to expire");
                }
                Err(e)
            }
        }
    }

    /// Creates a file unless it exists (put-if-absent): `true` when created, `false` when the
    /// file was already there. A lost answer is an error: the caller reads the file back.
    ///
    /// # Errors
    /// Storage errors, including an outcome not known.
    pub(crate) async fn create_file(&self, rel: &str, bytes: impl Into<Bytes>) -> Result<bool> {
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
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn file_size(&self, rel: &str) -> Result<Option<u64>> {
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
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn delete_file(&self, rel: &str) -> Result<()> {
        match self.store.delete(&self.relative_path(rel)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Error::storage(format!("{}/{rel}", self.url()), e)),
        }
    }
}
