//! The one committer: writes `_delta_log/<v>.json` with put-if-absent, and on losing the race
//! reads the winning commits, applies the conflict rules, and retries at the next version.
//!
//! Put-if-absent is `PutMode::Create`: create-new (link, no replace) on local files, a
//! conditional PUT (`If-None-Match: *`) on S3, the native preconditions on Azure and GCS.
//! Data files are written before the commit under unique names; a commit that never lands
//! leaves only unreferenced files, which vacuum removes.
//!
//! After a commit whose version is a multiple of `delta.checkpointInterval`, a checkpoint is
//! written. A failed checkpoint never fails the commit: it is logged and the next interval
//! retries.

use std::time::Duration;

use object_store::{PutMode, PutOptions, PutPayload};

use super::hooks::LandedCommit;
use super::location::Table;
use crate::delta::actions::{Action, CommitInfo, Metadata};
use crate::delta::commit_plan::Planned;
use crate::delta::conflict::{check, Verdict};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{CommitOutcome, Transaction};
use crate::error::{Error, Result};

/// Commit PUTs sent and commits that landed, in this process (every table): their ratio is
/// what concurrent writers cost, since the committer's own version races and retries show
/// nowhere else.
static ATTEMPTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LANDED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// (commit PUTs sent, commits landed) by this process so far.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn commit_counts() -> (u64, u64) {
    use std::sync::atomic::Ordering::Relaxed;
    (ATTEMPTS.load(Relaxed), LANDED.load(Relaxed))
}

/// An error after which the commit is known not to have been sent.
fn never_sent(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::NotImplemented { .. }
            | object_store::Error::NotSupported { .. }
            | object_store::Error::InvalidPath { .. }
            | object_store::Error::UnknownConfigurationKey { .. }
    )
}

/// `e`, or [`Error::CommitUnknown`] when a sent commit is still unaccounted for.
fn unknown_if_pending(pending: Option<u64>, e: Error) -> Error {
    match pending {
        Some(version) => Error::CommitUnknown { version, reason: e.to_string() },
        None => e,
    }
}

/// The one retry policy of every commit: how often and how patiently to retry after losing a
/// commit race, after a conflict that needs a new plan, and after a store fault.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct RetryPolicy {
    /// PUT attempts of one planned commit, including the first (versions taken by compatible
    /// commits are skipped without a new plan).
    pub max_attempts: u32,
    /// Plans in a row whose commit lost (a conflict, or its positions taken by another
    /// writer) before the writer gives up ([`crate::storage::commit_exactly_once`]).
    pub replans: u32,
    /// Retryable store faults (an unknown outcome included) ridden out by planning again from
    /// the table, with the fault backoff, before the error reaches the writer's caller.
    pub store_faults: u32,
    /// Backoff before the second attempt; doubled each time up to `max_backoff`, with jitter.
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 50 PUT attempts, 10 plans, no store fault ridden out here (the writer's caller rides
    /// them: the follow loop polls again, a push producer retries, a flush uses
    /// [`RetryPolicy::riding_faults`]).
    fn default() -> Self {
        RetryPolicy {
            max_attempts: crate::common::retry::COMMIT_PUTS,
            replans: crate::common::retry::COMMIT_REPLANS,
            store_faults: 0,
            base_backoff: crate::common::backoff::COMMITS.base,
            max_backoff: crate::common::backoff::COMMITS.cap,
        }
    }
}

impl RetryPolicy {
    /// The default, riding out 20 store faults in place: for writers whose caller cannot
    /// retry (a Kafka flush: its pipeline would stop).
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn riding_faults() -> Self {
        RetryPolicy { store_faults: crate::common::retry::RIDDEN_FAULTS, ..RetryPolicy::default() }
    }

    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        crate::common::backoff::Backoff { base: self.base_backoff, cap: self.max_backoff }.jittered(attempt)
    }
}

/// The source positions a transaction records (`appId=version`, the first 16): what links a
/// record's source position to the version that holds it in the commit's span.
fn source_positions(txn: &Transaction) -> String {
    let mut out: Vec<String> = txn.txns().take(16).map(|(app, v)| format!("{app}={v}")).collect();
    if txn.txns().nth(16).is_some() {
        out.push("...".into());
    }
    out.join(",")
}

