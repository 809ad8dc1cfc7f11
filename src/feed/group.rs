//! A member of a consumer group on a source table: joins (creating the group on first use),
//! heartbeats, and takes, renews and releases slice leases under `_deltabus/groups/<group>/`
//! (the rules are [`crate::beside::groups`]).
//!
//! Contract:
//! - Every lease record is created with put-if-absent at the next epoch, so a slice is never
//!   held twice. A write whose answer was lost is read back and recognised by its token.
//! - [`Member::beat`] (every third of the lease): the member's heartbeat is rewritten, the live
//!   members listed, the assignment computed, its own slices renewed (with their positions),
//!   others' released, free or expired assigned ones taken.
//! - [`Member::deliverable`]: the slices whose lease, as this member last wrote it, still has
//!   a quarter of its time left. A member delivers only those, so a paused member whose lease
//!   ran out delivers nothing before its next beat finds the slice gone.
//! - [`Member::leave`] releases every slice with its position and removes the heartbeat, so the
//!   slices move at once instead of after the lease.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::beside::groups::{
    assignment, group_dir, lease_path, lease_state, member_path, parse_lease_path, parse_member_path, spec_path,
    valid_name, GroupSpec, Lease, LeaseState, MemberRecord, DEFAULT_SLICES,
};
use crate::common::follow::{GroupOptions, StartAt};
use crate::error::{Error, Result};
use crate::storage::Table;

/// One member's view of its group.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct Member {
    table: Table,
    opts: GroupOptions,
    pub spec: GroupSpec,
    /// Slice → (epoch, expires at) of the lease records this member holds.
    held: BTreeMap<u32, (u64, i64)>,
    /// The next version each newly taken slice's previous holder recorded.
    recorded: BTreeMap<u32, u64>,
}

