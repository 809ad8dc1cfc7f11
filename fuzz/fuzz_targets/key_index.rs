//! Key index sidecars read from a table's `_deltabus/key_index/`: any bytes decode to a whole
//! sidecar or a one-line refusal, never a panic; a decoded sidecar encodes back to the same
//! bytes, and every bucket section it names decodes.
#![no_main]
use deltabus::key_index::sidecar::{decode_section, FileKeys, BUCKETS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode_section(data);
    if let Ok((keys, layout)) = FileKeys::decode(data) {
        let (bytes, again) = keys.encode();
        assert_eq!(bytes, data, "a decoded sidecar encodes back to its bytes");
        assert_eq!(again, layout);
        for b in 0..BUCKETS {
            let r = layout.range(b);
            let section = &data[r.start as usize..r.end as usize];
            assert!(decode_section(section).is_ok());
        }
    }
});
