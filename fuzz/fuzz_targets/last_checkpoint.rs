//! `_delta_log/_last_checkpoint`.
#![no_main]
use deltabus::delta::last_checkpoint::LastCheckpoint;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = LastCheckpoint::parse(data);
});