impl Member {
    /// Joins `opts.group` on `table`, creating it (starting at `start_version`) when new.
    ///
    /// # Errors
    /// Invalid names, a group whose shape differs from what was asked, storage errors.
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) async fn join(table: &Table, opts: GroupOptions, start_version: u64) -> Result<Member> {
        for (what, name) in [("group", &opts.group), ("member", &opts.member)] {
            if !valid_name(name) {
                return Err(Error::InvalidArgument(format!(
                    "{what} {name:?}: use ASCII letters, digits, '-', '_' and '.' (not first), at most 200 characters"
                )));
            }
        }
        let wanted = GroupSpec {
            slices: opts.slices.unwrap_or(DEFAULT_SLICES).clamp(1, 4096),
            key_columns: opts.key_columns.clone(),
            start_version,
            created_at: table.clock().now_ms(),
        };
        let path = spec_path(&opts.group);
        let body = serde_json::to_vec(&wanted).map_err(|e| Error::Internal(e.to_string()))?;
        // A lost answer is read back below like a group someone else created.
        let _ = table.objects().create_file(&path, body).await;
        let spec: GroupSpec = serde_json::from_slice(&table.objects().read_bytes(&path).await?)
            .map_err(|e| Error::InvalidArgument(format!("group {}: {path} is unreadable ({e})", opts.group)))?;
        if opts.slices.is_some_and(|n| n != spec.slices) {
            return Err(Error::InvalidArgument(format!(
                "group {} has {} slices (set when it was first used), not {}",
                opts.group,
                spec.slices,
                opts.slices.unwrap_or_default()
            )));
        }
        if !opts.key_columns.is_empty() && opts.key_columns != spec.key_columns {
            return Err(Error::InvalidArgument(format!(
                "group {} slices rows by {:?} (set when it was first used), not {:?}",
                opts.group, spec.key_columns, opts.key_columns
            )));
        }
        Ok(Member { table: table.clone(), opts, spec, held: BTreeMap::new(), recorded: BTreeMap::new() })
    }

    /// Joins like [`Member::join`], a new group starting at `start`: a version, or `latest`
    /// (the next commit to land).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for `start` at another start (a group starts at one version);
    /// as [`Member::join`].
    pub(crate) async fn join_from(table: &Table, opts: GroupOptions, start: &StartAt) -> Result<Member> {
        let version = match start {
            StartAt::Version(v) => *v,
            StartAt::Latest => table.latest_version().await? + 1,
            other => {
                return Err(Error::invalid_config(
                    "start",
                    format!("a group starts at a version or `latest`, not {other:?}"),
                ))
            }
        };
        Member::join(table, opts, version).await
    }

    pub(crate) fn name(&self) -> &str {
        &self.opts.member
    }

    pub(crate) fn spec_group(&self) -> &str {
        &self.opts.group
    }

    pub(crate) fn lease(&self) -> Duration {
        self.opts.lease
    }

    fn lease_ms(&self) -> i64 {
        i64::try_from(self.opts.lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// Slices held now (whatever their time left).
    pub(crate) fn held(&self) -> Vec<u32> {
        self.held.keys().copied().collect()
    }

    /// The next version the slice's previous holder recorded when this member took it.
    pub(crate) fn recorded_position(&self, slice: u32) -> Option<u64> {
        self.recorded.get(&slice).copied()
    }

    /// Gives up `slice` without writing its lease: its next holder fenced this member out (the
    /// newer lease is that holder's; the next beat sees it taken).
    pub(crate) fn forget(&mut self, slice: u32) {
        if self.held.remove(&slice).is_some() {
            tracing::warn!(group = %self.opts.group, member = %self.opts.member, slice, "group.slice_lost: fenced");
        }
    }

    /// Slices this member may deliver at `now_ms`.
    pub(crate) fn deliverable(&self, now_ms: i64) -> Vec<u32> {
        let margin = self.lease_ms() / 4;
        self.held.iter().filter(|(_, (_, expires))| *expires - margin > now_ms).map(|(s, _)| *s).collect()
    }

    /// One heartbeat: see the module contract. `positions` are the held slices' next versions.
    ///
    /// # Errors
    /// Storage errors (the held leases simply run out when beats keep failing).
    pub(crate) async fn beat(&mut self, positions: &BTreeMap<u32, u64>) -> Result<()> {
        let now = self.table.clock().now_ms();
        let me = self.opts.member.clone();
        let heartbeat = MemberRecord { member: me.clone(), expires_at: now + self.lease_ms() };
        let body = serde_json::to_vec(&heartbeat).map_err(|e| Error::Internal(e.to_string()))?;
        self.table.objects().put_bytes(&member_path(&self.opts.group, &me), body).await?;
        let listed = self.table.objects().list_files(&group_dir(&self.opts.group)).await?;
        let mut members = Vec::new();
        let mut latest: BTreeMap<u32, u64> = BTreeMap::new();
        let mut old: Vec<(u32, u64, String)> = Vec::new();
        for f in &listed {
            if let Some(m) = parse_member_path(&self.opts.group, &f.path) {
                if m == me {
                    members.push(me.clone());
                } else if let Some(r) = self.read_json::<MemberRecord>(&f.path).await? {
                    if r.expires_at > now {
                        members.push(r.member);
                    }
                }
            } else if let Some((s, e)) = parse_lease_path(&self.opts.group, &f.path) {
                let top = latest.entry(s).or_insert(e);
                *top = (*top).max(e);
                old.push((s, e, f.path.clone()));
            }
        }
        let wanted = assignment(&members, self.spec.slices);
        for slice in 0..self.spec.slices {
            let newest = match latest.get(&slice) {
                Some(e) => self.read_json::<Lease>(&lease_path(&self.opts.group, slice, *e)).await?.map(|l| (*e, l)),
                None => None,
            };
            let state = lease_state(newest.as_ref().map(|(e, l)| (*e, l)), &me, now);
            let mine = wanted[slice as usize].as_deref() == Some(me.as_str());
            let position = positions.get(&slice).copied();
            match state {
                LeaseState::Mine { epoch } => {
                    let expires = if mine { now + self.lease_ms() } else { 0 };
                    let won = self.write_lease(slice, epoch + 1, expires, position).await?;
                    if won && mine {
                        self.held.insert(slice, (epoch + 1, expires));
                    } else {
                        self.held.remove(&slice);
                    }
                }
                LeaseState::Free | LeaseState::Expired { .. } if mine => {
                    let (epoch, before) = match &newest {
                        Some((e, l)) => (e + 1, l.next_version),
                        None => (0, None),
                    };
                    self.held.remove(&slice);
                    if self.write_lease(slice, epoch, now + self.lease_ms(), before).await? {
                        self.held.insert(slice, (epoch, now + self.lease_ms()));
                        match before {
                            Some(v) => self.recorded.insert(slice, v),
                            None => self.recorded.remove(&slice),
                        };
                        tracing::info!(group = %self.opts.group, member = %me, slice, epoch, "group.slice_taken");
                    }
                }
                _ => {
                    if self.held.remove(&slice).is_some() {
                        tracing::warn!(group = %self.opts.group, member = %me, slice, "group.slice_lost");
                    }
                }
            }
        }
        // Lease records more than a few epochs old are history; a failed delete is harmless.
        for (s, e, path) in old {
            if latest.get(&s).is_some_and(|top| e + 4 < *top) && self.held.contains_key(&s) {
                let _ = self.table.objects().delete_file(&path).await;
            }
        }
        Ok(())
    }

    /// Releases every slice (recording `positions`) and removes the heartbeat.
    ///
    /// # Errors
    /// Storage errors (the leases then run out on their own).
    pub(crate) async fn leave(&mut self, positions: &BTreeMap<u32, u64>) -> Result<()> {
        for (slice, (epoch, _)) in std::mem::take(&mut self.held) {
            self.write_lease(slice, epoch + 1, 0, positions.get(&slice).copied()).await?;
        }
        self.table.objects().delete_file(&member_path(&self.opts.group, &self.opts.member)).await
    }

    /// Creates lease record `epoch` of `slice`; `true` when this member wrote it.
    async fn write_lease(&self, slice: u32, epoch: u64, expires_at: i64, next_version: Option<u64>) -> Result<bool> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let lease = Lease { member: self.opts.member.clone(), token: token.clone(), expires_at, next_version };
        let path = lease_path(&self.opts.group, slice, epoch);
        let body = serde_json::to_vec(&lease).map_err(|e| Error::Internal(e.to_string()))?;
        let created = self.table.objects().create_file(&path, body).await;
        if matches!(created, Ok(true)) {
            return Ok(true);
        }
        // Already there, or not known: whoever wrote the record is named in it.
        match self.read_json::<Lease>(&path).await? {
            Some(l) => Ok(l.token == token),
            None => created.map(|_| false),
        }
    }

    async fn read_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<Option<T>> {
        match self.table.objects().read_bytes(path).await {
            Ok(bytes) => crate::storage::groups::parse(path, &bytes).map(Some),
            Err(Error::Storage { source: object_store::Error::NotFound { .. }, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
