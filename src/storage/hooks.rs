//! Work that follows a landed commit, attached to a table handle rather than called by the
//! committer: the committer only moves bytes, then runs the table's hooks in order.
//!
//! A hook never fails the commit (it has landed): it logs what it could not do, and the next
//! commit, or the command that does the same work on demand, catches up. Every handle opened
//! by [`Table::open`] carries [`UniformHook`] (the Iceberg metadata of UniForm tables and
//! their AWS Glue registration; it does nothing on other tables); more are attached with
//! [`Table::with_after_commit`].

use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::location::Table;
use crate::delta::actions::Metadata;

/// A commit that landed, as the hooks see it.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct LandedCommit<'a> {
    pub version: u64,
    /// The table's metadata at `version`: the commit's own, or the one it was planned on (a
    /// metadata change by another writer would have been a conflict). `None` only when
    /// neither is known.
    pub metadata: Option<&'a Metadata>,
}

/// Work after a landed commit.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) trait AfterCommit: Send + Sync + Debug {
    /// Runs after `commit` landed on `table`; logs, never fails the commit.
    fn after_commit<'a>(&'a self, table: &'a Table, commit: LandedCommit<'a>) -> BoxFuture<'a, ()>;
}

/// The hooks of a table handle, shared by its clones.
pub(crate) type Hooks = Arc<[Arc<dyn AfterCommit>]>;

/// The hooks every handle starts with.
pub(crate) fn default_hooks() -> Hooks {
    Arc::new([Arc::new(UniformHook) as Arc<dyn AfterCommit>])
}

/// On a UniForm table, the Iceberg metadata of the new version and its AWS Glue registration
/// (`deltabus uniform` does the same on demand).
#[derive(Debug)]
pub(crate) struct UniformHook;

impl AfterCommit for UniformHook {
    fn after_commit<'a>(&'a self, table: &'a Table, commit: LandedCommit<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(metadata) = commit.metadata.filter(|m| crate::delta::iceberg_compat::enabled(&m.configuration))
            else {
                return;
            };
            let span = tracing::info_span!("uniform.convert", table = %table.url(), version = commit.version);
            let uniform = table.uniform();
            let converted = uniform.convert_to_iceberg(commit.version, metadata);
            if let Err(e) = tracing::Instrument::instrument(converted, span).await {
                tracing::warn!(error = %e, "uniform.behind: the commit stands; the next commit or `deltabus uniform` writes the Iceberg metadata");
            }
        })
    }
}

impl Table {
    /// This handle with `hook` run after each of its commits, after the ones it has.
    #[cfg(any(test, feature = "internal-api"))]
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn with_after_commit(mut self, hook: Arc<dyn AfterCommit>) -> Table {
        let mut hooks: Vec<Arc<dyn AfterCommit>> = self.hooks.iter().cloned().collect();
        hooks.push(hook);
        self.hooks = hooks.into();
        self
    }

    /// Runs the handle's hooks for a landed commit, in order.
    pub(crate) async fn after_commit(&self, commit: LandedCommit<'_>) {
        for hook in self.hooks.iter() {
            hook.after_commit(self, commit).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
    use crate::delta::transaction::{CommitOutcome, Operation, Transaction};
    use crate::storage::{RetryPolicy, StorageOptions};
    use std::sync::Mutex;

    /// Records what it was told.
    #[derive(Debug, Default)]
    struct Seen(Mutex<Vec<(u64, Option<String>)>>);

    impl AfterCommit for Seen {
        fn after_commit<'a>(&'a self, _: &'a Table, commit: LandedCommit<'a>) -> BoxFuture<'a, ()> {
            let seen = (commit.version, commit.metadata.map(|m| m.id.clone()));
            Box::pin(async move { self.0.lock().unwrap().push(seen) })
        }
    }

    #[tokio::test]
    async fn hooks_run_after_each_landed_commit_of_their_handle_with_its_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Seen::default());
        let url = dir.path().to_str().unwrap();
        let table = Table::open_for_write(url, StorageOptions::default()).unwrap().with_after_commit(seen.clone());
        let schema = StructType::new(vec![StructField::new("ü", DataType::Primitive(PrimitiveType::Long), true)]);
        let (protocol, metadata) = crate::delta::create::new_table(schema, &[], &Default::default()).unwrap();
        let id = metadata.id.clone();
        let create = Transaction::new(
            Operation::CreateTable,
            vec![crate::delta::actions::Action::Protocol(protocol), crate::delta::actions::Action::Metadata(metadata)],
        );
        let policy = RetryPolicy::default();
        assert_eq!(table.commit(None, &create, &policy).await.unwrap(), CommitOutcome::Committed { version: 0 });
        let snapshot = table.snapshot(None).await.unwrap();
        let empty = Transaction::new(Operation::Write, Vec::new());
        assert_eq!(
            table.commit(Some(&snapshot), &empty, &policy).await.unwrap(),
            CommitOutcome::Committed { version: 1 }
        );
        // Another handle of the same table does not run this one's hooks.
        let other = Table::open(url, StorageOptions::default()).unwrap();
        let snapshot = other.snapshot(None).await.unwrap();
        other.commit(Some(&snapshot), &empty, &policy).await.unwrap();
        assert_eq!(*seen.0.lock().unwrap(), vec![(0, Some(id.clone())), (1, Some(id))]);
    }
}
