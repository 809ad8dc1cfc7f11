//! Keeping a Kafka pipeline's process within its memory bound when its heaps hold freed memory.
//!
//! librdkafka inflates each compressed batch it fetches into a buffer from the C library's
//! `malloc`. After the first large buffer is freed, glibc raises its threshold for mapping
//! buffers apart and serves the next ones from its heap, whose freed memory stays with the
//! process: for 1 M × 1 KB records that compress 94× (one 4 MiB fetch inflates to hundreds of
//! MB), the peak went 60–260 MiB past the 2 × `flush.max_bytes` + 200 MiB that the pipeline's
//! own buffers keep. Mapping every such buffer apart instead (`MALLOC_MMAP_THRESHOLD_`) cost
//! 25% of the rate there and some at every record size; handing the heap back only near the
//! bound costs nothing measurable where the process stays below it (250 B records), and about
//! a fifth of the rate where it would not (see BENCHMARKS.md, `ingest_throughput`).
//!
//! The Rust side's allocator keeps freed memory mapped for its purge delay (a second) too: the
//! batch a flush has written, freed while the next one fills. The binary's trimmer therefore
//! also has mimalloc purge what is freed (1 KB records: peak 654–657 MiB resident instead of
//! 695–731 MiB).
//!
//! Contract:
//! - Each open Kafka source [`hold`]s 2 × its `flush.max_bytes` while it lives; the process's
//!   bound is what they hold together plus [`OVERHEAD`].
//! - The binary installs the trimmer ([`set_heap_trimmer`]: glibc's `malloc_trim` and
//!   mimalloc's forced collect; the unsafe calls live in the binary, not the library). The
//!   first hold starts one watcher thread, which reads the resident set every [`TICK`] while
//!   something is held and calls the trimmer when it is within [`HEADROOM`] of the bound
//!   ([`Watch::step`]: at most once a tick, and not again until the resident set grew by
//!   [`STEP`] past what the last trim left or [`PAUSE`] passed, so a process whose live memory
//!   is over its bound does not trim without pause).
//! - Each trim counts in `deltabus_heap_trims_total`. Without a trimmer, or on a system without
//!   `/proc/self/statm`, nothing is watched.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What the process may take beyond its pipelines' batches (runtime, prefetch, Parquet writer).
pub(crate) const OVERHEAD: u64 = 200 << 20;
/// How far below the bound trimming starts: the resident set grows between two looks by what
/// librdkafka inflates in a tick (about 4 MB at 400 MB/s), and a trim cannot return what is
/// live (at 1 KB the trims during growth return little; the one after a batch is freed, up to
/// 250 MB).
pub(crate) const HEADROOM: u64 = 64 << 20;
/// Growth past what the last trim left before the next one, while over the bound. At 32 MiB
/// the 1 KB runs reached +711–769 MiB against a bound of 712: the trims during growth found
/// little, and the resident set rose a whole step past the one that would have returned the
/// freed batch.
pub(crate) const STEP: u64 = 8 << 20;
/// Time since the last trim after which the next one is made, while over the bound, whatever
/// the growth.
pub(crate) const PAUSE: Duration = Duration::from_millis(100);
/// How often the resident set is read while a bound is held.
pub(crate) const TICK: Duration = Duration::from_millis(10);

static HELD: AtomicU64 = AtomicU64::new(0);
static TRIMS: AtomicU64 = AtomicU64::new(0);
static TRIMMER: OnceLock<fn()> = OnceLock::new();
static WATCHER: OnceLock<()> = OnceLock::new();

/// Installs what hands freed heap back to the system (the binary passes glibc's `malloc_trim`
/// with mimalloc's forced collect). The first call wins.
pub fn set_heap_trimmer(trim: fn()) {
    let _ = TRIMMER.set(trim);
}

/// How many times the trimmer was called (`deltabus_heap_trims_total`).
pub(crate) fn trims() -> u64 {
    TRIMS.load(Ordering::Relaxed)
}

/// Bytes held towards the process's bound while it lives.
#[derive(Debug)]
pub(crate) struct Held(u64);

