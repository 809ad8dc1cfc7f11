//! `deltabus cluster-by`: a table's clustering columns changed or removed (Spark's `ALTER
//! TABLE ... CLUSTER BY (...)` and `CLUSTER BY NONE`).
//!
//! One commit on the one commit path: the `delta.clustering` domain naming the new columns
//! (an empty list for none, as Spark writes it), and the `clustering` and `domainMetadata`
//! writer features when the table did not have them. Nothing is rewritten: files keep the
//! layout they have; from this commit on every writer keeps statistics for the new columns.
//! Asking for what the table already has commits nothing. The rules of the columns (at most
//! four, leaves with min/max statistics, not on a partitioned table) are
//! [`crate::delta::clustering`]'s.

use serde_json::{json, Value};

use crate::delta::actions::Action;
use crate::delta::clustering::{clustered_protocol, domain, physical_columns, resolve, FEATURE};
use crate::delta::snapshot::Snapshot;
use crate::delta::transaction::{Operation, Transaction};
use crate::error::{Error, Result};
use crate::storage::{commit_exactly_once, Plan, PlanFn, RetryPolicy, Table};

/// Clusters `table` by `names` (logical, dotted for nested columns; empty: by nothing) and
/// reports the version committed (`null`: nothing to change) and the columns.
///
/// # Errors
/// [`Error::InvalidArgument`] for columns the rules refuse; [`Error::NotATable`]; storage
/// errors.
pub(crate) async fn cluster_by(table: &Table, names: &[String]) -> Result<Value> {
    let plan = |s: Option<&Snapshot>| {
        let s = s.ok_or_else(|| Error::NotATable { location: table.url().to_string() })?;
        let columns = resolve(&s.schema, s.column_mapping(), &s.metadata.partition_columns, names)?;
        let clustered = s.protocol.writer_features.as_ref().is_some_and(|w| w.iter().any(|f| f == FEATURE));
        let current = physical_columns(s)?;
        if current == columns && (clustered || columns.is_empty()) {
            return Ok(Plan::Nothing(()));
        }
        let mut actions = Vec::new();
        if !clustered {
            actions.push(Action::Protocol(clustered_protocol(&s.protocol)));
        }
        actions.push(Action::DomainMetadata(domain(&columns)));
        let txn = Transaction::new(Operation::ClusterBy, actions)
            .with_parameter("newClusteringColumns", names.join(","))
            .with_parameter("oldClusteringColumns", crate::delta::clustering::columns(s)?.join(","));
        Ok(Plan::commit(txn, Vec::new(), Vec::new(), ()))
    };
    let version = commit_exactly_once(table, &mut None, &RetryPolicy::default(), &mut PlanFn(plan)).await?.version();
    if let Some(v) = version {
        tracing::info!(table = %table.url(), version = v, columns = ?names, "clustering changed");
    }
    let snapshot = table.snapshot(None).await?;
    Ok(json!({
        "table": table.url().to_string(),
        "version": version,
        "clusteringColumns": crate::delta::clustering::columns(&snapshot)?,
    }))
}
