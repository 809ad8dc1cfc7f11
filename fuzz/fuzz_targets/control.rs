//! Control-topic records of coordinated commits (what any producer with access to the topic
//! can write): parsed, and every parsed request judged by the committer's rules against a few
//! table positions, never a panic.
#![no_main]
use deltabus::ingest::coordinated::messages::{select, verdict, Control};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(control) = serde_json::from_slice::<Control>(data) else { return };
    if let Control::Request(request) = control {
        for position in [None, Some(-1), Some(0), Some(i64::MAX)] {
            let _ = verdict(&request, |_| position);
            let selection = select(std::slice::from_ref(&request), |_| position);
            assert!(selection.taken.len() <= 1);
        }
    }
});
