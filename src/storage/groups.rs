//! The consumer groups recorded on a table (`_deltabus/groups/<group>/`): their shape, live
//! members and the newest lease of each slice, read as they are stored (the lease rules are
//! `beside::groups` [sync]; a member's loop over its leases is the change feed's). Maintenance
//! reads them to keep what the slowest slice still needs; `deltabus followers` lists them.

use std::collections::BTreeMap;

use super::location::Table;
use crate::beside::groups::{
    lease_path, parse_lease_path, parse_member_path, spec_path, GroupSpec, Lease, MemberRecord,
};
use crate::error::{Error, Result};

/// One slice of a group as its newest lease record shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SliceStatus {
    pub slice: u32,
    pub epoch: u64,
    pub lease: Lease,
}

/// A group on a table: its shape, live members and slices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupStatus {
    pub group: String,
    pub spec: GroupSpec,
    pub members: Vec<MemberRecord>,
    pub slices: Vec<SliceStatus>,
}

impl GroupStatus {
    /// The next version of `slice`: its holder's record, else the group's start.
    pub(crate) fn next_version(&self, slice: &SliceStatus) -> u64 {
        slice.lease.next_version.unwrap_or(self.spec.start_version)
    }
}

/// Every group on `table`, sorted by name.
///
/// # Errors
/// Storage errors and unreadable group records (maintenance must not guess what a group needs).
pub(crate) async fn list_groups(table: &Table) -> Result<Vec<GroupStatus>> {
    let listed = table.objects().list_files(crate::beside::groups::GROUPS_DIR).await?;
    let mut names: Vec<String> = listed
        .iter()
        .filter_map(|f| f.path.strip_prefix(&format!("{}/", crate::beside::groups::GROUPS_DIR)))
        .filter_map(|rest| rest.strip_suffix("/group.json"))
        .map(str::to_string)
        .collect();
    names.sort();
    let read = |path: String| async move {
        let bytes = table.objects().read_bytes(&path).await?;
        Ok::<_, Error>((path, bytes))
    };
    let mut out = Vec::new();
    for group in names {
        let (path, bytes) = read(spec_path(&group)).await?;
        let spec: GroupSpec = parse(&path, &bytes)?;
        let mut members = Vec::new();
        let mut latest: BTreeMap<u32, u64> = BTreeMap::new();
        for f in &listed {
            if parse_member_path(&group, &f.path).is_some() {
                match read(f.path.clone()).await {
                    Ok((p, b)) => members.push(parse::<MemberRecord>(&p, &b)?),
                    // A member that left between the listing and the read.
                    Err(Error::Storage { source: object_store::Error::NotFound { .. }, .. }) => {}
                    Err(e) => return Err(e),
                }
            } else if let Some((s, e)) = parse_lease_path(&group, &f.path) {
                let top = latest.entry(s).or_insert(e);
                *top = (*top).max(e);
            }
        }
        let mut slices = Vec::new();
        for (slice, epoch) in latest {
            let (p, b) = read(lease_path(&group, slice, epoch)).await?;
            slices.push(SliceStatus { slice, epoch, lease: parse(&p, &b)? });
        }
        out.push(GroupStatus { group, spec, members, slices });
    }
    Ok(out)
}

/// A group record, or an error naming it and how to reset the group.
///
/// # Errors
/// [`Error::InvalidArgument`] for a record that is not what it should be.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| {
        Error::InvalidArgument(format!(
            "group record {path} is unreadable ({e}); remove the group's directory to reset it"
        ))
    })
}
