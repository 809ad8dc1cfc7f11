//! An `AsyncFileReader` that checks what the parquet crate would trust blindly: the footer is
//! fetched and scanned before the crate decodes it, and every column chunk it fetches is walked
//! page header by page header ([`crate::delta::parquet_pages`]) before its decoder sees it, so
//! a damaged or hostile data file is an error instead of minutes or hours of spinning.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

/// How much of a file's end is fetched at once: most footers fit.
const FOOTER_PREFETCH: u64 = 64 * 1024;

/// Wraps a reader of a file of `size` bytes; chunk ranges are learnt from its footer.
pub(super) struct CheckedReader<R> {
    inner: R,
    size: u64,
    /// Byte ranges of the file's column chunks.
    chunks: Vec<Range<u64>>,
}

fn damaged(what: String) -> ParquetError {
    ParquetError::General(what)
}

impl<R: AsyncFileReader> CheckedReader<R> {
    pub(super) fn new(inner: R, size: u64) -> Self {
        Self { inner, size, chunks: Vec::new() }
    }

    /// Fetches, scans and decodes the footer.
    async fn load_metadata(&mut self) -> Result<ParquetMetaData> {
        let size = self.size;
        if size < 12 {
            return Err(damaged(format!("a {size}-byte file is too short for Parquet")));
        }
        let start = size.saturating_sub(FOOTER_PREFETCH);
        let mut tail = self.inner.get_bytes(start..size).await?;
        let n = crate::delta::parquet_pages::footer_len(&tail)
            .ok_or_else(|| damaged("the file does not end in a Parquet footer (PAR1)".into()))?;
        let footer_start = (size - 8)
            .checked_sub(n as u64)
            .filter(|s| *s >= 4)
            .ok_or_else(|| damaged(format!("the Parquet footer claims {n} bytes in a {size}-byte file")))?;
        if footer_start < start {
            tail = self.inner.get_bytes(footer_start..size).await?;
        }
        let offset = (footer_start - (size - tail.len() as u64)) as usize;
        let footer = tail.slice(offset..tail.len() - 8);
        if let Some(problem) = crate::delta::parquet_pages::footer_problem(&footer) {
            return Err(damaged(problem));
        }
        // On the blocking pool (threads are reused), given up after the deadline.
        let decoding = tokio::task::spawn_blocking(move || {
            crate::panic_guard::guard(|| ParquetMetaDataReader::decode_metadata(&footer))
        });
        match tokio::time::timeout(crate::panic_guard::FOOTER_DEADLINE, decoding).await {
            Ok(Ok(Ok(decoded))) => decoded,
            Ok(Ok(Err(panic))) => Err(damaged(panic)),
            Ok(Err(e)) => Err(damaged(format!("footer decoding task: {e}"))),
            Err(_) => Err(damaged(format!(
                "decoding the footer took longer than {} s: the file is damaged",
                crate::panic_guard::FOOTER_DEADLINE.as_secs()
            ))),
        }
    }

    fn check(&self, range: &Range<u64>, bytes: &Bytes) -> Result<()> {
        if !self.chunks.contains(range) {
            return Ok(());
        }
        match crate::delta::parquet_pages::chunk_problem(bytes) {
            None => Ok(()),
            Some(problem) => Err(ParquetError::General(format!(
                "damaged column chunk at bytes {}..{}: {problem}",
                range.start, range.end
            ))),
        }
    }
}

/// Decodes a footer held in memory (a checkpoint's) after
/// [`crate::delta::parquet_pages::footer_problem`] found nothing, under
/// [`crate::panic_guard::FOOTER_DEADLINE`].
///
/// # Errors
/// A damaged footer.
pub(crate) fn decode_footer(footer: Bytes) -> Result<ParquetMetaData> {
    if let Some(problem) = crate::delta::parquet_pages::footer_problem(&footer) {
        return Err(damaged(problem));
    }
    crate::panic_guard::with_deadline(crate::panic_guard::FOOTER_DEADLINE, move || {
        ParquetMetaDataReader::decode_metadata(&footer)
    })
    .map_err(damaged)?
}

impl<R: AsyncFileReader> AsyncFileReader for CheckedReader<R> {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            let bytes = self.inner.get_bytes(range.clone()).await?;
            self.check(&range, &bytes)?;
            Ok(bytes)
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        async move {
            let all = self.inner.get_byte_ranges(ranges.clone()).await?;
            for (range, bytes) in ranges.iter().zip(&all) {
                self.check(range, bytes)?;
            }
            Ok(all)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        async move {
            let metadata = Arc::new(self.load_metadata().await?);
            self.chunks = metadata
                .row_groups()
                .iter()
                .flat_map(|g| g.columns())
                .filter_map(|c| {
                    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
                    let start = u64::try_from(start).ok()?;
                    Some(start..start.checked_add(u64::try_from(c.compressed_size()).ok()?)?)
                })
                .collect();
            Ok(metadata)
        }
        .boxed()
    }
}
