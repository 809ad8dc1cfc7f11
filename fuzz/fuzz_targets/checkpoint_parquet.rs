//! Checkpoint Parquet files: whatever decodes as Parquet is turned into actions.
#![no_main]
use deltabus::delta::checkpoint_read::batch_to_actions;
use libfuzzer_sys::fuzz_target;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fuzz_target!(|data: &[u8]| {
    if deltabus::delta::parquet_pages::file_footer_problem(data).is_some() {
        return;
    }
    let Ok(builder) = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::copy_from_slice(data)) else { return };
    // What deltabus's readers check before reading pages.
    if deltabus::delta::parquet_footer::footer_problem(builder.metadata(), Some(data.len() as u64)).is_some()
        || deltabus::delta::parquet_pages::file_problem(builder.metadata(), data).is_some()
    {
        return;
    }
    let Ok(reader) = builder.with_batch_size(1024).build() else { return };
    // Page decoding is guarded as in deltabus's readers (the parquet crate panics on some
    // damaged pages); deltabus's own decoding of the batches is fuzzed unguarded.
    let batches = deltabus::panic_guard::guard(move || reader.take(16).collect::<Vec<_>>()).unwrap_or_default();
    for batch in batches {
        let Ok(batch) = batch else { return };
        let _ = batch_to_actions(&batch, "00000000000000000001.checkpoint.parquet");
    }
});
