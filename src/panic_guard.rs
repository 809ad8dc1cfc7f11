//! Turning a panic inside a third-party decoder into an error.
//!
//! The parquet crate panics on some damaged files (found by fuzzing: a dictionary page missing
//! where its encoding needs one). A damaged table must get a clean one-line error, so Parquet
//! decoding runs inside [`guard`] / [`guard_poll`]: a panic there becomes `Err(message)` and
//! prints nothing (the process-wide hook stays silent inside a guard and delegates to the
//! previous hook everywhere else).
//!
//! A decoder can also spin on hostile input instead of panicking. Decoding whose work a
//! pre-check cannot bound runs under [`with_deadline`]: on a thread of its own, given up after
//! a limit (the abandoned thread runs on until its loop ends; the process does not wait for it).

use std::cell::Cell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    static GUARDED: Cell<u32> = const { Cell::new(0) };
}

fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string())
}

/// Runs `f`; a panic inside becomes `Err(its message)`.
///
/// # Errors
/// The panic's message.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install();
    GUARDED.with(|g| g.set(g.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(g.get() - 1));
    result.map_err(message)
}

/// How long decoding a Parquet footer may take before the file counts as damaged (a sound
/// footer decodes in milliseconds).
pub(crate) const FOOTER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Runs `f` (guarded as by [`guard`]) on a thread of its own and waits at most `limit`.
///
/// # Errors
/// A panic's message, or that the limit passed.
pub(crate) fn with_deadline<T: Send + 'static>(
    limit: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("deltabus-decode".into()).spawn(move || {
        let _ = tx.send(guard(f));
    });
    if let Err(e) = spawned {
        return Err(format!("cannot start a decoding thread: {e}"));
    }
    match rx.recv_timeout(limit) {
        Ok(result) => result,
        Err(_) => Err(format!("decoding took longer than {} s: the input is damaged", limit.as_secs())),
    }
}

/// Awaits `f`, each poll guarded as by [`guard`].
///
/// # Errors
/// The message of a panic during any poll.
pub(crate) async fn guard_poll<F: Future>(f: F) -> Result<F::Output, String> {
    Guarded { inner: Box::pin(f) }.await
}

struct Guarded<F: Future> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match guard(|| inner.as_mut().poll(cx)) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(m) => Poll::Ready(Err(m)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn deadlines_give_up_on_spinning_work() {
        let quick = super::with_deadline(std::time::Duration::from_secs(5), || 41 + 1);
        assert_eq!(quick, Ok(42));
        let spinning = super::with_deadline(std::time::Duration::from_millis(50), || {
            std::thread::sleep(std::time::Duration::from_secs(3));
        });
        assert!(spinning.unwrap_err().contains("longer than"));
        let panicking = super::with_deadline(std::time::Duration::from_secs(5), || -> u8 { panic!("bad page") });
        assert_eq!(panicking, Err("bad page".to_string()));
    }

    #[test]
    fn panics_become_errors() {
        #[allow(clippy::panic)]
        let r: Result<(), String> = super::guard(|| panic!("decoder broke"));
        assert_eq!(r, Err("decoder broke".to_string()));
        assert_eq!(super::guard(|| 7), Ok(7));
    }
}