impl Table {
    /// Commits a transaction planned against `snapshot` (`None` creates the table at
    /// version 0).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the table's protocol forbids writing; [`Error::InvalidArgument`]
    /// for an invalid transaction; [`Error::Storage`] for I/O. Conflicts and already-applied
    /// transactions are outcomes, not errors.
    #[tracing::instrument(
        name = "commit", level = "info", skip_all,
        fields(
            table = %self.url(), operation = %txn.operation, version = tracing::field::Empty,
            txn_id = %txn.txn_id, source.positions = %source_positions(txn),
        )
    )]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn commit(
        &self,
        snapshot: Option<&Snapshot>,
        txn: &Transaction,
        policy: &RetryPolicy,
    ) -> Result<CommitOutcome> {
        let mut plan = match crate::delta::commit_plan::plan(snapshot, txn)? {
            Planned::Commit(p) => p,
            Planned::AlreadyApplied { app_id, version } => {
                return Ok(CommitOutcome::AlreadyApplied { app_id, version })
            }
        };
        let read_version = plan.read_version;
        let mut version = read_version.map_or(0, |v| v + 1);
        // The version our PUT may have landed at while its answer was lost (or the store said
        // it exists: object_store's own retry of a landed PUT says so). Until that version is
        // read back, nothing about our files may be decided.
        let mut pending: Option<u64> = None;
        let mut last_error = String::new();
        // (version, times) the store said "exists" while nothing could be read there.
        let mut phantom: (u64, u32) = (u64::MAX, 0);
        'attempts: for attempt in 0..policy.max_attempts {
            if attempt > 0 {
                tokio::time::sleep(policy.backoff(attempt - 1)).await;
            }
            let now = self.clock().now_ms();
            let ict = if plan.in_commit_timestamps {
                match self.next_ict(version, now).await {
                    Ok(t) => Some(t),
                    Err(e) if e.is_retryable() => {
                        last_error = e.to_string();
                        continue 'attempts;
                    }
                    Err(e) => return Err(unknown_if_pending(pending, e)),
                }
            } else {
                None
            };
            let bytes = plan.bytes(txn, version, now, ict)?;
            // As a signed integer: exported to OpenTelemetry as a number (a u64 goes as text).
            tracing::Span::current().record("version", i64::try_from(version).unwrap_or(i64::MAX));
            let path = self.log_path(&format!("{version:020}.json"));
            let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
            crate::failpoint::hit("commit.before_put");
            ATTEMPTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Kept when a checkpoint falls due at this version: the snapshot it needs is the
            // read snapshot advanced by exactly these bytes.
            let kept = checkpoint_due(snapshot, version).then(|| bytes.clone());
            let put = self.store.put_opts(&path, PutPayload::from(bytes), opts).await;
            crate::failpoint::hit("commit.after_put");
            let mut exists = false;
            match put {
                Ok(_) => {
                    let written = kept.and_then(|b| crate::delta::actions::parse_commit(&b, path.as_ref()).ok());
                    return Ok(self.landed(snapshot, txn, version, attempt, written).await);
                }
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                    exists = true;
                }
                Err(e) if never_sent(&e) && pending.is_none() => return Err(Error::storage(&path, e)),
                Err(e) => {
                    tracing::warn!(version, error = %e, "commit.answer_lost: reading the version back");
                    last_error = e.to_string();
                }
            }
            // Something may be at `version`, possibly ours: read it, and every later commit.
            pending = Some(version);
            loop {
                let winner = match self.read_commit(version).await {
                    Ok(w) => w,
                    // "Exists" yet nothing readable, again and again: not a commit file (a
                    // directory of that name, say). Ours cannot be there; refuse the table.
                    Err(Error::MissingVersion { .. }) if exists && phantom.1 >= 2 && phantom.0 == version => {
                        return Err(Error::invalid_log(
                            format!("_delta_log/{version:020}.json"),
                            "the store reports this version as existing but it cannot be read as a commit file",
                        ));
                    }
                    // Nothing there: our PUT did not land (yet); retrying the same version
                    // either lands or finds whatever did.
                    Err(Error::MissingVersion { .. }) => {
                        if exists {
                            phantom = if phantom.0 == version { (version, phantom.1 + 1) } else { (version, 1) };
                        }
                        continue 'attempts;
                    }
                    Err(e) if e.is_retryable() => {
                        last_error = e.to_string();
                        continue 'attempts;
                    }
                    Err(e) => return Err(unknown_if_pending(pending, e)),
                };
                if txn.is_own_commit(&winner) {
                    tracing::info!(version, operation = %txn.operation, "commit.recognised: our commit landed though its answer was lost");
                    return Ok(self.landed(snapshot, txn, version, attempt, Some(winner)).await);
                }
                // Another writer's commit holds this version: ours cannot land there.
                pending = None;
                if read_version.is_none() {
                    return Ok(CommitOutcome::Conflict {
                        version: 0,
                        reason: "the table was created concurrently".into(),
                    });
                }
                plan.observe(&winner);
                match check(&txn.actions, &txn.read, txn.isolation, &winner, version) {
                    Verdict::Compatible => version += 1,
                    Verdict::AlreadyApplied { app_id, version } => {
                        return Ok(CommitOutcome::AlreadyApplied { app_id, version })
                    }
                    Verdict::Conflict(reason) => return Ok(CommitOutcome::Conflict { version, reason }),
                }
            }
        }
        if let Some(v) = pending {
            return Err(Error::CommitUnknown { version: v, reason: last_error });
        }
        if !last_error.is_empty() {
            return Err(Error::Storage {
                path: self.log_path("").to_string(),
                source: object_store::Error::Generic {
                    store: "committer",
                    source: format!("gave up after {} attempts: {last_error}", policy.max_attempts).into(),
                },
            });
        }
        Ok(CommitOutcome::Conflict {
            version,
            reason: format!("gave up after {} attempts under concurrent commits", policy.max_attempts),
        })
    }

    /// The commit is in the log as `version` (`written`: its actions as in the log, when
    /// known): checkpoint when due, run the table's after-commit hooks, report it.
    async fn landed(
        &self,
        snapshot: Option<&Snapshot>,
        txn: &Transaction,
        version: u64,
        attempt: u32,
        written: Option<Vec<Action>>,
    ) -> CommitOutcome {
        tracing::debug!(version, attempt, operation = %txn.operation, "commit.landed");
        LANDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        crate::failpoint::hit("commit.before_checkpoint");
        self.maybe_checkpoint(snapshot, version, written).await;
        crate::failpoint::hit("commit.before_uniform");
        self.after_commit(LandedCommit { version, metadata: Self::metadata_at(snapshot, txn) }).await;
        CommitOutcome::Committed { version }
    }

    /// `max(now, previous commit's in-commit timestamp + 1)`.
    async fn next_ict(&self, version: u64, now: i64) -> Result<i64> {
        if version == 0 {
            return Ok(now);
        }
        let previous = self.read_commit(version - 1).await?;
        let prev_ict = previous.iter().find_map(|a| match a {
            Action::CommitInfo(v) => CommitInfo::from_value(v).in_commit_timestamp,
            _ => None,
        });
        Ok(prev_ict.map_or(now, |p| now.max(p + 1)))
    }

    /// The table's metadata at a landed version: the commit's own, or the one it was planned
    /// on (a metadata change by another writer would have been a conflict).
    fn metadata_at<'a>(snapshot: Option<&'a Snapshot>, txn: &'a Transaction) -> Option<&'a Metadata> {
        txn.actions
            .iter()
            .find_map(|a| match a {
                Action::Metadata(m) => Some(m),
                _ => None,
            })
            .or(snapshot.map(|s| &s.metadata))
    }

    /// Writes the checkpoint of `version` when one is due. Its state is the read snapshot
    /// advanced by the commit's own actions (`written`) when the commit directly follows it,
    /// else read from the log (other commits came between).
    async fn maybe_checkpoint(&self, snapshot: Option<&Snapshot>, version: u64, written: Option<Vec<Action>>) {
        if !checkpoint_due(snapshot, version) {
            return;
        }
        let result = async {
            let advanced = match (snapshot, written) {
                (Some(read), Some(actions)) if read.version + 1 == version => {
                    let mut s = read.clone();
                    s.apply_commit(version, actions, &crate::delta::log_segment::commit_name(version)).ok().map(|()| s)
                }
                _ => None,
            };
            let s = match advanced {
                Some(s) => s,
                None => self.snapshot(Some(version)).await?,
            };
            self.write_checkpoint(&s).await
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(version, error = %e, "checkpoint.failed: the commit stands; a later commit retries");
        }
    }
}

/// Whether a commit at `version` on `snapshot`'s table is due a checkpoint
/// (`delta.checkpointInterval`, 10 by default; never at version 0).
fn checkpoint_due(snapshot: Option<&Snapshot>, version: u64) -> bool {
    let interval = snapshot.map_or(10, |s| s.properties.checkpoint_interval);
    version != 0 && interval != 0 && version.is_multiple_of(interval)
}
