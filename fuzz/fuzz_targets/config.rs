//! Configuration files: parsed and validated, or refused with an error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(config) = toml::from_str::<deltabus::config::Config>(text) {
        let _ = config.resolved_pipelines();
        let _ = config.to_redacted_toml();
    }
});
