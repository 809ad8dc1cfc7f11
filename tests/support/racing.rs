//! A store that lets a competitor go first: just before the first put-if-absent whose bytes
//! contain a marker (a commit of some operation) reaches the store, a hook runs once — another
//! commit at the same location, a delete or a compaction through a clean handle — so that the
//! commit under test loses its race at a chosen step, deterministically.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// What the hook gets: the store below, the location and bytes of the commit about to be
/// put, and its put options.
pub type Hook = Box<
    dyn Fn(Arc<dyn ObjectStore>, Path, Vec<u8>, PutOptions) -> BoxFuture<'static, object_store::Result<()>>
        + Send
        + Sync,
>;

pub struct GoesFirst {
    inner: Arc<dyn ObjectStore>,
    marker: &'static str,
    hook: Hook,
    done: AtomicBool,
}

impl GoesFirst {
    /// `inner` with `hook` run before the first create-PUT holding `marker`.
    pub fn wrap(inner: Arc<dyn ObjectStore>, marker: &'static str, hook: Hook) -> Arc<dyn ObjectStore> {
        Arc::new(GoesFirst { inner, marker, hook, done: AtomicBool::new(false) })
    }
}

impl fmt::Debug for GoesFirst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GoesFirst({:?})", self.marker)
    }
}

impl fmt::Display for GoesFirst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GoesFirst({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for GoesFirst {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let bytes: Vec<u8> = payload.iter().flat_map(|b| b.to_vec()).collect();
        let hit = matches!(opts.mode, PutMode::Create) && String::from_utf8_lossy(&bytes).contains(self.marker);
        if hit && !self.done.swap(true, Ordering::SeqCst) {
            (self.hook)(self.inner.clone(), location.clone(), bytes.clone(), opts.clone()).await?;
        }
        self.inner.put_opts(location, PutPayload::from(bytes), opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }
    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
