//! Reading live rows: each data file's Parquet batches, converted to the logical schema with
//! its deletion vector applied.

use arrow::array::RecordBatch;
use futures::StreamExt;
// `ParquetObjectReader` is deprecated upstream in favour of hand-written `AsyncFileReader`s;
// it remains correct and is the simplest reader over an `ObjectStore`.
use object_store::ObjectStoreExt;
#[allow(deprecated)]
use parquet::arrow::async_reader::ParquetObjectReader;
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use roaring::RoaringTreemap;

use crate::delta::actions::{Add, PartitionValues};
use crate::delta::dv::{decode_bitmap, decode_file_record, DvLocation};
use crate::delta::scan::{RowFilter, ScanPlan};
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};

/// The logical rows of one data file.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FileRows {
    pub path: String,
    pub batches: Vec<RecordBatch>,
    /// Rows in the file before any selection.
    pub physical_rows: u64,
}

table_view!(
    /// A table's data files read as logical rows: the one reader of Parquet data files and
    /// deletion vectors.
    DataReader,
    /// The table's data files, read as logical rows.
    data
);

impl DataReader<'_> {
    /// The scan plan (logical schema, partitioning, column mapping) of a snapshot.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn scan_plan(&self, snapshot: &Snapshot) -> ScanPlan {
        ScanPlan::new(&snapshot.schema, &snapshot.metadata.partition_columns, snapshot.column_mapping())
    }

    /// Reads one live file's rows, DV applied.
    ///
    /// # Errors
    /// [`Error::PathRefused`] for paths outside the table; [`Error::DataFile`] and
    /// [`Error::DeletionVector`] for unreadable content; [`Error::Storage`] for I/O.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn read_file(&self, plan: &ScanPlan, add: &Add) -> Result<FileRows> {
        let mut batches = Vec::new();
        let mut rows = self
            .data()
            .visit_file(plan, add, &mut |b| {
                batches.push(b);
                Ok(true)
            })
            .await?;
        rows.batches = batches;
        Ok(rows)
    }

    /// Reads selected physical rows of a data or change-data file, in the plan's logical schema.
    ///
    /// # Errors
    /// As [`Table::read_file`].
    pub(crate) async fn read_rows(
        &self,
        plan: &ScanPlan,
        raw_path: &str,
        partition_values: &PartitionValues,
        size: Option<i64>,
        filter: RowFilter<'_>,
    ) -> Result<FileRows> {
        let mut batches = Vec::new();
        let mut rows = self
            .read_rows_with(plan, raw_path, partition_values, size, filter, &mut |b| {
                batches.push(b);
                Ok(true)
            })
            .await?;
        rows.batches = batches;
        Ok(rows)
    }

    async fn read_rows_with(
        &self,
        plan: &ScanPlan,
        raw_path: &str,
        partition_values: &PartitionValues,
        size: Option<i64>,
        filter: RowFilter<'_>,
        visit: &mut (dyn FnMut(RecordBatch) -> Result<bool> + Send),
    ) -> Result<FileRows> {
        let (path, rel) = self.data_path(raw_path)?;
        // The log's size saves a request; a file without one is asked for its size.
        let len = match size.and_then(|s| u64::try_from(s).ok()).filter(|s| *s > 0) {
            Some(len) => len,
            None => self.store.head(&path).await.map_err(|e| Error::data_file(&rel, e))?.size,
        };
        #[allow(deprecated)]
        let reader = ParquetObjectReader::new(self.store.clone(), path.clone()).with_file_size(len);
        let reader = super::checked_parquet::CheckedReader::new(reader, len);
        let mut builder = ParquetRecordBatchStreamBuilder::new(reader).await.map_err(|e| Error::data_file(&rel, e))?;
        if let Some(problem) = crate::delta::parquet_footer::footer_problem(builder.metadata(), Some(len)) {
            return Err(Error::data_file(&rel, format!("invalid Parquet footer: {problem}")));
        }
        // Decode only the columns the plan uses (a projected plan reads a fraction of the file).
        if let Some(names) = plan.physical_columns() {
            let roots: Vec<usize> = builder
                .parquet_schema()
                .root_schema()
                .get_fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| names.contains(&f.name()))
                .map(|(i, _)| i)
                .collect();
            if !roots.is_empty() {
                let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), roots);
                builder = builder.with_projection(mask);
            }
        }
        let mut stream = builder.with_batch_size(8192).build().map_err(|e| Error::data_file(&rel, e))?;
        let batches = Vec::new();
        let mut first_row = 0u64;
        loop {
            let next = crate::panic_guard::guard_poll(stream.next())
                .await
                .map_err(|m| Error::data_file(&rel, format!("the Parquet decoder failed on damaged data: {m}")))?;
            let Some(batch) = next else { break };
            let batch = batch.map_err(|e| Error::data_file(&rel, e))?;
            let n = batch.num_rows() as u64;
            let out = plan.to_logical_filtered(&batch, partition_values, &filter, first_row, &rel)?;
            first_row += n;
            if out.num_rows() > 0 && !visit(out)? {
                return Ok(FileRows { path: rel, batches, physical_rows: first_row });
            }
        }
        Ok(FileRows { path: rel, batches, physical_rows: first_row })
    }

    /// Reads one live file's rows batch by batch (at most 8,192 rows decoded at a time),
    /// handing each to `visit` until it answers `false`: memory stays at one batch whatever
    /// the file's size.
    ///
    /// # Errors
    /// As [`Table::read_file`], and `visit`'s errors.
    pub(crate) async fn visit_file(
        &self,
        plan: &ScanPlan,
        add: &Add,
        visit: &mut (dyn FnMut(RecordBatch) -> Result<bool> + Send),
    ) -> Result<FileRows> {
        let dv = match &add.deletion_vector {
            Some(d) => Some(self.load_dv(d).await?),
            None => None,
        };
        let filter = match &dv {
            Some(b) => RowFilter::Exclude(b),
            None => RowFilter::All,
        };
        let mut stopped = false;
        let mut visit_until = |b: RecordBatch| {
            let more = visit(b)?;
            stopped |= !more;
            Ok(more)
        };
        let rows = self
            .read_rows_with(plan, &add.path, &add.partition_values, Some(add.size), filter, &mut visit_until)
            .await?;
        // A file read to its end must hold every row its deletion vector deletes.
        if let Some(max) = dv.as_ref().and_then(|b| b.max()).filter(|_| !stopped) {
            if max >= rows.physical_rows {
                return Err(Error::dv(
                    &rows.path,
                    format!("deletes row {max} of a file with {} rows", rows.physical_rows),
                ));
            }
        }
        Ok(rows)
    }

    /// Loads and decodes a deletion vector.
    ///
    /// # Errors
    /// [`Error::DeletionVector`] for bad encodings or checksums; [`Error::PathRefused`] for a
    /// DV path outside the table.
    pub(crate) async fn load_dv(&self, d: &crate::delta::dv::DeletionVectorDescriptor) -> Result<RoaringTreemap> {
        let id = d.unique_id();
        let bitmap = match d.location()? {
            DvLocation::Inline(bytes) => decode_bitmap(&bytes, &id)?,
            DvLocation::Relative { path, offset } => self.read_dv_record(&path, offset, d.size()?, &id).await?,
            DvLocation::Absolute { uri, offset } => self.read_dv_record(&uri, offset, d.size()?, &id).await?,
        };
        if bitmap.len() != d.cardinality as u64 {
            return Err(Error::dv(&id, format!("cardinality {} but the bitmap holds {}", d.cardinality, bitmap.len())));
        }
        Ok(bitmap)
    }

    async fn read_dv_record(&self, raw_path: &str, offset: u64, size: usize, id: &str) -> Result<RoaringTreemap> {
        let (path, rel) = self.data_path(raw_path)?;
        let range = offset..offset + 8 + size as u64;
        let bytes = self.store.get_range(&path, range).await.map_err(|e| Error::storage(&rel, e))?;
        decode_file_record(&bytes, size, id)
    }
}
