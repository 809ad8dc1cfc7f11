//! The async storage shell over `object_store`: opening a table location, reading its log
//! into a [`Snapshot`](crate::delta::snapshot::Snapshot), and reading its data files.
//!
//! Contract: every path that comes out of a log goes through
//! [`resolve_in_table`](crate::delta::paths::resolve_in_table) before it becomes an object
//! path, so a damaged or hostile log cannot make deltabus read outside the table root.

/// A view of a table handle holding the methods of one concern (a reader, the key index, the
/// Iceberg conversion): `pub(crate) struct $name<'a>(&'a Table)`, reaching the handle's fields
/// and methods through `Deref`, and the handle's `$method()` that makes it.
macro_rules! table_view {
    ($(#[$doc:meta])* $name:ident, $(#[$mdoc:meta])* $method:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        #[cfg_attr(feature = "internal-api", visibility::make(pub))]
        pub(crate) struct $name<'a>(pub &'a $crate::storage::Table);

        impl std::ops::Deref for $name<'_> {
            type Target = $crate::storage::Table;

            fn deref(&self) -> &$crate::storage::Table {
                self.0
            }
        }

        impl $crate::storage::Table {
            $(#[$mdoc])*
            #[cfg_attr(feature = "internal-api", visibility::make(pub))]
            pub(crate) fn $method(&self) -> $name<'_> {
                $name(self)
            }
        }
    };
}

mod append;
internal_mods!(change_cursor);
mod change_reader;
mod checked_parquet;
mod checkpoint_writer;
mod committer;
mod data_reader;
mod data_writer;
mod exactly_once;
internal_mods!(faulty);
mod files;
internal_mods!(followers);
internal_mods!(groups);
mod glue;
internal_mods!(hooks);
mod iceberg;
mod iceberg_files;
mod key_index;
mod location;
mod log_reader;
mod plain_columns;
#[cfg(test)]
pub(crate) use plain_columns::plain_columns_of_sample;
internal_mods!(retrying);
mod staged;

#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use append::append_plan;
pub(crate) use change_reader::CHANGE_TYPE;
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use committer::{commit_counts, RetryPolicy};
pub(crate) use data_writer::RowChunks;
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use data_writer::{DataWriter, WriterConfig};
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use exactly_once::{commit_exactly_once, Landed, Plan, PlanFn, Planned, Planner, Then};
#[cfg(feature = "internal-api")]
pub use files::{ListedFile, COPY_PART};
pub(crate) use iceberg::DeltaVersion as UniformVersion;
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use key_index::IndexStats;
pub(crate) use key_index::WarmUp as KeyIndexWarmUp;
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) use location::{StorageOptions, Table};
pub(crate) use log_reader::CommitRecord;
pub(crate) use retrying::requests as store_requests;
pub(crate) use staged::StagedCommit;

#[cfg(test)]
mod send_checks {
    use super::*;
    fn is_send<T: Send>(_: T) {}
    #[allow(dead_code)]
    fn futures_are_send(t: Table, s: crate::delta::snapshot::Snapshot) {
        let t1 = t.clone();
        is_send(async move { t1.snapshot(None).await });
        let t8 = t.clone();
        let s8 = s.clone();
        is_send(async move {
            let txn = crate::delta::transaction::Transaction::new(crate::delta::transaction::Operation::Write, vec![]);
            t8.commit(Some(&s8), &txn, &RetryPolicy::default()).await
        });
        let t6 = t.clone();
        is_send(async move { t6.history(None).await });
        let t7 = t.clone();
        is_send(async move { t7.read_checkpoint_for_tests().await });
        let t2 = t.clone();
        is_send(async move { t2.list_log(None).await });
        let t3 = t.clone();
        is_send(async move { t3.read_commit(0).await });
        let t4 = t.clone();
        let s4 = s.clone();
        is_send(async move { t4.write_checkpoint(&s4).await });
        let t5 = t.clone();
        is_send(async move { t5.last_checkpoint_for_tests().await });
    }
}
