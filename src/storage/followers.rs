//! Follower registrations on a table (`_deltabus/followers/<id>.json`, see
//! [`crate::beside::followers`]): writing them as a follower advances, listing them for
//! maintenance, and the set of files the slowest follower still needs.
//!
//! A registration lags the follower's real position (it is written at most every
//! [`Registrar::EVERY`] and on exit), which only makes maintenance keep more. A follower that
//! cannot write its registration (a read-only source) warns once and keeps following: it is
//! then unprotected, and says so.

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use super::location::Table;
use crate::beside::followers::{commit_paths, record_path, valid_follower_id, FollowerRecord, FOLLOWERS_DIR};
use crate::delta::paths::resolve_in_table;
use crate::error::{Error, Result};

/// Every registration on `table`, sorted by id.
///
/// # Errors
/// Storage errors, and [`Error::InvalidArgument`] for an unreadable registration (a
/// maintenance run must not guess what a follower needs).
pub(crate) async fn list_followers(table: &Table) -> Result<Vec<FollowerRecord>> {
    let listed = table.objects().list_files(FOLLOWERS_DIR).await?;
    let mut out = Vec::new();
    for file in listed.into_iter().filter(|f| f.path.ends_with(".json")) {
        let bytes = table.objects().read_bytes(&file.path).await?;
        let record: FollowerRecord = serde_json::from_slice(&bytes).map_err(|e| {
            Error::InvalidArgument(format!(
                "follower registration {} is unreadable ({e}); remove it with `deltabus followers <table> --remove <id>`",
                file.path
            ))
        })?;
        out.push(record);
    }
    out.sort_by(|a, b| a.follower_id.cmp(&b.follower_id));
    Ok(out)
}

/// Writes (or overwrites) a registration.
///
/// # Errors
/// [`Error::InvalidArgument`] for an id that is not a safe file name; storage errors.
pub(crate) async fn register(table: &Table, record: &FollowerRecord) -> Result<()> {
    check_id(&record.follower_id)?;
    let body = serde_json::to_vec(record).map_err(|e| Error::Internal(e.to_string()))?;
    table.objects().put_bytes(&record_path(&record.follower_id), body).await
}

/// Removes a registration; `false` when there was none.
///
/// # Errors
/// [`Error::InvalidArgument`] for an invalid id; storage errors.
pub(crate) async fn unregister(table: &Table, id: &str) -> Result<bool> {
    check_id(id)?;
    let path = record_path(id);
    if table.objects().file_size(&path).await?.is_none() {
        return Ok(false);
    }
    table.objects().delete_file(&path).await?;
    Ok(true)
}

fn check_id(id: &str) -> Result<()> {
    if valid_follower_id(id) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "follower id {id:?}: use ASCII letters, digits, '-', '_' and '.' (not first), at most 200 characters"
        )))
    }
}

/// Paths (relative to the root) named by the commits from `from` up to `latest`: the data,
/// change-data and deletion-vector files a follower at `from` will read.
///
/// # Errors
/// Storage and log errors, including [`Error::MissingVersion`] for a commit already gone.
pub(crate) async fn needed_paths(table: &Table, from: u64, latest: u64) -> Result<HashSet<String>> {
    let mut out = HashSet::new();
    for v in from..=latest {
        let actions = table.read_commit(v).await?;
        for (p, dv) in commit_paths(&actions) {
            out.extend(resolve_in_table(p, table.url(), true).ok());
            out.extend(dv.and_then(|d| d.file_in_table(table.url()).ok().flatten()));
        }
    }
    Ok(out)
}

/// Keeps one follower's registration current, throttled.
pub(crate) struct Registrar {
    table: Table,
    id: String,
    kind: &'static str,
    last: Option<(Instant, u64)>,
    warned_unwritable: bool,
}

impl Registrar {
    /// How often an advancing follower rewrites its registration.
    pub(crate) const EVERY: Duration = Duration::from_secs(10);

    /// A registrar for `id` on `table`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an id that is not a safe file name.
    pub(crate) fn new(table: &Table, id: &str, kind: &'static str) -> Result<Registrar> {
        check_id(id)?;
        Ok(Registrar { table: table.clone(), id: id.to_string(), kind, last: None, warned_unwritable: false })
    }

    /// Records that the follower next needs `next_version`: written at once the first time and
    /// when `now` is set, else at most every [`Registrar::EVERY`].
    pub(crate) async fn advance(&mut self, next_version: u64, now: bool) {
        if let Some((at, v)) = self.last {
            if v == next_version || (!now && at.elapsed() < Self::EVERY) {
                return;
            }
        }
        let record = FollowerRecord {
            follower_id: self.id.clone(),
            next_version,
            updated_at: self.table.clock().now_ms(),
            kind: self.kind.to_string(),
            offset: None,
            metadata: None,
            expires_at: None,
        };
        match register(&self.table, &record).await {
            Ok(()) => self.last = Some((Instant::now(), next_version)),
            Err(e) if !self.warned_unwritable => {
                self.warned_unwritable = true;
                tracing::warn!(follower = %self.id, error = %e, "follower.unregistered: maintenance by deltabus will not protect this follower's position");
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::clock::Clock;
    use crate::storage::StorageOptions;

    /// Under tokio's paused time: a registration is rewritten at most every
    /// [`Registrar::EVERY`], at once when asked, and stamped with the table's clock.
    #[tokio::test(start_paused = true)]
    async fn registrations_are_throttled_by_the_one_clock() {
        let url = format!("memory://{}/t", uuid::Uuid::new_v4().simple());
        let clock = Clock::tokio();
        let table = Table::open(&url, StorageOptions { clock: clock.clone(), ..StorageOptions::default() }).unwrap();
        let next = |t: &Table| {
            let t = t.clone();
            async move { list_followers(&t).await.unwrap().first().map(|r| (r.next_version, r.updated_at)) }
        };
        let mut r = Registrar::new(&table, "replica", "test").unwrap();
        let t0 = clock.now_ms();
        r.advance(1, false).await;
        assert_eq!(next(&table).await, Some((1, t0)), "the first position is written at once");
        tokio::time::advance(Duration::from_secs(5)).await;
        r.advance(2, false).await;
        assert_eq!(next(&table).await, Some((1, t0)), "within EVERY: not rewritten");
        r.advance(3, true).await;
        assert_eq!(next(&table).await, Some((3, t0 + 5_000)), "asked for: rewritten at once");
        tokio::time::advance(Registrar::EVERY).await;
        r.advance(4, false).await;
        assert_eq!(next(&table).await, Some((4, t0 + 15_000)), "after EVERY: rewritten");
    }
}