/// Holds `bytes` towards the bound, starting the watcher on the first hold.
pub(crate) fn hold(bytes: u64) -> Held {
    HELD.fetch_add(bytes, Ordering::Relaxed);
    if let Some(&trim) = TRIMMER.get() {
        WATCHER.get_or_init(|| start_watcher(trim));
    }
    Held(bytes)
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.fetch_sub(self.0, Ordering::Relaxed);
    }
}

fn start_watcher(trim: fn()) {
    let Some(page) = page_size() else { return };
    let spawned = std::thread::Builder::new().name("deltabus-heap".into()).spawn(move || {
        let mut watch = Watch::default();
        loop {
            std::thread::sleep(TICK);
            let held = HELD.load(Ordering::Relaxed);
            if held == 0 {
                watch = Watch::default();
                continue;
            }
            let Some(rss) = resident_pages().map(|p| p * page) else { return };
            if watch.step(Instant::now(), rss, held) {
                let started = Instant::now();
                trim();
                TRIMS.fetch_add(1, Ordering::Relaxed);
                let after = resident_pages().map_or(rss, |p| p * page);
                let micros = started.elapsed().as_micros();
                tracing::debug!(before = rss, after, bound = held + OVERHEAD, micros, "heap.trim");
                watch.trimmed(Instant::now(), after);
            }
        }
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "the heap watcher did not start; freed C heap is kept");
    }
}

/// The watcher's decision, apart from the clock and `/proc`.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// The resident set after the last trim, and when.
    last: Option<(Instant, u64)>,
}

impl Watch {
    /// Whether to trim now, at resident set `rss` with `held` bytes held.
    pub(crate) fn step(&mut self, now: Instant, rss: u64, held: u64) -> bool {
        if held == 0 || rss.saturating_add(HEADROOM) < held.saturating_add(OVERHEAD) {
            self.last = None;
            return false;
        }
        match self.last {
            Some((at, left)) => rss >= left.saturating_add(STEP) || now.duration_since(at) >= PAUSE,
            None => true,
        }
    }

    /// Notes a trim that left `rss` resident.
    pub(crate) fn trimmed(&mut self, now: Instant, rss: u64) {
        self.last = Some((now, rss));
    }
}

/// Resident pages of this process (`/proc/self/statm`'s second field).
fn resident_pages() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    statm.split_whitespace().nth(1)?.parse().ok()
}

/// The system's page size (also what `/proc/self/stat` counts the resident set in).
pub(crate) fn page_size() -> Option<u64> {
    let size = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok()??;
    u64::try_from(size).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn trims_within_the_headroom_of_the_bound_and_not_again_until_it_grew_or_a_pause_passed() {
        let t0 = Instant::now();
        let held = 512 * MIB;
        let from = held + OVERHEAD - HEADROOM; // where trimming starts
        let mut w = Watch::default();
        assert!(!w.step(t0, from - 1, held), "far from the bound");
        assert!(!w.step(t0, from + 100 * MIB, 0), "nothing held");
        assert!(w.step(t0, from, held), "within the headroom");
        w.trimmed(t0, from + MIB);
        let tick = t0 + TICK;
        assert!(!w.step(tick, from + STEP, held), "grew less than a step since the trim");
        assert!(w.step(tick, from + MIB + STEP, held), "grew a step");
        w.trimmed(tick, from + 20 * MIB);
        assert!(!w.step(tick + PAUSE / 2, from + 21 * MIB, held));
        let later = tick + PAUSE;
        assert!(w.step(later, from + 21 * MIB, held), "a pause later");
        w.trimmed(later, from + 20 * MIB);
        assert!(!w.step(later, from - 100 * MIB, held), "back below");
        assert!(w.step(later, from, held), "over again: at once");
    }

    #[test]
    fn the_resident_set_and_page_size_are_read() {
        let pages = resident_pages().unwrap();
        let page = page_size().unwrap();
        assert!(pages > 0 && page >= 4096 && pages * page > MIB, "{pages} pages of {page} bytes");
    }
}
