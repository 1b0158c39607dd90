//! The background purge of items whose time-to-live has run out.

use std::sync::Arc;
use std::time::Duration;

use super::EmbeddedStore;
use super::sqlite::sql_error;
use crate::store::{StoreError, StoreResult};

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
            tx.execute(
                "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at <= unixepoch()",
                [],
            )
            .map_err(sql_error)
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
