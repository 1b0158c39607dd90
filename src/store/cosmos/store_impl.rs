//! The [`Store`] contract on Azure Cosmos DB: point operations, transactional batches,
//! paged queries and the change feed, each retried and observed as `faults` says.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use azure_data_cosmos::feed::{ContinuationToken, FeedScope};
use azure_data_cosmos::models::ItemResponse;
use azure_data_cosmos::options::{
    BatchDeleteOptions, BatchReplaceOptions, ChangeFeedOptions, ChangeFeedStartFrom, QueryOptions,
};
use azure_data_cosmos::{CosmosError, TransactionalBatch};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::client::CosmosStore;
use super::faults::{failed, first_failure, item_request, observe, retrying};
use super::translate::{
    MAX_PAGE_ITEMS, build_query, etag_from, if_match, max_item_count, scope_of, sdk_partition_key,
    with_lsn, write_options,
};
use crate::store::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, JsonPage,
    MAX_BATCH_OPERATIONS, Page, PageRequest, PartitionKey, PartitionVersion, Query, RawItem, Store,
    StoreError, StoreResult, Tenancy, checked_item, strip_system_properties,
};

#[async_trait]
impl Store for CosmosStore {
    fn backend(&self) -> &'static str {
        "cosmos"
    }

    fn tenancy(&self) -> Tenancy {
        self.tenancy
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let Some(response) = self.read_response(container, pk, id).await? else {
            return Ok(None);
        };
        let etag = etag_from(response.headers().etag())?;
        let mut item: Value = response
            .into_model()
            .map_err(|e| StoreError::Internal(format!("unreadable item: {e}")))?;
        strip_system_properties(&mut item);
        Ok(Some(Document { item, etag }))
    }

    async fn read_item_json(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
        _known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage> {
        // The item keeps its system properties, as the items of `query_json` do: a typed
        // reader ignores them.
        let found = self
            .read_response(container, pk, id)
            .await?
            .map(|response| {
                response
                    .into_model::<RawItem>()
                    .map_err(|e| StoreError::Internal(format!("unreadable item: {e}")))
            })
            .transpose()?;
        Ok(JsonPage::unversioned(Page::of_one(found)))
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        self.write_item(container, pk, item, ItemWrite::Create)
            .await
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        self.write_item(container, pk, item, ItemWrite::Upsert)
            .await
    }

    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        self.write_item(container, pk, item, ItemWrite::Replace(if_match))
            .await
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let request = || client.delete_item(key.clone(), id, None);
        item_request("delete_item", request).await?;
        self.changes.notify(container);
        Ok(())
    }

    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        if operations.is_empty() {
            return Ok(Vec::new());
        }
        if operations.len() > MAX_BATCH_OPERATIONS {
            return Err(StoreError::BadRequest(format!(
                "a transactional batch holds at most {MAX_BATCH_OPERATIONS} operations, not {}",
                operations.len()
            )));
        }
        let count = operations.len();
        let deletes: Vec<bool> = operations
            .iter()
            .map(|op| matches!(op, BatchOperation::Delete { .. }))
            .collect();
        let mut batch = TransactionalBatch::new(sdk_partition_key(pk)?);
        for (index, operation) in operations.into_iter().enumerate() {
            // An invalid item fails the batch before anything is sent, naming it like the
            // service would.
            let fail = |cause: StoreError| StoreError::BatchOperationFailed {
                index,
                cause: Box::new(cause),
            };
            let sdk_error = |e: CosmosError| fail(StoreError::BadRequest(e.to_string()));
            batch = match operation {
                BatchOperation::Create { mut item } => {
                    checked_item(self.tenancy, container, pk, &mut item).map_err(fail)?;
                    batch.create_item(item).map_err(sdk_error)?
                }
                BatchOperation::Upsert { mut item } => {
                    checked_item(self.tenancy, container, pk, &mut item).map_err(fail)?;
                    batch.upsert_item(item, None).map_err(sdk_error)?
                }
                BatchOperation::Replace {
                    mut item,
                    if_match: etag,
                } => {
                    let id = checked_item(self.tenancy, container, pk, &mut item).map_err(fail)?;
                    let options = etag.map(|etag| {
                        BatchReplaceOptions::default().with_precondition(if_match(&etag))
                    });
                    batch.replace_item(id, item, options).map_err(sdk_error)?
                }
                BatchOperation::Delete { id, if_match: etag } => {
                    let options = etag.map(|etag| {
                        BatchDeleteOptions::default().with_precondition(if_match(&etag))
                    });
                    batch.delete_item(id, options)
                }
            };
        }

        let client = self.client(container);
        // A whole request that failed (throttled, unreachable) ran no operation, or, when its
        // answer was lost, all of them: see `retrying` for what a retry then meets.
        let response = retrying("execute_batch", || {
            let batch = batch.clone();
            async move {
                let started = Instant::now();
                match client.execute_transactional_batch(batch, None).await {
                    Ok(response) => {
                        observe("execute_batch", started, Some(&response.diagnostics()));
                        Ok(response)
                    }
                    Err(e) => Err(failed("execute_batch", started, &e)),
                }
            }
        })
        .await?;
        let http_status = u16::from(response.status().status_code());
        // The SDK answers Ok even when an operation failed: each result must be checked.
        let results = response
            .into_model()
            .map_err(|e| StoreError::Internal(format!("unreadable batch response: {e}")))?;
        if let Some((index, cause)) = first_failure(&results) {
            return Err(StoreError::BatchOperationFailed {
                index,
                cause: Box::new(cause),
            });
        }
        if !(200..300).contains(&http_status) || results.results().len() != count {
            return Err(StoreError::Internal(format!(
                "batch answered {http_status} with {} results for {count} operations",
                results.results().len()
            )));
        }
        self.changes.notify(container);
        // A delete leaves no item, hence no etag (the service may still send one).
        Ok(results
            .results()
            .iter()
            .zip(deletes)
            .map(|(r, delete)| r.etag().filter(|_| !delete).map(|e| ETag(e.to_owned())))
            .collect())
    }

    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        self.query_as(container, query, page, strip_system_properties)
            .await
    }

    async fn query_json(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
        _known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage> {
        // The items keep their system properties: a typed reader ignores them. Cosmos DB
        // has no version of a logical partition (an item's etag is the item's alone), so
        // every page is read.
        self.query_as(container, query, page, |_: &mut RawItem| {})
            .await
            .map(JsonPage::unversioned)
    }

    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        retrying("read_changes", || {
            self.read_changes_once(container, since, max_items)
        })
        .await
    }

    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        self.changes.wait(container, timeout).await;
    }
}

