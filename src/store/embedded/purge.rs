//! The background purge of items whose time-to-live has run out.

use std::sync::Arc;
use std::time::Duration;

use super::EmbeddedStore;
use super::sqlite::sql_error;
use crate::store::{Container, StoreError, StoreResult};

/// How often the background purge deletes expired items.
const PURGE_INTERVAL: Duration = Duration::from_secs(60);

impl EmbeddedStore {
    /// Deletes the items whose time-to-live has run out; returns how many. Reads stop
    /// seeing them at once (see [`LIVE`](super::schema::LIVE)); this frees their space,
    /// and until it runs the change log still delivers them, as Cosmos DB's does until its
    /// own purge.
    /// Blocks until done: call it from a thread of its own (or `spawn_blocking`), not from
    /// async code.
    pub fn purge_expired(&self) -> StoreResult<usize> {
        self.submit(|tx| {
            let mut purged = 0;
            let mut statement = tx
                .prepare_cached(
                    "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at <= unixepoch()
                     RETURNING container, pk",
                )
                .map_err(sql_error)?;
            let mut rows = statement.query([]).map_err(sql_error)?;
            while let Some(row) = rows.next().map_err(sql_error)? {
                let (container, pk): (String, String) = (
                    row.get(0).map_err(sql_error)?,
                    row.get(1).map_err(sql_error)?,
                );
                if let Some(container) = Container::ALL.into_iter().find(|c| c.name() == container)
                {
                    tx.wrote(container, &pk);
                }
                purged += 1;
            }
            Ok(purged)
        })?
        .blocking_recv()
        .map_err(|_| StoreError::Internal("the writer thread dropped the purge".into()))?
    }

    /// A thread that purges expired items every [`PURGE_INTERVAL`] while the store is open
    /// (it holds no strong reference, so dropping the store ends it).
    pub(super) fn start_purge(&self) -> StoreResult<()> {
        let shared = Arc::downgrade(&self.shared);
        std::thread::Builder::new()
            .name("embedded-store-purge".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(PURGE_INTERVAL);
                    let Some(shared) = shared.upgrade() else {
                        return;
                    };
                    match (EmbeddedStore { shared }).purge_expired() {
                        Ok(0) => {}
                        Ok(purged) => tracing::debug!(purged, "purged expired items"),
                        Err(e) => tracing::warn!(error = %e, "purge of expired items failed"),
                    }
                }
            })
            .map(|_| ())
            .map_err(|e| StoreError::Internal(format!("cannot start the purge thread: {e}")))
    }
}
