//! What both change-feed handlers share: their report, the documents of a batch (the last
//! version of each), an item's current version in its source, and how a failure settles.
//!
//! Both handlers are idempotent: they compare before they write, so a repeated or late batch
//! writes nothing. A document that cannot be read as its type is logged and skipped; a
//! transient store failure fails the whole batch so that it is delivered again.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::domain::{Deleted, Post, Tombstone, Typed, is_a};
use crate::store::{Container, Store, StoreError, StoreResult, strip_system_properties};

/// Posts of one batch read at once by `OnPostChanged`, and its writes in flight at once, for
/// the same reason.
pub(super) const HANDLER_CONCURRENCY: usize = 16;

/// What a handler did with a batch; its lines go to the Functions host's `Logs`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Documents of the handler's type that were looked at.
    pub processed: usize,
    /// Items written (copies, renamed items, feed trims).
    pub written: usize,
    /// Documents that could not be read and were skipped, with the reason.
    pub skipped: Vec<String>,
    /// Posts that have a schedule entry, written by this delivery or an earlier one: in a
    /// `multi` store their tenant must be in the publisher's directory, and a delivery that
    /// wrote the entries and stopped before the directory comes again to find them in place.
    pub scheduled: usize,
}

impl Report {
    pub(crate) fn merge(&mut self, other: Report) {
        self.processed += other.processed;
        self.written += other.written;
        self.skipped.extend(other.skipped);
        self.scheduled += other.scheduled;
    }

    pub fn log_lines(&self, handler: &str) -> Vec<String> {
        let mut lines = vec![format!(
            "{handler}: {} processed, {} written, {} skipped",
            self.processed,
            self.written,
            self.skipped.len()
        )];
        lines.extend(
            self.skipped
                .iter()
                .map(|why| format!("{handler}: skipped {why}")),
        );
        lines
    }
}

/// Picks the documents of `item_type` out of a batch and parses them, keeping only the last
/// version of each id (a batch may carry several). Unreadable documents go to the report.
pub(super) fn documents_of<T: serde::de::DeserializeOwned>(
    documents: &[Value],
    item_type: &str,
    key: impl Fn(&T) -> String,
    report: &mut Report,
) -> Vec<T> {
    let mut latest: Vec<T> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    for document in documents {
        if document.get("type").and_then(Value::as_str) != Some(item_type) {
            continue;
        }
        let mut item = document.clone();
        strip_system_properties(&mut item);
        match serde_json::from_value::<T>(item) {
            Ok(parsed) => {
                let id = key(&parsed);
                match position.get(&id) {
                    Some(&at) => latest[at] = parsed,
                    None => {
                        position.insert(id, latest.len());
                        latest.push(parsed);
                    }
                }
            }
            Err(why) => {
                let id = document.get("id").and_then(Value::as_str).unwrap_or("?");
                tracing::warn!(item_type, id, %why, "skipping unreadable change-feed document");
                report.skipped.push(format!("{item_type} {id:?}: {why}"));
            }
        }
    }
    report.processed += latest.len();
    latest
}

/// The item's current version in its source container: `None` when a tombstone has taken
/// its place (the item was deleted since). A batch that arrives late (a lease moved between
/// instances, a retried batch) may carry an older version than one already handled; copying
/// the source's current state instead makes every copy converge whatever the delivery order.
/// An item the source does not return at all is taken as delivered: on Cosmos DB a read
/// without the writer's session may lag behind the change feed, and deletes always leave a
/// tombstone, so absence alone is no proof of a delete (`rebuild` sweeps the rare copy whose
/// tombstone was purged before a late batch came).
pub(super) async fn current_version<T: serde::de::DeserializeOwned + serde::Serialize + Typed>(
    store: &Arc<dyn Store>,
    container: Container,
    delivered: T,
) -> StoreResult<Option<T>> {
    let item = serde_json::to_value(&delivered).map_err(|e| StoreError::Internal(e.to_string()))?;
    let pk = container.partition_key_of(&item)?;
    let Some(id) = item.get("id").and_then(Value::as_str) else {
        return Ok(Some(delivered));
    };
    Ok(match store.read_item(container, &pk, id).await? {
        None => Some(delivered),
        Some(current) if is_a::<Tombstone>(&current.item) => None,
        Some(current) => Some(serde_json::from_value(current.item).unwrap_or(delivered)),
    })
}

/// A store failure inside one document's work: transient ones fail the batch (it will be
/// delivered again); others are recorded and the batch goes on.
pub(super) fn settle(
    result: StoreResult<usize>,
    what: String,
    report: &mut Report,
) -> StoreResult<()> {
    match result {
        Ok(written) => {
            report.written += written;
            Ok(())
        }
        Err(e) if e.is_transient() => Err(e),
        Err(e) => {
            tracing::error!(%what, error = %e, "change-feed write failed; document skipped");
            report.skipped.push(format!("{what}: {e}"));
            Ok(())
        }
    }
}

/// The tombstones of deleted posts or erased accounts in a batch.
pub(super) fn tombstones_of(
    documents: &[Value],
    of: Deleted,
    report: &mut Report,
) -> Vec<Tombstone> {
    documents_of::<Tombstone>(documents, Tombstone::TYPE, |t| t.id.clone(), report)
        .into_iter()
        .filter(|t| t.of == of)
        .collect()
}

/// A copy as the store keeps it.
pub(super) fn to_value(copy: &Post) -> StoreResult<Value> {
    serde_json::to_value(copy).map_err(|e| StoreError::Internal(e.to_string()))
}
