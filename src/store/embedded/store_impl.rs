//! The [`Store`] operations of the embedded store: reads on a reader connection, writes
//! through the writer thread.

use std::time::Duration;

use async_trait::async_trait;
use rusqlite::OptionalExtension;
use serde_json::Value;
use serde_json::value::to_raw_value;

use super::EmbeddedStore;
use super::reads::Reach;
use super::schema::LIVE;
use super::sql::{run_query, run_query_json};
use super::sqlite::{etag_for, parse_body, parse_checkpoint, sql_error};
use super::writer::{apply, written};
use crate::store::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, Page, PageRequest,
    PartitionKey, Query, QueryScope, RawItem, Store, StoreError, StoreResult, Tenancy,
};

#[async_trait]
impl Store for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn tenancy(&self) -> Tenancy {
        self.shared.tenancy
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let (pk, id) = (pk.to_json_array(), id.to_owned());
        self.read(Reach::Partition, move |conn| {
            let row = conn
                .prepare_cached(&format!(
                    "SELECT body, lsn FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3 \
                     AND {LIVE}"
                ))
                .map_err(sql_error)?
                .query_row((container.name(), pk, id), |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                })
                .optional()
                .map_err(sql_error)?;
            row.map(|(body, lsn)| {
                Ok(Document {
                    item: parse_body(&body)?,
                    etag: etag_for(lsn),
                })
            })
            .transpose()
        })
        .await
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        self.write_one(container, pk, BatchOperation::Create { item })
            .await
            .and_then(written)
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        self.write_one(container, pk, BatchOperation::Upsert { item })
            .await
            .and_then(written)
    }

    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        let if_match = if_match.cloned();
        self.write_one(container, pk, BatchOperation::Replace { item, if_match })
            .await
            .and_then(written)
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        let id = id.to_owned();
        self.write_one(container, pk, BatchOperation::Delete { id })
            .await
            .map(|_| ())
    }

    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        let pk = pk.clone();
        // An error returned from the closure drops the transaction, which rolls it back.
        let tenancy = self.shared.tenancy;
        self.write(container, move |tx| {
            operations
                .into_iter()
                .enumerate()
                .map(|(index, operation)| {
                    apply(tx, tenancy, container, &pk, operation).map_err(|cause| {
                        StoreError::BatchOperationFailed {
                            index,
                            cause: Box::new(cause),
                        }
                    })
                })
                .collect()
        })
        .await
    }

    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        let query = query.clone();
        if container == Container::Feed {
            return self
                .with_reader(Reach::Partition, move |reader| {
                    reader.feed_query(&query, &page)
                })
                .await;
        }
        self.read(reach_of(&query), move |conn| {
            run_query(conn, container, &query, &page)
        })
        .await
    }

    async fn query_json(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<RawItem>> {
        // The feed's pages are kept parsed by each reader (see `feed_query`); the list
        // queries read the stored text as it is.
        if container == Container::Feed {
            let page = self.query(container, query, page).await?;
            return Ok(Page {
                items: page
                    .items
                    .iter()
                    .map(to_raw_value)
                    .collect::<Result<_, _>>()
                    .map_err(|e| StoreError::Internal(format!("item does not serialise: {e}")))?,
                continuation: page.continuation,
            });
        }
        let query = query.clone();
        self.read(reach_of(&query), move |conn| {
            run_query_json(conn, container, &query, &page)
        })
        .await
    }

    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let after = parse_checkpoint(since)?;
        let limit = i64::try_from(max_items.max(1)).unwrap_or(i64::MAX);
        self.read(Reach::Wide, move |conn| {
            let mut statement = conn
                .prepare_cached(
                    "SELECT body, lsn, ts FROM items WHERE container = ?1 AND lsn > ?2
                     ORDER BY lsn LIMIT ?3",
                )
                .map_err(sql_error)?;
            let rows = statement
                .query_map((container.name(), after, limit), |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                    ))
                })
                .map_err(sql_error)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql_error)?;
            let mut last = after;
            let mut items = Vec::with_capacity(rows.len());
            for (body, lsn, ts) in rows {
                let mut item = parse_body(&body)?;
                if let Value::Object(fields) = &mut item {
                    fields.insert("_etag".into(), Value::from(etag_for(lsn).0));
                    fields.insert("_lsn".into(), Value::from(lsn));
                    fields.insert("_ts".into(), Value::from(ts));
                }
                items.push(item);
                last = lsn;
            }
            Ok(ChangeBatch {
                items,
                checkpoint: Checkpoint(last.to_string()),
            })
        })
        .await
    }

    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.notifier(container).notified()).await;
    }
}

/// Where a query runs: a partition's on the calling thread when it can, anything wider on a
/// blocking thread.
fn reach_of(query: &Query) -> Reach {
    match query.scope {
        QueryScope::Partition(_) => Reach::Partition,
        QueryScope::Prefix(_) | QueryScope::CrossPartition => Reach::Wide,
    }
}
