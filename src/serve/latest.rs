//! One served table as the server knows it: the snapshot its group committer decides against,
//! and the view the handlers read (schema to decode with, each push producer's committed
//! sequence).
//!
//! Contract:
//! - The view is a cache of the table, never the truth about a position: whatever answers a
//!   producer about its sequence (`GET .../producers/{id}`, the `committed_sequence` of an
//!   `already_committed` answer) asks [`Latest::fresh`], which reads the commits landed since
//!   (another server's included) before answering. A cached view is only ever behind the
//!   table (sequences only grow), so "committed" read from it is true; "not committed" or the
//!   number itself must be read fresh.
//! - A request whose rows the cached schema refuses is decoded again against a fresh view
//!   before it is refused (another writer may have added the column).
//! - The committer publishes the view after each commit it made, including that commit.
//! - A table that existed and whose log is gone is an error, never silently created again:
//!   producers' sequences would start over in a new log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::{watch, Mutex};

use crate::delta::app_id::PRODUCER_PREFIX;
use crate::delta::schema::StructType;
use crate::delta::snapshot::Snapshot;
use crate::error::{Error, Result};
use crate::storage::Table;

/// What handlers need of the table: the schema to decode with and each push producer's
/// committed sequence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableView {
    pub version: u64,
    pub schema: StructType,
    pub producers: std::collections::HashMap<String, i64>,
}

impl TableView {
    /// The view of `snapshot`.
    pub(crate) fn of(snapshot: &Snapshot) -> TableView {
        let producers = snapshot
            .state()
            .txns
            .iter()
            .filter_map(|(app, t)| app.strip_prefix(PRODUCER_PREFIX).map(|p| (p.to_string(), t.version)))
            .collect();
        TableView { version: snapshot.version, schema: snapshot.schema.clone(), producers }
    }
}

/// One table's snapshot (shared by its committer and the handlers' fresh reads) and view.
pub(crate) struct Latest {
    table: Table,
    /// The committer holds it for a whole group; a fresh read waits for that group.
    pub snapshot: Mutex<Option<Snapshot>>,
    view: watch::Sender<Option<Arc<TableView>>>,
    /// The table has been seen to exist.
    existed: AtomicBool,
}

impl Latest {
    pub(crate) fn new(table: Table) -> Arc<Latest> {
        Arc::new(Latest {
            table,
            snapshot: Mutex::new(None),
            view: watch::channel(None).0,
            existed: AtomicBool::new(false),
        })
    }

    /// Now, by the table's clock (the one clock): when a request arrived.
    pub(crate) fn now_ms(&self) -> i64 {
        self.table.clock().now_ms()
    }

    /// The view as last published (`None`: no table yet, or not read yet).
    pub(crate) fn cached(&self) -> Option<Arc<TableView>> {
        self.view.borrow().clone()
    }

    /// The view after reading what landed since: the answer to every question about a position.
    ///
    /// # Errors
    /// Storage errors; a table whose log is gone.
    pub(crate) async fn fresh(&self) -> Result<Option<Arc<TableView>>> {
        let mut snapshot = self.snapshot.lock().await;
        self.refresh(&mut snapshot).await?;
        self.publish(snapshot.as_ref());
        Ok(self.cached())
    }

    /// Publishes the view of `snapshot` when it is newer than the published one.
    pub(crate) fn publish(&self, snapshot: Option<&Snapshot>) {
        // `None` after a failed read says nothing: a table never stops existing.
        let Some(s) = snapshot else { return };
        self.view.send_if_modified(|view| {
            if view.as_ref().is_some_and(|v| v.version >= s.version) {
                return false;
            }
            *view = Some(Arc::new(TableView::of(s)));
            true
        });
    }

    /// Brings `snapshot` up to date; `None` while the table does not exist.
    ///
    /// # Errors
    /// Storage errors; a protocol deltabus cannot write; a table seen before whose log is gone.
    pub(crate) async fn refresh(&self, snapshot: &mut Option<Snapshot>) -> Result<()> {
        self.table.refresh(snapshot).await?;
        self.check(snapshot.as_ref())
    }

    /// Records that the table exists, or refuses a table seen before whose log is gone.
    ///
    /// # Errors
    /// [`Error::NotATable`] for a table this server has seen that no longer exists.
    pub(crate) fn check(&self, snapshot: Option<&Snapshot>) -> Result<()> {
        match snapshot {
            Some(_) => self.existed.store(true, Ordering::Release),
            None if self.existed.load(Ordering::Acquire) => {
                return Err(Error::NotATable {
                    location: format!(
                        "{} (the table this server has been writing is gone; restart the server to create it again)",
                        self.table.url()
                    ),
                })
            }
            None => {}
        }
        Ok(())
    }
}
