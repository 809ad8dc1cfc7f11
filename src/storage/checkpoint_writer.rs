//! Writing a classic checkpoint and then `_last_checkpoint`.
//!
//! A classic checkpoint for version v may be written by several writers at once: each PUT is
//! atomic and all hold the same content, so the last one winning is harmless. The checkpoint
//! file is complete before `_last_checkpoint` points at it.

use bytes::Bytes;
use object_store::{ObjectStoreExt, PutPayload};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::location::Table;
use crate::delta::checkpoint_write::{checkpoint_actions, checkpoint_batches, checkpoint_schema};
use crate::delta::last_checkpoint::LastCheckpoint;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};

/// Rows per Arrow batch while encoding a checkpoint.
const BATCH_ROWS: usize = 16 * 1024;

impl Table {
    /// Writes `%020d.checkpoint.parquet` for the snapshot's version, then `_last_checkpoint`.
    ///
    /// # Errors
    /// [`Error::Storage`] when a PUT fails; [`Error::Internal`] when encoding fails.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn write_checkpoint(&self, snapshot: &Snapshot) -> Result<LastCheckpoint> {
        // A checkpoint is a write: a protocol deltabus cannot write is refused here too.
        crate::delta::features::check_writable(&snapshot.protocol, &snapshot.metadata)?;
        let actions = checkpoint_actions(snapshot);
        let num_adds = snapshot.file_count() as i64;
        let rows = actions.len() as i64;
        // Encoding is CPU work: off the I/O threads (and usable from any runtime flavour).
        let bytes = tokio::task::spawn_blocking(move || encode(&actions))
            .await
            .map_err(|e| Error::Internal(format!("checkpoint encoder task: {e}")))??;
        let size = bytes.len() as i64;
        let name = format!("{:020}.checkpoint.parquet", snapshot.version);
        let path = self.log_path(&name);
        self.store.put(&path, PutPayload::from(bytes)).await.map_err(|e| Error::storage(&path, e))?;
        let last = LastCheckpoint {
            version: snapshot.version,
            size: rows,
            parts: None,
            size_in_bytes: Some(size),
            num_of_add_files: Some(num_adds),
            checksum: None,
        };
        crate::failpoint::hit("checkpoint.before_last_checkpoint");
        let hint = self.log_path("_last_checkpoint");
        self.store
            .put(&hint, PutPayload::from(last.to_json_with_checksum().into_bytes()))
            .await
            .map_err(|e| Error::storage(&hint, e))?;
        Ok(last)
    }
}

fn encode(actions: &[crate::delta::actions::Action]) -> Result<Bytes> {
    let batches = checkpoint_batches(actions, BATCH_ROWS)?;
    let props = WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::default())).build();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, checkpoint_schema(), Some(props))
        .map_err(|e| Error::Internal(format!("checkpoint writer: {e}")))?;
    for b in &batches {
        writer.write(b).map_err(|e| Error::Internal(format!("checkpoint write: {e}")))?;
    }
    writer.close().map_err(|e| Error::Internal(format!("checkpoint close: {e}")))?;
    Ok(Bytes::from(buf))
}
