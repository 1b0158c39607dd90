//! The writes: queued for the writer thread (`group_commit`), and what each does inside its
//! group's transaction.

use std::sync::{Arc, Mutex};

use rusqlite::{OptionalExtension, Transaction};
use serde_json::Value;

use super::EmbeddedStore;
use super::group_commit::{Batch, WriteJob};
use super::schema::LIVE;
use super::sqlite::{etag_for, lock, now_seconds, sql_error};
use crate::store::{
    BatchOperation, Container, ETag, PartitionKey, StoreError, StoreResult, Tenancy, checked_item,
};

/// When an item with this body, written at `written_at` (Unix seconds), expires: its `ttl`
/// field, as on Cosmos DB, is a number of seconds after the last write; absent or -1 means
/// never (the containers' default time-to-live is "on, no default").
fn expiry_of(item: &Value, written_at: i64) -> Option<i64> {
    item.get("ttl")
        .and_then(Value::as_i64)
        .filter(|ttl| *ttl > 0)
        .map(|ttl| written_at.saturating_add(ttl))
}

impl EmbeddedStore {
    /// One operation through [`Self::write`]: a point write is a batch of one.
    pub(super) async fn write_one(
        &self,
        container: Container,
        pk: &PartitionKey,
        operation: BatchOperation,
    ) -> StoreResult<Option<ETag>> {
        let pk = pk.clone();
        let tenancy = self.shared.tenancy;
        self.write(container, move |tx| {
            apply(tx, tenancy, container, &pk, operation)
        })
        .await
    }

    /// Runs `work` in the writer thread's next group transaction (its own savepoint), and
    /// wakes change-log waiters of `container` once the group has committed.
    pub(super) async fn write<T: Send + 'static>(
        &self,
        container: Container,
        work: impl FnOnce(&Batch<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let result = self.on_writer(work).await;
        if result.is_ok() {
            self.changes().notify(container);
        }
        result
    }

    /// Runs `work` in the writer thread's next group transaction (its own savepoint), and
    /// answers once the group has committed.
    pub(super) async fn on_writer<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Batch<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.submit(work)?
            .await
            .map_err(|_| StoreError::Internal("the writer thread dropped a write".into()))?
    }

    /// Queues `work` for the writer thread; the answer comes once its group has committed
    /// (or with the error that rolled it back).
    pub(super) fn submit<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Batch<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<tokio::sync::oneshot::Receiver<StoreResult<T>>> {
        if self.shared.read_only {
            return Err(StoreError::BadRequest(
                "the embedded store is open read-only".into(),
            ));
        }
        let slot = Arc::new(Mutex::new(None::<StoreResult<T>>));
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = WriteJob {
            run: Box::new({
                let slot = Arc::clone(&slot);
                move |tx| {
                    let result = work(tx);
                    let succeeded = result.is_ok();
                    *lock(&slot) = Some(result);
                    succeeded
                }
            }),
            finish: Box::new(move |group_failure| {
                let result = match (lock(&slot).take(), group_failure) {
                    (Some(Err(own)), _) => Err(own),
                    (_, Some(group)) => Err(group),
                    (Some(Ok(output)), None) => Ok(output),
                    (None, None) => Err(StoreError::Internal("the write did not run".into())),
                };
                let _ = reply.send(result);
            }),
        };
        self.shared
            .writes
            .send(job)
            .map_err(|_| StoreError::Unavailable("the writer thread has stopped".into()))?;
        Ok(answer)
    }
}

fn next_lsn(tx: &Transaction<'_>) -> StoreResult<i64> {
    tx.prepare_cached(
        "UPDATE log_sequence SET last_lsn = last_lsn + 1 WHERE singleton = 1 RETURNING last_lsn",
    )
    .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
    .map_err(sql_error)
}

fn current_lsn(
    tx: &Transaction<'_>,
    container: Container,
    pk: &str,
    id: &str,
) -> StoreResult<Option<i64>> {
    tx.prepare_cached(&format!(
        "SELECT lsn FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3 AND {LIVE}"
    ))
    .and_then(|mut statement| {
        statement
            .query_row((container.name(), pk, id), |row| row.get(0))
            .optional()
    })
    .map_err(sql_error)
}

fn write_item(
    tx: &Batch<'_>,
    container: Container,
    pk: &str,
    id: &str,
    item: &Value,
) -> StoreResult<ETag> {
    let lsn = next_lsn(tx)?;
    let now = now_seconds();
    tx.prepare_cached(
        "INSERT INTO items (container, pk, id, body, lsn, ts, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (container, pk, id) DO UPDATE SET
             body = excluded.body, lsn = excluded.lsn, ts = excluded.ts,
             expires_at = excluded.expires_at",
    )
    .and_then(|mut statement| {
        statement.execute((
            container.name(),
            pk,
            id,
            item.to_string(),
            lsn,
            now,
            expiry_of(item, now),
        ))
    })
    .map_err(sql_error)?;
    tx.wrote(container, pk);
    Ok(etag_for(lsn))
}

