//! Deletion vectors: serialised bitmaps, DV file records and z85 (inline vectors, uuids).
#![no_main]
use deltabus::delta::dv::{decode_bitmap, decode_file_record};
use deltabus::delta::z85;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode_bitmap(data, "fuzz");
    let size = data.first().map_or(0, |b| *b as usize * 4);
    let _ = decode_file_record(data, size, "fuzz");
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = z85::decode(text);
    }
});
