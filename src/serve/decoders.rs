//! The decoding threads of push ingest: a fixed set, one per core, that decode every request
//! body.
//!
//! Contract:
//! - At most `threads` bodies are decoded at once; the others wait in arrival order (the
//!   buffered-bytes budget already bounds how many are admitted).
//! - Always the same threads: an allocator keeps, per thread, memory that thread allocated
//!   and others freed until the thread allocates again. Decoding on the runtime's blocking
//!   pool spread requests over every thread it had grown (object-store calls grow it to
//!   dozens), each keeping the rows it last decoded, so resident memory reached several
//!   times `server.max_buffered`. A few busy threads reuse what they keep.
//! - A panicking job is an error for its request, not the thread's end.
//! - Dropping the pool lets the threads finish the queued jobs and end.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of decoding threads.
pub(crate) struct Decoders {
    jobs: Mutex<Sender<Job>>,
}

impl Decoders {
    /// Starts `threads` decoding threads (at least one).
    ///
    /// # Errors
    /// The operating system's refusal to start a thread.
    pub(crate) fn start(threads: usize) -> std::io::Result<Decoders> {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new().name(format!("deltabus-decode-{i}")).spawn(move || work(&rx))?;
        }
        Ok(Decoders { jobs: Mutex::new(tx) })
    }

    /// Runs `f` on a decoding thread; `None` when it panicked or the pool is gone.
    pub(crate) async fn run<T, F>(&self, f: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            if let Ok(out) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
                let _ = tx.send(out);
            }
        });
        self.jobs.lock().ok()?.send(job).ok()?;
        rx.await.ok()
    }
}

fn work(jobs: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while taking a job, never while running one.
        let job = match jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_on_the_pool_threads_and_panics_are_answered() {
        let pool = Decoders::start(2).unwrap();
        let mut names = std::collections::BTreeSet::new();
        for i in 0..20 {
            let (n, name) = pool.run(move || (i * 2, std::thread::current().name().map(str::to_string))).await.unwrap();
            assert_eq!(n, i * 2);
            names.insert(name.unwrap());
        }
        assert!(names.iter().all(|n| n.starts_with("deltabus-decode-")), "{names:?}");
        assert!(names.len() <= 2, "{names:?}");
        assert_eq!(pool.run(|| -> u8 { panic!("bad body") }).await, None);
        assert_eq!(pool.run(|| 7).await, Some(7), "a panic does not end the pool");
    }
}
