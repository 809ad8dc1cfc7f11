//! The worker's side of coordinated commits: send a flush's request to the committer and
//! learn what became of it.
//!
//! Contract:
//! - [`CommitClient::submit`] sends the request to the control topic and waits for its answer
//!   (a reader started before the first request reads every answer). It returns only when the
//!   request is decided: committed, or refused with the table's positions to resume from.
//! - With no answer within `request_timeout` (no committer yet, a committer that died, a lost
//!   answer) the worker reads the table itself: positions at the request's last offsets mean
//!   it was committed; positions elsewhere mean refused; positions still at the request's base
//!   mean undecided, and the same request is sent again. The files stay where they are
//!   throughout, so memory holds only the batch the flush slot already holds.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::messages::{verdict, Answer, CommitRequest, Control, Verdict};
use crate::delta::app_id::TxnAppId;
use crate::error::{Error, Result};
use crate::source::kafka::control::{ControlProducer, ControlTail};
use crate::storage::Table;

type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<(Option<u64>, Answer)>>>>;

/// What became of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decided {
    /// Its rows are in the table (`version` when the answer named the commit).
    Committed { version: Option<u64> },
    /// Not committed: each partition's position in the table, to resume after.
    Refused(BTreeMap<i32, Option<i64>>),
}

/// A worker's connection to its table's committer.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct CommitClient {
    producer: ControlProducer,
    waiting: Waiting,
    reader: tokio::task::JoinHandle<()>,
    /// This worker's name in requests and logs.
    pub worker: String,
    timeout: Duration,
}

impl Drop for CommitClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl CommitClient {
    /// Opens the producer and the answer reader on an existing control topic.
    ///
    /// # Errors
    /// [`Error::Kafka`] when a client cannot be created or the topic's end not read.
    pub(crate) async fn open(
        brokers: &str,
        properties: &BTreeMap<String, String>,
        topic: &str,
        worker: String,
        timeout: Duration,
    ) -> Result<CommitClient> {
        let producer = ControlProducer::create(brokers, properties, topic)?;
        let tail = ControlTail::open(brokers, properties, topic).await?;
        let waiting: Waiting = Arc::default();
        let for_reader = waiting.clone();
        let reader = tokio::spawn(async move {
            loop {
                let bytes = match tail.next().await {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::debug!(error = %e, "control topic read failed; reading on");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let Ok(Control::Answers(a)) = serde_json::from_slice::<Control>(&bytes) else { continue };
                let mut w = for_reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                for answer in a.answers {
                    if let Some(tx) = w.remove(&answer.id) {
                        let _ = tx.send((a.version, answer));
                    }
                }
            }
        });
        Ok(CommitClient { producer, waiting, reader, worker, timeout })
    }

    fn wait_for(&self, id: &str) -> oneshot::Receiver<(Option<u64>, Answer)> {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.to_string(), tx);
        rx
    }

    fn forget(&self, id: &str) {
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
    }

    /// Sends `request` and waits until it is decided (see the module's contract).
    ///
    /// # Errors
    /// Only a request that cannot be encoded; Kafka and store faults are waited out.
    pub(crate) async fn submit(&self, request: &CommitRequest, table: &Table) -> Result<Decided> {
        let bytes = serde_json::to_vec(&Control::Request(request.clone()))
            .map_err(|e| Error::Internal(format!("commit request: {e}")))?;
        let mut sends = 0u32;
        loop {
            let answer = self.wait_for(&request.id);
            sends += 1;
            if let Err(e) = self.producer.send(&bytes, self.timeout).await {
                tracing::warn!(error = %e, "commit request not sent; trying again");
            }
            crate::failpoint::hit("coordinated.request_sent");
            match tokio::time::timeout(self.timeout, answer).await {
                Ok(Ok((version, a))) => return Ok(read_answer(request, version, &a)),
                Ok(Err(_)) | Err(_) => self.forget(&request.id),
            }
            match table_verdict(request, table).await {
                Some(Verdict::Committed) => return Ok(Decided::Committed { version: None }),
                Some(Verdict::Refused(positions)) => return Ok(Decided::Refused(positions)),
                Some(Verdict::Undecided) | None => {
                    tracing::warn!(
                        request = %request.id,
                        sends,
                        waited_s = self.timeout.as_secs(),
                        "no committer answered; the table still waits for this batch; sending it again"
                    );
                }
            }
        }
    }
}

/// The table's verdict on `request` (`None` when the table cannot be read now).
async fn table_verdict(request: &CommitRequest, table: &Table) -> Option<Verdict> {
    match table.snapshot(None).await {
        Ok(s) => Some(verdict(request, |p| {
            TxnAppId::KafkaPartition { app: request.app_id.clone(), topic: request.topic.clone(), partition: p }
                .version_in(&s)
        })),
        Err(e) => {
            tracing::warn!(error = %e, "table not readable while checking a commit request");
            None
        }
    }
}

/// A committer's answer as the worker acts on it.
fn read_answer(request: &CommitRequest, version: Option<u64>, a: &Answer) -> Decided {
    if a.committed {
        return Decided::Committed { version };
    }
    match verdict(request, |p| a.positions.get(&p).copied().flatten()) {
        Verdict::Committed => Decided::Committed { version: None },
        // Refused while the table is still at its base (another of its partitions moved, or
        // the committer does not take this pipeline's requests): resume from the base.
        Verdict::Undecided => Decided::Refused(request.partitions.iter().map(|(p, b)| (*p, b.base)).collect()),
        Verdict::Refused(positions) => Decided::Refused(positions),
    }
}
