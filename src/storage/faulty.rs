//! A fault-injecting `ObjectStore` decorator: the failures real object stores produce, on
//! purpose, so that exactly-once is proven against them rather than against a perfect store.
//!
//! Each call draws from a seeded generator and, with probability `rate`, fails in one of the
//! ways a remote store fails:
//! - **unavailable**: a 503 before the request reaches the store (nothing happened);
//! - **lost answer**: the request is carried out, then the reply is lost. A conditional PUT
//!   (`PutMode::Create`) reports either a timeout or `AlreadyExists` — what object_store's own
//!   retry sees when its first attempt landed; other calls report a timeout;
//! - **slow**: the request is delayed (a few to tens of milliseconds) and succeeds;
//! - **cut listing**: a listing stops with an error after part of its entries.
//!
//! Used by the test suite and, through `DELTABUS_FAULTS` (read by the binary only), by process
//! tests and the chaos soak. Counts of injected faults are kept for their reports.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

use crate::error::{Error, Result};

/// What to inject, and how often.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FaultConfig {
    /// Seed of the generator (runs with the same seed draw the same sequence).
    pub seed: u64,
    /// Probability that a call fails or is slowed, 0.0-1.0.
    pub rate: f64,
    /// Only paths containing this substring are faulted (all when `None`).
    pub only: Option<String>,
    /// Scripted lost answers, each used once: the first PUT whose path contains the text lands
    /// and its answer is lost (`true`: reported as `AlreadyExists`, as object_store's retry of
    /// a landed conditional PUT reports it; `false`: as a timeout).
    pub lose: Vec<(String, bool)>,
    /// Added to every call (a remote store's round trip, for benchmarks), fault or not.
    pub delay: Option<Duration>,
}

impl FaultConfig {
    /// Parses `rate=0.05,seed=7[,only=_delta_log][,lose=<path text>][,lose-timeout=<path text>]
    /// [,delay=50ms]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the bad part.
    pub(crate) fn parse(spec: &str) -> Result<FaultConfig> {
        let mut cfg = FaultConfig { seed: 1, rate: 0.05, only: None, lose: Vec::new(), delay: None };
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || {
                Error::InvalidArgument(format!("fault spec {part:?}: expected rate=<0..1>, seed=<n> or only=<text>"))
            };
            let (k, v) = part.split_once('=').ok_or_else(bad)?;
            match k {
                "rate" => cfg.rate = v.parse().ok().filter(|r: &f64| (0.0..=1.0).contains(r)).ok_or_else(bad)?,
                "seed" => cfg.seed = v.parse().map_err(|_| bad())?,
                "only" => cfg.only = Some(v.to_string()),
                "lose" => cfg.lose.push((v.to_string(), true)),
                "lose-timeout" => cfg.lose.push((v.to_string(), false)),
                "delay" => cfg.delay = Some(v.parse::<crate::common::units::HumanDuration>().map_err(|_| bad())?.get()),
                _ => return Err(bad()),
            }
        }
        Ok(cfg)
    }
}

/// How many faults of each kind were injected.
#[derive(Debug, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FaultCounts {
    pub calls: AtomicU64,
    pub unavailable: AtomicU64,
    pub lost_answers: AtomicU64,
    pub slow: AtomicU64,
    pub cut_listings: AtomicU64,
}

impl FaultCounts {
    /// Faults that made a call fail (slow calls succeed).
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn failures(&self) -> u64 {
        self.unavailable.load(Relaxed) + self.lost_answers.load(Relaxed) + self.cut_listings.load(Relaxed)
    }
}

impl fmt::Display for FaultCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} calls: {} unavailable, {} lost answers, {} slow, {} cut listings",
            self.calls.load(Relaxed),
            self.unavailable.load(Relaxed),
            self.lost_answers.load(Relaxed),
            self.slow.load(Relaxed),
            self.cut_listings.load(Relaxed)
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    Unavailable,
    LostAnswer,
    Slow(u64),
}

/// The seeded draws, shared with the streams a listing or a delete returns.
#[derive(Debug, Clone)]
struct Dice {
    config: FaultConfig,
    state: Arc<Mutex<u64>>,
    counts: Arc<FaultCounts>,
    /// Scripted lost answers not used yet.
    script: Arc<Mutex<Vec<(String, bool)>>>,
}