/// The three writes of one item, which differ only in the request sent.
#[derive(Clone, Copy)]
enum ItemWrite<'a> {
    Create,
    Upsert,
    /// Replaces the item, if its etag is still the one given.
    Replace(Option<&'a ETag>),
}

impl ItemWrite<'_> {
    fn operation(self) -> &'static str {
        match self {
            Self::Create => "create_item",
            Self::Upsert => "upsert_item",
            Self::Replace(_) => "replace_item",
        }
    }
}

impl CosmosStore {
    /// Checks `item` and writes it as `write` says, answering its new etag.
    async fn write_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        mut item: Value,
        write: ItemWrite<'_>,
    ) -> StoreResult<ETag> {
        let id = checked_item(self.tenancy, container, pk, &mut item)?;
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let (id, item) = (&id, &item);
        let request = || {
            let key = key.clone();
            async move {
                match write {
                    ItemWrite::Create => client.create_item(key, id, item, None).await,
                    ItemWrite::Upsert => client.upsert_item(key, id, item, None).await,
                    ItemWrite::Replace(etag) => {
                        let options = write_options(etag.map(if_match));
                        client.replace_item(key, id, item, options).await
                    }
                }
            }
        };
        let response = item_request(write.operation(), request).await?;
        self.changes.notify(container);
        etag_from(response.headers().etag())
    }

    /// The service's answer to a point read of `id`, or none when there is no such item.
    async fn read_response(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<ItemResponse>> {
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let request = || client.read_item(key.clone(), id, None);
        match item_request("read_item", request).await {
            Ok(response) => Ok(Some(response)),
            Err(StoreError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A page of `query`'s items, deserialized as `T` and passed through `tidy`.
    async fn query_as<T: DeserializeOwned + Send + 'static>(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
        tidy: fn(&mut T),
    ) -> StoreResult<Page<T>> {
        let wanted = page.max_items.clamp(1, MAX_PAGE_ITEMS) as usize;
        let sdk_query = build_query(query)?;
        let scope = scope_of(query)?;
        let caller_token = page.continuation.is_some();
        let mut token = page.continuation.map(ContinuationToken::from_string);
        let mut items: Vec<T> = Vec::with_capacity(wanted.min(128));
        // One page of the service may hold fewer items than asked (size or time budget, one
        // physical partition of many); ask again for the rest, from where it stopped, so the
        // page never holds more than asked and never loses its place.
        loop {
            let remaining = u32::try_from(wanted - items.len()).unwrap_or(MAX_PAGE_ITEMS);
            let fetched = retrying("query", || {
                self.query_page(container, &sdk_query, &scope, token.as_ref(), remaining)
            })
            .await
            .map_err(|e| match e {
                // A token the SDK cannot read is the caller's mistake.
                StoreError::Internal(why) if caller_token => StoreError::BadRequest(why),
                other => other,
            })?;
            let Some((fetched, next)) = fetched else {
                return Ok(Page {
                    items,
                    continuation: None,
                });
            };
            items.extend(fetched.into_iter().map(|mut item| {
                tidy(&mut item);
                item
            }));
            if items.len() >= wanted {
                return Ok(Page {
                    items,
                    continuation: Some(next.as_str().to_owned()),
                });
            }
            token = Some(next);
        }
    }

    /// One page of the service for a query and the token that resumes after it; `None` past
    /// the last page.
    async fn query_page<T: DeserializeOwned + Send + 'static>(
        &self,
        container: Container,
        query: &azure_data_cosmos::Query,
        scope: &FeedScope,
        token: Option<&ContinuationToken>,
        max_items: u32,
    ) -> StoreResult<Option<(Vec<T>, ContinuationToken)>> {
        let mut options = QueryOptions::default().with_max_item_count(max_item_count(max_items));
        if let Some(token) = token {
            options = options.with_continuation_token(token.clone());
        }
        let started = Instant::now();
        let mut pages = self
            .client(container)
            .query_items::<T>(query.clone(), scope.clone(), Some(options))
            .await
            .map_err(|e| failed("query", started, &e))?
            .into_pages();
        let fetched = match pages.next().await {
            None => return Ok(None),
            Some(Err(e)) => return Err(failed("query", started, &e)),
            Some(Ok(fetched)) => fetched,
        };
        observe("query", started, Some(&fetched.diagnostics()));
        let items = fetched.into_items();
        let next = pages
            .to_continuation_token()
            .map_err(|e| StoreError::Internal(format!("no continuation token: {e}")))?;
        Ok(Some((items, next)))
    }

    /// One attempt of [`Store::read_changes`].
    async fn read_changes_once(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let client = self.client(container);
        let started = Instant::now();
        // A poll of the feed visits one physical partition per page: read up to one round of
        // them before concluding that nothing changed.
        let ranges = match client.read_feed_ranges(None).await {
            Ok(ranges) => ranges.len().max(1),
            Err(e) => return Err(failed("read_feed_ranges", started, &e)),
        };
        let mut options = ChangeFeedOptions::default().with_max_item_count(max_item_count(
            u32::try_from(max_items).unwrap_or(MAX_PAGE_ITEMS),
        ));
        if let Some(Checkpoint(token)) = since {
            options =
                options.with_continuation_token(ContinuationToken::from_string(token.clone()));
        }
        let mut pages = match client
            .query_change_feed::<Value>(
                FeedScope::full_container(),
                ChangeFeedStartFrom::Beginning,
                Some(options),
            )
            .await
        {
            Ok(pages) => pages,
            Err(e) => {
                return Err(match failed("read_changes", started, &e) {
                    // A checkpoint the SDK cannot read is not a transient failure.
                    StoreError::Internal(why) if since.is_some() => StoreError::BadRequest(why),
                    other => other,
                });
            }
        };
        let mut items = Vec::new();
        for _ in 0..ranges {
            let started = Instant::now();
            match pages.next().await {
                // The feed is endless; the SDK reports its end as an error instead.
                None => break,
                Some(Err(e)) => return Err(failed("read_changes", started, &e)),
                Some(Ok(page)) => {
                    observe("read_changes", started, Some(&page.diagnostics()));
                    items.extend(page.into_items().into_iter().filter_map(with_lsn));
                }
            }
            if !items.is_empty() {
                break;
            }
        }
        let checkpoint = match since {
            // Nothing new: the old position is as good, and keeping it spares the caller a
            // checkpoint write per idle poll.
            Some(previous) if items.is_empty() => previous.clone(),
            _ => Checkpoint(
                pages
                    .to_continuation_token()
                    .map_err(|e| StoreError::Internal(format!("no change-feed checkpoint: {e}")))?
                    .as_str()
                    .to_owned(),
            ),
        };
        Ok(ChangeBatch { items, checkpoint })
    }
}
