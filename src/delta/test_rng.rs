//! [sync, tests only] The seeded pseudo-random numbers of the property tests: xorshift64, so a
//! failing case reproduces from its seed.

/// The numbers after `seed` (not zero), one per call.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
