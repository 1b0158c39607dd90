//! The import's writes: each item in the form the target will hold it, grouped by blog and
//! partition into transactional batches bounded in operations and bytes, each batch writing
//! only what the target does not hold yet, retried while the store's failure passes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use backon::Retryable;
use serde_json::Value;

use super::super::validate::{ImportedBlog, Item};
use crate::domain::TenantId;
use crate::retry::Backoff;
use crate::store::{
    BatchOperation, Container, FilterOp, MAX_BATCH_OPERATIONS, PageRequest, PartitionKey, Query,
    Store, StoreError, StoreResult, tenant,
};

/// Bytes of items in one batch at most: Cosmos DB refuses requests over 2 MiB; the rest is
/// room for the request's own envelope.
pub(super) const MAX_BATCH_BYTES: usize = 3 << 19;
/// Lines parsed and grouped into batches together; bounded in bytes too (posts may be large).
pub(super) const CHUNK_ITEMS: usize = 20_000;
pub(super) const CHUNK_BYTES: usize = 16 << 20;

/// An item on its way into the target.
pub(super) struct Loaded {
    /// The target's blog (`None`: the store itself).
    pub(super) into: Option<TenantId>,
    pub(super) pk: PartitionKey,
    pub(super) id: String,
    pub(super) item: Value,
    /// Its size as serialised, near enough.
    pub(super) bytes: usize,
}

/// The item as the target will hold it: counts recomputed from the export, the author's
/// username as the export's user has it (an erased author's items keep theirs: the
/// erasure removes them), and every field in the domain type's canonical form. With its
/// serialised size.
pub(super) fn stored_form(item: Item, blog: &ImportedBlog) -> serde_json::Result<(Value, usize)> {
    let renamed = |user_username: &mut String, user_id| {
        if let Some(username) = blog.username(user_id) {
            username.clone_into(user_username);
        }
    };
    let value = match item {
        Item::User(user) => serde_json::to_value(user),
        Item::Image(image) => serde_json::to_value(image),
        Item::Erasure(tombstone) | Item::DeletedPost(tombstone) => serde_json::to_value(tombstone),
        Item::Post(mut post) => {
            let tally = blog.tally(&post.post_id);
            post.comment_count = tally.comments;
            post.like_count = tally.likes;
            renamed(&mut post.user_username, &post.user_id);
            serde_json::to_value(post)
        }
        Item::Comment(mut comment) => {
            renamed(&mut comment.user_username, &comment.user_id);
            serde_json::to_value(comment)
        }
        Item::Like(mut like) => {
            renamed(&mut like.user_username, &like.user_id);
            serde_json::to_value(like)
        }
    }?;
    let bytes = approximate_size(&value);
    Ok((value, bytes))
}

/// The serialised size of an item of the model, near enough to bound a batch: its strings'
/// lengths plus a generous allowance per field.
pub(super) fn approximate_size(item: &Value) -> usize {
    match item {
        Value::Object(fields) => fields
            .iter()
            .map(|(name, value)| name.len() + 8 + approximate_size(value))
            .sum(),
        Value::String(text) => text.len() + text.len() / 8 + 2,
        Value::Array(values) => values.iter().map(approximate_size).sum::<usize>() + 2,
        _ => 24,
    }
}

/// The target store, and each tenant's view of it.
pub(super) struct Views {
    store: Arc<dyn Store>,
    tenants: HashMap<TenantId, Arc<dyn Store>>,
}

impl Views {
    pub(super) fn new(store: &Arc<dyn Store>) -> Self {
        Self {
            store: Arc::clone(store),
            tenants: HashMap::new(),
        }
    }

    pub(super) fn of(&mut self, into: &Option<TenantId>) -> Arc<dyn Store> {
        match into {
            None => Arc::clone(&self.store),
            Some(tenant) => Arc::clone(
                self.tenants
                    .entry(tenant.clone())
                    .or_insert_with(|| tenant::scoped(&self.store, tenant)),
            ),
        }
    }
}

/// Items of one logical partition of one blog, written together.
pub(super) struct Batch {
    store: Arc<dyn Store>,
    container: Container,
    pk: PartitionKey,
    items: Vec<(String, Value)>,
    /// The blog held no source item when the import began: none of these can be there.
    new: bool,
}

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Written {
    pub(super) written: u64,
    pub(super) unchanged: u64,
}

/// The batches of a file's items, a chunk of lines at a time.
pub(super) struct Batches<'a, I> {
    lines: I,
    ready: VecDeque<Batch>,
    views: &'a mut Views,
    empty: &'a HashSet<Option<TenantId>>,
    container: Container,
}

impl<'a, I: Iterator<Item = anyhow::Result<Loaded>>> Batches<'a, I> {
    /// The batches of `lines` (all of one kind, bound for `container`), each written through
    /// its blog's view; a blog in `empty` held no source item when the import began.
    pub(super) fn new(
        lines: I,
        views: &'a mut Views,
        empty: &'a HashSet<Option<TenantId>>,
        container: Container,
    ) -> Self {
        Self {
            lines,
            ready: VecDeque::new(),
            views,
            empty,
            container,
        }
    }