impl Dice {
    fn new(config: FaultConfig) -> Dice {
        let state = Arc::new(Mutex::new(config.seed ^ 0x9E37_79B9_7F4A_7C15));
        let script = Arc::new(Mutex::new(config.lose.clone()));
        Dice { config, state, counts: Arc::new(FaultCounts::default()), script }
    }

    /// The scripted lost answer for a PUT of `path`, taken (used once).
    fn scripted(&self, path: &Path) -> Option<bool> {
        let mut script = match self.script.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let i = script.iter().position(|(text, _)| path.as_ref().contains(text.as_str()))?;
        Some(script.remove(i).1)
    }

    /// splitmix64: small, seeded, good enough to spread faults.
    fn next(&self) -> u64 {
        let mut s = match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn draw(&self, path: &Path) -> Fault {
        self.counts.calls.fetch_add(1, Relaxed);
        if self.config.only.as_deref().is_some_and(|o| !path.as_ref().contains(o)) {
            return Fault::None;
        }
        let r = self.next();
        if (r >> 11) as f64 / (1u64 << 53) as f64 >= self.config.rate {
            return Fault::None;
        }
        match r % 8 {
            0..=2 => Fault::Unavailable,
            3..=5 => Fault::LostAnswer,
            n => Fault::Slow(5 + (r >> 8) % 40 + n),
        }
    }
}

/// The decorator.
#[derive(Debug)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    dice: Dice,
}

impl FaultyStore {
    /// Wraps `inner`.
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, config: FaultConfig) -> FaultyStore {
        FaultyStore { inner, dice: Dice::new(config) }
    }

    /// The counts of injected faults (shared: they keep counting after this call).
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn counts(&self) -> Arc<FaultCounts> {
        self.dice.counts.clone()
    }

    async fn before(&self, path: &Path) -> object_store::Result<Fault> {
        if let Some(d) = self.dice.config.delay {
            tokio::time::sleep(d).await;
        }
        match self.dice.draw(path) {
            Fault::Unavailable => {
                self.dice.counts.unavailable.fetch_add(1, Relaxed);
                Err(injected(path, "503 Service Unavailable"))
            }
            Fault::Slow(ms) => {
                self.dice.counts.slow.fetch_add(1, Relaxed);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(Fault::None)
            }
            f => Ok(f),
        }
    }

    fn lost(&self, path: &Path) -> object_store::Error {
        self.dice.counts.lost_answers.fetch_add(1, Relaxed);
        injected(path, "timed out waiting for the response")
    }

    /// A listing that may stop with an error after part of its entries (a page cut short).
    fn cut(
        &self,
        prefix: Option<&Path>,
        stream: BoxStream<'static, object_store::Result<ObjectMeta>>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let at = prefix.cloned().unwrap_or_default();
        let stream = match self.dice.config.delay {
            Some(d) => {
                futures::stream::once(tokio::time::sleep(d)).filter_map(|()| async { None }).chain(stream).boxed()
            }
            None => stream,
        };
        match self.dice.draw(&at) {
            Fault::None | Fault::Slow(_) => stream,
            _ => {
                self.dice.counts.cut_listings.fetch_add(1, Relaxed);
                let keep = (self.dice.next() % 8) as usize;
                let err = injected(&at, "listing cut short (connection reset)");
                stream.take(keep).chain(futures::stream::once(async move { Err(err) })).boxed()
            }
        }
    }
}

