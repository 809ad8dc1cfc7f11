//! A retrying `ObjectStore` decorator for the calls whose repetition is harmless.
//!
//! Every table's store sits behind it. Reads (GET, ranged GET, listings), overwriting PUTs
//! (data files under unique names, checkpoints, `_last_checkpoint`) and copies are retried on
//! transient errors — timeouts, 5xx after the client's own retries, connection resets — a few
//! times with backoff. A listing cut short is resumed by listing again and skipping what was
//! already delivered (local listings are not sorted, so an offset cannot be trusted).
//!
//! Never retried here: conditional PUTs (`PutMode::Create`, the commit), whose outcome decides
//! exactly-once and is resolved by the committer by reading the version back; deletes (their
//! callers are best-effort or vacuum, which runs again); multipart uploads.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// Retries after the first attempt.
const RETRIES: u32 = crate::common::retry::STORE_CALL;

/// Store requests sent by this process (every table, retries included; a listing counts once
/// per attempt, not per page): what a deployment pays its object store for.
static REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn sent() {
    REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Store requests sent by this process so far.
pub(crate) fn requests() -> u64 {
    REQUESTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether `e` may go away on its own (anything the store did not answer definitively).
pub(crate) fn is_transient(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::Generic { .. } | object_store::Error::JoinError { .. })
}

fn backoff(retry: u32) -> Duration {
    crate::common::backoff::FAULTS.delay(retry)
}

/// The decorator.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct RetryingStore {
    inner: Arc<dyn ObjectStore>,
}

impl RetryingStore {
    /// Wraps `inner`.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(inner: Arc<dyn ObjectStore>) -> RetryingStore {
        RetryingStore { inner }
    }
}

impl fmt::Display for RetryingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Retrying({})", self.inner)
    }
}

/// Runs `call` until it succeeds, fails definitively, or the retries are used up.
macro_rules! retrying {
    ($what:literal, $location:expr, $call:expr) => {{
        let mut retry = 0;
        loop {
            sent();
            match $call {
                Err(e) if is_transient(&e) && retry < RETRIES => {
                    tracing::debug!(op = $what, location = %$location, retry, error = %e, "store.retry");
                    tokio::time::sleep(backoff(retry)).await;
                    retry += 1;
                }
                other => break other,
            }
        }
    }};
}

#[async_trait::async_trait]
impl ObjectStore for RetryingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        if !matches!(opts.mode, PutMode::Overwrite) {
            sent();
            return self.inner.put_opts(location, payload, opts).await;
        }
        retrying!("put", location, self.inner.put_opts(location, payload.clone(), opts.clone()).await)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        sent();
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        retrying!("get", location, self.inner.get_opts(location, options.clone()).await)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        retrying!("get_ranges", location, self.inner.get_ranges(location, ranges).await)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations.inspect(|_| sent()).boxed())
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        resumed(self.inner.clone(), prefix.cloned(), None)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        resumed(self.inner.clone(), prefix.cloned(), Some(offset.clone()))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let at = prefix.cloned().unwrap_or_default();
        retrying!("list_with_delimiter", at, self.inner.list_with_delimiter(prefix).await)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        retrying!("copy", to, self.inner.copy_opts(from, to, options.clone()).await)
    }
}

/// A listing that starts over after a transient error and skips what it already delivered.
fn resumed(
    inner: Arc<dyn ObjectStore>,
    prefix: Option<Path>,
    offset: Option<Path>,
) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    let open = {
        let (inner, prefix, offset) = (inner.clone(), prefix.clone(), offset.clone());
        move || {
            sent();
            match &offset {
                Some(o) => inner.list_with_offset(prefix.as_ref(), o),
                None => inner.list(prefix.as_ref()),
            }
        }
    };
    let first = open();
    let state = (first, HashSet::<Path>::new(), 0u32, false);
    stream::unfold(state, move |(mut current, mut seen, mut retry, done)| {
        let open = open.clone();
        async move {
            if done {
                return None;
            }
            loop {
                match current.next().await {
                    Some(Ok(meta)) => {
                        if seen.insert(meta.location.clone()) {
                            return Some((Ok(meta), (current, seen, retry, false)));
                        }
                    }
                    Some(Err(e)) if is_transient(&e) && retry < RETRIES => {
                        tracing::debug!(retry, error = %e, "store.retry: listing again");
                        tokio::time::sleep(backoff(retry)).await;
                        retry += 1;
                        current = open();
                    }
                    Some(Err(e)) => return Some((Err(e), (current, seen, retry, true))),
                    None => return None,
                }
            }
        }
    })
    .boxed()
}
