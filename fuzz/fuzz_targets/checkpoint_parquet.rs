//! Checkpoint Parquet files: whatever decodes as Parquet is turned into actions.
#![no_main]
use deltabus::delta::checkpoint_read::batch_to_actions;
use libfuzzer_sys::fuzz_target;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fuzz_target!(|data: &[u8]| {
    let Ok(builder) = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::copy_from_slice(data)) else { return };
    let Ok(reader) = builder.with_batch_size(1024).build() else { return };
    for batch in reader.take(16) {
        let Ok(batch) = batch else { return };
        let _ = batch_to_actions(&batch, "00000000000000000001.checkpoint.parquet");
    }
});