/// Applies one operation inside the caller's transaction.
pub(super) fn apply(
    tx: &Batch<'_>,
    tenancy: Tenancy,
    container: Container,
    pk: &PartitionKey,
    operation: BatchOperation,
) -> StoreResult<Option<ETag>> {
    let pk_text = pk.to_json_array();
    match operation {
        BatchOperation::Create { mut item } => {
            let id = checked_item(tenancy, container, pk, &mut item)?;
            if current_lsn(tx, container, &pk_text, &id)?.is_some() {
                return Err(StoreError::Conflict);
            }
            write_item(tx, container, &pk_text, &id, &item).map(Some)
        }
        BatchOperation::Upsert { mut item } => {
            let id = checked_item(tenancy, container, pk, &mut item)?;
            write_item(tx, container, &pk_text, &id, &item).map(Some)
        }
        BatchOperation::Replace { mut item, if_match } => {
            let id = checked_item(tenancy, container, pk, &mut item)?;
            let lsn = current_lsn(tx, container, &pk_text, &id)?.ok_or(StoreError::NotFound)?;
            if if_match.is_some_and(|expected| expected != etag_for(lsn)) {
                return Err(StoreError::PreconditionFailed);
            }
            write_item(tx, container, &pk_text, &id, &item).map(Some)
        }
        BatchOperation::Delete { id, if_match } => {
            if let Some(expected) = if_match {
                let lsn = current_lsn(tx, container, &pk_text, &id)?.ok_or(StoreError::NotFound)?;
                if expected != etag_for(lsn) {
                    return Err(StoreError::PreconditionFailed);
                }
            }
            let deleted = tx
                .prepare_cached(&format!(
                    "DELETE FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3 AND {LIVE}"
                ))
                .and_then(|mut statement| statement.execute((container.name(), &pk_text, &id)))
                .map_err(sql_error)?;
            if deleted == 0 {
                return Err(StoreError::NotFound);
            }
            tx.wrote(container, &pk_text);
            Ok(None)
        }
    }
}

/// The etag of a single-item write (only deletes have none).
pub(super) fn written(etag: Option<ETag>) -> StoreResult<ETag> {
    etag.ok_or_else(|| StoreError::Internal("write produced no etag".into()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::{PageRequest, Query, Store};

    /// Concurrent writes share group commits; a failing write (a duplicate create, a batch
    /// with a failing operation) is rolled back alone and the rest of its group commits.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_write_does_not_fail_its_group() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("blog.sqlite3")).unwrap();
        let pk = PartitionKey::single("p");
        let item = |id: &str| json!({"id": id, "postId": "p", "type": "like"});
        let creates = (0..40).map(|n| {
            let store = store.clone();
            let pk = pk.clone();
            // Ten writers race for the same id "dup"; thirty write ids of their own.
            let id = if n % 4 == 0 {
                "dup".to_owned()
            } else {
                format!("own-{n}")
            };
            async move { store.create_item(Container::Posts, &pk, item(&id)).await }
        });
        let broken_batch = store.execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Create {
                    item: item("batch-a"),
                },
                BatchOperation::Replace {
                    item: item("missing"),
                    if_match: None,
                },
            ],
        );
        let (results, batch) = tokio::join!(futures::future::join_all(creates), broken_batch);
        let created = results.iter().filter(|r| r.is_ok()).count();
        let conflicts = results
            .iter()
            .filter(|r| matches!(r, Err(StoreError::Conflict)))
            .count();
        assert_eq!((created, conflicts), (31, 9));
        assert!(matches!(
            batch,
            Err(StoreError::BatchOperationFailed { index: 1, .. })
        ));
        assert!(
            store
                .read_item(Container::Posts, &pk, "batch-a")
                .await
                .unwrap()
                .is_none(),
            "the failed batch left nothing behind"
        );
        let all = store
            .query(
                Container::Posts,
                &Query::in_partition(pk.clone()),
                PageRequest::first(100),
            )
            .await
            .unwrap();
        assert_eq!(all.items.len(), 31);
        let changes = store
            .read_changes(Container::Posts, None, 100)
            .await
            .unwrap();
        assert_eq!(
            changes.items.len(),
            31,
            "the change log holds each committed item once"
        );
    }
}
