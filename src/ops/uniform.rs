//! `deltabus uniform`: Iceberg metadata for a table, turning UniForm on first when asked.
//!
//! Turning it on is one metadata commit (protocol and metadata from
//! [`crate::iceberg::enable`]) on the one commit path: it is planned against the
//! fresh table, lost to a concurrent writer means planned again, and a writer that planned
//! against the table before it loses its own commit to the metadata change (the conflict
//! check) and plans again under the new rules. The conversion that follows writes the Iceberg
//! metadata of every live file (a full conversion: there is no Iceberg metadata yet).

use serde_json::{json, Value};

use crate::delta::actions::Action;
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::error::{Error, Result};
use crate::iceberg::{enable::enable_uniform, enabled, metadata_file_name};
use crate::storage::{commit_exactly_once, Plan, PlanFn, RetryPolicy, Table};

/// Brings `table`'s Iceberg metadata up to its latest version, turning UniForm on first when
/// `enable` says so; the report says what was done.
///
/// # Errors
/// [`Error::InvalidArgument`] for a table without UniForm when `enable` is off;
/// [`Error::Unsupported`] when it cannot be turned on (the reason); storage errors.
pub(crate) async fn uniform(table: &Table, enable: bool) -> Result<Value> {
    // Read before turning it on: the commit that turns it on converts the table itself.
    let before = table.uniform().iceberg_state().await?;
    let mut enabled_at = None;
    if enable {
        let plan = |s: Option<&Snapshot>| {
            let s = s.ok_or_else(|| Error::NotATable { location: table.url().to_string() })?;
            Ok(match enable_uniform(s)? {
                None => Plan::Nothing(()),
                Some((protocol, metadata)) => {
                    let properties = json!({
                        "delta.universalFormat.enabledFormats": "iceberg",
                        "delta.enableIcebergCompatV2": "true",
                    });
                    let txn = Transaction::new(
                        Operation::SetTableProperties,
                        vec![Action::Protocol(protocol), Action::Metadata(metadata)],
                    )
                    .with_parameter("properties", properties.to_string());
                    Plan::commit(txn, Vec::new(), Vec::new(), ())
                }
            })
        };
        enabled_at = commit_exactly_once(table, &mut None, &RetryPolicy::default(), &mut PlanFn(plan)).await?.version();
        if let Some(v) = enabled_at {
            tracing::info!(table = %table.url(), version = v, "uniform.enabled");
        }
    }
    let snapshot = table.snapshot(None).await?;
    if !enabled(&snapshot.metadata.configuration) {
        return Err(Error::InvalidArgument(format!(
            "{} is not a UniForm table (delta.universalFormat.enabledFormats does not name iceberg): turn it on with `deltabus uniform --enable`",
            table.url()
        )));
    }
    let state = table.uniform().sync_iceberg(&snapshot).await?;
    let glue = table.uniform().register_uniform(&crate::storage::UniformVersion::of(&snapshot), &state).await?;
    Ok(json!({
        "glue": glue.map(|g| g.to_json()),
        "deltaVersion": state.delta_version,
        "icebergSnapshotId": state.snapshot_id,
        "metadata": format!("metadata/{}", metadata_file_name(state.metadata_version)),
        "converted": before.as_ref() != Some(&state),
        "enabledAt": enabled_at,
    }))
}
