//! Commit files (`_delta_log/<v>.json`): parsing, then replay into a snapshot.
#![no_main]
use deltabus::delta::actions::parse_commit;
use deltabus::delta::replay::TableState;
use deltabus::delta::snapshot::Snapshot;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(actions) = parse_commit(data, "00000000000000000000.json") else { return };
    let mut state = TableState::default();
    if state.apply_commit(0, &actions, "00000000000000000000.json").is_ok() {
        if let Ok(s) = Snapshot::new(state, None, 0) {
            let _ = s.files().len();
            let _ = s.total_bytes();
        }
    }
});