fn injected(path: &Path, what: &str) -> object_store::Error {
    // One line per fault: soaks count them even in processes killed with -9.
    tracing::warn!(path = %path, fault = what, "store.fault_injected");
    object_store::Error::Generic { store: "FaultyStore", source: format!("injected fault at {path}: {what}").into() }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        // Scripted lost answers first (used once each), then the random draw.
        let (fault, as_exists) = match self.dice.scripted(location) {
            Some(as_exists) => (Fault::LostAnswer, as_exists),
            None => (self.before(location).await?, self.dice.next().is_multiple_of(2)),
        };
        let create = matches!(opts.mode, PutMode::Create);
        let result = self.inner.put_opts(location, payload, opts).await;
        if fault == Fault::LostAnswer && result.is_ok() {
            // object_store retries a request whose answer it lost; a conditional PUT's retry
            // then meets the object the first attempt wrote.
            if create && as_exists {
                self.dice.counts.lost_answers.fetch_add(1, Relaxed);
                tracing::warn!(path = %location, fault = "lost answer, retry found it", "store.fault_injected");
                return Err(object_store::Error::AlreadyExists {
                    path: location.to_string(),
                    source: "injected: the retry of a landed conditional PUT".into(),
                });
            }
            return Err(self.lost(location));
        }
        result
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.before(location).await?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        let fault = self.before(location).await?;
        let result = self.inner.get_opts(location, options).await;
        if fault == Fault::LostAnswer && result.is_ok() {
            return Err(self.lost(location));
        }
        result
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        let fault = self.before(location).await?;
        let result = self.inner.get_ranges(location, ranges).await;
        if fault == Fault::LostAnswer && result.is_ok() {
            return Err(self.lost(location));
        }
        result
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        // Each delete may fail before reaching the store or lose its answer after it.
        let (inner, dice) = (self.inner.clone(), self.dice.clone());
        locations
            .then(move |p| {
                let (inner, dice) = (inner.clone(), dice.clone());
                async move {
                    let p = p?;
                    let fault = dice.draw(&p);
                    if fault == Fault::Unavailable {
                        dice.counts.unavailable.fetch_add(1, Relaxed);
                        return Err(injected(&p, "503 Service Unavailable"));
                    }
                    inner.delete(&p).await?;
                    if fault == Fault::LostAnswer {
                        dice.counts.lost_answers.fetch_add(1, Relaxed);
                        return Err(injected(&p, "timed out waiting for the response"));
                    }
                    Ok(p)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.cut(prefix, self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.cut(prefix, self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let at = prefix.cloned().unwrap_or_default();
        self.before(&at).await?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.before(to).await?;
        self.inner.copy_opts(from, to, options).await
    }
}

static EVERYWHERE: std::sync::OnceLock<Dice> = std::sync::OnceLock::new();

/// Makes every table opened from now on in this process go through one fault-injecting
/// store (the binary calls this for `DELTABUS_FAULTS`). Ignored when already set.
pub(crate) fn inject_everywhere(config: FaultConfig) {
    let _ = EVERYWHERE.set(Dice::new(config));
}

/// The counts of [`inject_everywhere`]'s faults, when armed.
pub(crate) fn everywhere_counts() -> Option<Arc<FaultCounts>> {
    EVERYWHERE.get().map(|d| d.counts.clone())
}

/// `store` behind the process-wide fault injection, when armed.
pub(crate) fn wrap_if_armed(store: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
    match EVERYWHERE.get() {
        Some(dice) => Arc::new(FaultyStore { inner: store, dice: dice.clone() }),
        None => store,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_are_refused() {
        let c = FaultConfig::parse("rate=0.2,seed=9,only=_delta_log").unwrap();
        assert_eq!(c, FaultConfig { seed: 9, rate: 0.2, only: Some("_delta_log".into()), lose: vec![], delay: None });
        assert_eq!(FaultConfig::parse("rate=0,delay=50ms").unwrap().delay, Some(Duration::from_millis(50)));
        let c = FaultConfig::parse("rate=0,lose=01.json,lose-timeout=02.json").unwrap();
        assert_eq!(c.lose, vec![("01.json".to_string(), true), ("02.json".to_string(), false)]);
        assert!(FaultConfig::parse("rate=2").is_err());
        assert!(FaultConfig::parse("often").is_err());
    }

    #[test]
    fn the_rate_is_honoured_and_the_sequence_is_seeded() {
        let store = |seed| {
            FaultyStore::new(
                Arc::new(object_store::memory::InMemory::new()),
                FaultConfig { seed, rate: 0.1, only: None, lose: vec![], delay: None },
            )
        };
        let a = store(3);
        let draws: Vec<Fault> = (0..10_000).map(|_| a.dice.draw(&Path::from("x"))).collect();
        let faulted = draws.iter().filter(|f| **f != Fault::None).count();
        assert!((800..1200).contains(&faulted), "{faulted} faults in 10,000 draws at 10%");
        let b = store(3);
        assert!(draws.iter().take(100).all(|f| *f == b.dice.draw(&Path::from("x"))), "same seed, same faults");
    }
}
