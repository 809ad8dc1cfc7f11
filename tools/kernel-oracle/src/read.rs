//! One table opened through delta_kernel's default engine: its live rows and files at a
//! version, and its change data feed, written out as JSON.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use delta_kernel::arrow::array::{Array, ArrayRef, AsArray, GenericListArray, OffsetSizeTrait, StructArray};
use delta_kernel::arrow::datatypes::{DataType, Field, Fields, Schema};
use delta_kernel::arrow::json::LineDelimitedWriter;
use delta_kernel::arrow::record_batch::RecordBatch;
use delta_kernel::engine::arrow_data::EngineDataArrowExt;
use delta_kernel::scan::state::ScanFile;
use delta_kernel::table_changes::TableChanges;
use delta_kernel::{Engine, EngineData, KernelResult, Snapshot, SnapshotRef};
use delta_kernel_default_engine::storage::store_from_url;
use delta_kernel_default_engine::DefaultEngine;
use serde_json::{json, Value};
use url::Url;

pub struct Reader {
    engine: Arc<dyn Engine>,
    url: Url,
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl Reader {
    pub fn open(table: &Path) -> Result<Reader, String> {
        let dir = table.canonicalize().map_err(|e| format!("{}: {e}", table.display()))?;
        let url = Url::from_directory_path(&dir).map_err(|()| format!("{}: not a directory path", dir.display()))?;
        let store = store_from_url(&url).map_err(text)?;
        Ok(Reader { engine: Arc::new(DefaultEngine::builder(store).build()), url })
    }

    pub fn snapshot(&self, version: Option<u64>) -> Result<SnapshotRef, String> {
        let builder = Snapshot::builder_for(self.url.as_str());
        let builder = match version {
            Some(v) => builder.at_version(v),
            None => builder,
        };
        builder.build(self.engine.as_ref()).map_err(text)
    }

    /// The live files at `version` (the newest when `None`), sorted by path.
    pub fn files(&self, version: Option<u64>) -> Result<Value, String> {
        fn collect(files: &mut Vec<ScanFile>, file: ScanFile) {
            files.push(file);
        }
        let snapshot = self.snapshot(version)?;
        let version = snapshot.version();
        let scan = snapshot.scan_builder().build().map_err(text)?;
        let mut files = Vec::new();
        for metadata in scan.scan_metadata(self.engine.as_ref()).map_err(text)? {
            files = metadata.map_err(text)?.visit_scan_files(files, collect).map_err(text)?;
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let files: Vec<Value> =
            files.iter().map(|f| json!({"path": f.path, "size": f.size, "dv": f.dv_info.has_vector()})).collect();
        Ok(json!({"version": version, "files": files}))
    }

    /// Writes the live rows at `version` as JSON lines; returns how many.
    pub fn write_rows(&self, version: Option<u64>, out: &mut dyn Write) -> Result<usize, String> {
        let snapshot = self.snapshot(version)?;
        let scan = snapshot.scan_builder().build().map_err(text)?;
        write_lines(scan.execute(self.engine.clone()).map_err(text)?, out)
    }

    /// Writes the change data feed from `start` to `end` (the newest when `None`) as JSON
    /// lines, with `_change_type`, `_commit_version` and `_commit_timestamp`; returns how many.
    pub fn write_changes(&self, start: u64, end: Option<u64>, out: &mut dyn Write) -> Result<usize, String> {
        let changes = TableChanges::try_new(self.url.clone(), self.engine.as_ref(), start, end).map_err(text)?;
        let scan = Arc::new(changes).scan_builder().build().map_err(text)?;
        write_lines(scan.execute(self.engine.clone()).map_err(text)?, out)
    }
}

fn write_lines(
    batches: impl Iterator<Item = KernelResult<Box<dyn EngineData>>>,
    out: &mut dyn Write,
) -> Result<usize, String> {
    let mut rows = 0;
    let mut writer = LineDelimitedWriter::new(out);
    for data in batches {
        let batch = data.map_err(text)?.try_into_record_batch().map_err(text)?;
        let batch = maps_to_entries(&batch)?;
        rows += batch.num_rows();
        writer.write(&batch).map_err(text)?;
    }
    writer.finish().map_err(text)?;
    Ok(rows)
}

/// The batch with every map (at any depth) rewritten as a list of `{key, value}` structs.
fn maps_to_entries(batch: &RecordBatch) -> Result<RecordBatch, String> {
    let columns: Vec<ArrayRef> = batch.columns().iter().map(entries).collect();
    let fields: Fields = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(text)
}

fn entries(array: &ArrayRef) -> ArrayRef {
    match array.data_type() {
        DataType::Map(_, _) => {
            let map = array.as_map();
            let (keys, values) = (entries(map.keys()), entries(map.values()));
            let fields = Fields::from(vec![
                Field::new("key", keys.data_type().clone(), false),
                Field::new("value", values.data_type().clone(), true),
            ]);
            let pairs = StructArray::new(fields.clone(), vec![keys, values], None);
            let item = Arc::new(Field::new("entry", DataType::Struct(fields), false));
            Arc::new(GenericListArray::<i32>::new(item, map.offsets().clone(), Arc::new(pairs), map.nulls().cloned()))
        }
        DataType::Struct(_) => {
            let s = array.as_struct();
            let columns: Vec<ArrayRef> = s.columns().iter().map(entries).collect();
            let fields: Fields = s
                .fields()
                .iter()
                .zip(&columns)
                .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
                .collect();
            Arc::new(StructArray::new(fields, columns, s.nulls().cloned()))
        }
        DataType::List(_) => list_entries(array.as_list::<i32>()),
        DataType::LargeList(_) => list_entries(array.as_list::<i64>()),
        _ => array.clone(),
    }
}

fn list_entries<O: OffsetSizeTrait>(list: &GenericListArray<O>) -> ArrayRef {
    let values = entries(list.values());
    let item = Arc::new(Field::new("element", values.data_type().clone(), true));
    Arc::new(GenericListArray::<O>::new(item, list.offsets().clone(), values, list.nulls().cloned()))
}