    /// The next batch, reading the next chunk of lines when the last one is all handed out.
    pub(super) fn next(&mut self) -> Option<anyhow::Result<Batch>> {
        if self.ready.is_empty() {
            let mut chunk = Vec::new();
            let mut bytes = 0;
            while chunk.len() < CHUNK_ITEMS && bytes < CHUNK_BYTES {
                match self.lines.next() {
                    Some(Ok(loaded)) => {
                        bytes += loaded.bytes;
                        chunk.push(loaded);
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => break,
                }
            }
            self.ready = batches(self.views, self.empty, self.container, chunk).into();
        }
        self.ready.pop_front().map(Ok)
    }
}

/// Groups a chunk's items by blog and partition, in order, and cuts each group into batches
/// of at most [`MAX_BATCH_OPERATIONS`] items and [`MAX_BATCH_BYTES`].
pub(super) fn batches(
    views: &mut Views,
    empty: &HashSet<Option<TenantId>>,
    container: Container,
    chunk: Vec<Loaded>,
) -> Vec<Batch> {
    let mut groups: Vec<(Option<TenantId>, PartitionKey, Vec<Loaded>)> = Vec::new();
    let mut position: HashMap<(Option<TenantId>, String), usize> = HashMap::new();
    for loaded in chunk {
        let key = (loaded.into.clone(), loaded.pk.to_json_array());
        let at = *position.entry(key).or_insert_with(|| {
            groups.push((loaded.into.clone(), loaded.pk.clone(), Vec::new()));
            groups.len() - 1
        });
        groups[at].2.push(loaded);
    }
    let mut batches = Vec::new();
    for (into, pk, items) in groups {
        let store = views.of(&into);
        let new = empty.contains(&into);
        let mut batch: Vec<(String, Value)> = Vec::new();
        let mut bytes = 0;
        for loaded in items {
            let full = batch.len() >= MAX_BATCH_OPERATIONS
                || (!batch.is_empty() && bytes + loaded.bytes > MAX_BATCH_BYTES);
            if full {
                batches.push(Batch {
                    store: Arc::clone(&store),
                    container,
                    pk: pk.clone(),
                    items: std::mem::take(&mut batch),
                    new,
                });
                bytes = 0;
            }
            bytes += loaded.bytes;
            batch.push((loaded.id, loaded.item));
        }
        if !batch.is_empty() {
            batches.push(Batch {
                store,
                container,
                pk,
                items: batch,
                new,
            });
        }
    }
    batches
}

impl Batch {
    /// Reads which of the items the partition already holds as they are, and upserts the
    /// others in one transactional batch.
    pub(super) async fn write(self) -> anyhow::Result<Written> {
        let present = if self.new {
            Vec::new()
        } else {
            self.present().await?
        };
        let present: HashMap<&str, &Value> = present
            .iter()
            .filter_map(|item| Some((item.get("id")?.as_str()?, item)))
            .collect();
        let operations: Vec<BatchOperation> = self
            .items
            .iter()
            .filter(|(id, item)| present.get(id.as_str()) != Some(&item))
            .map(|(_, item)| BatchOperation::Upsert { item: item.clone() })
            .collect();
        let written = operations.len() as u64;
        if !operations.is_empty() {
            retrying(|| {
                self.store
                    .execute_batch(self.container, &self.pk, operations.clone())
            })
            .await
            .with_context(|| self.failed("write"))?;
        }
        Ok(Written {
            written,
            unchanged: self.items.len() as u64 - written,
        })
    }

    /// The batch's items that the partition holds, as it holds them.
    pub(super) async fn present(&self) -> anyhow::Result<Vec<Value>> {
        let ids: Vec<Value> = self
            .items
            .iter()
            .map(|(id, _)| Value::from(id.as_str()))
            .collect();
        let held = Query::in_partition(self.pk.clone()).filter("id", FilterOp::In, ids);
        let page = PageRequest::first(self.items.len() as u32);
        let present = retrying(|| self.store.query(self.container, &held, page.clone()))
            .await
            .with_context(|| self.failed("read"))?;
        Ok(present.items)
    }

    pub(super) fn failed(&self, what: &str) -> String {
        format!(
            "cannot {what} {} items of {}/{}",
            self.items.len(),
            self.container.name(),
            self.pk.to_json_array()
        )
    }
}

/// Runs `operation` again while it fails for a reason that passes (throttled, unavailable),
/// with jittered exponential backoff, waiting at least what the store asked for
/// (`Retry-After` of a 429, which the Cosmos DB SDK has already honoured a few times before
/// giving up).
pub(super) async fn retrying<T, F, Fut>(operation: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<T>>,
{
    let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10))
        .at_most(12)
        .builder();
    operation
        .retry(backoff)
        .when(StoreError::is_transient)
        .adjust(|error, next| next.map(|backoff| backoff.max(retry_after(error))))
        .notify(|error, wait| tracing::debug!(%error, ?wait, "import: retrying"))
        .await
}

/// How long the store asked to wait before the next request.
pub(super) fn retry_after(error: &StoreError) -> Duration {
    match error {
        StoreError::Throttled {
            retry_after: Some(wait),
        } => *wait,
        StoreError::BatchOperationFailed { cause, .. } => retry_after(cause),
        _ => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn a_throttled_batch_waits_what_the_store_asked() {
        let throttled = StoreError::Throttled {
            retry_after: Some(Duration::from_millis(700)),
        };
        assert_eq!(retry_after(&throttled), Duration::from_millis(700));
        let in_batch = StoreError::BatchOperationFailed {
            index: 3,
            cause: Box::new(throttled),
        };
        assert_eq!(retry_after(&in_batch), Duration::from_millis(700));
        assert_eq!(retry_after(&StoreError::NotFound), Duration::ZERO);
    }
}
