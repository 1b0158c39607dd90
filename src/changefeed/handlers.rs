//! The two denormalisation handlers of SPEC 5, shared by the standalone pump, the Azure
//! Functions triggers and `rebuild`.
//!
//! Both are idempotent: they compare before they write, so a repeated or late batch writes
//! nothing. A document that cannot be read as its type is logged and skipped; a transient
//! store failure fails the whole batch so that it is delivered again.

use std::collections::HashMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;

use crate::blog::{FEED_SIZE, feed_partition};
use crate::domain::{Post, PostId, User};
use crate::store::{
    BatchOperation, Container, FilterOp, PageRequest, PartitionKey, Query, SortOrder, Store,
    StoreError, StoreResult, strip_system_properties,
};

/// Writes of the username fan-out in flight at once: enough to hide latency, few enough not
/// to trip the store's rate limit on one user's burst.
const FAN_OUT_CONCURRENCY: usize = 8;
/// Posts of one batch read at once by `OnPostChanged`, and its writes in flight at once, for
/// the same reason.
const HANDLER_CONCURRENCY: usize = 16;
/// Operations in one transactional batch at most (the Cosmos DB limit).
const MAX_BATCH_OPERATIONS: usize = 100;

/// What a handler did with a batch; its lines go to the Functions host's `Logs`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Documents of the handler's type that were looked at.
    pub processed: usize,
    /// Items written (copies, renamed items, feed trims).
    pub written: usize,
    /// Documents that could not be read and were skipped, with the reason.
    pub skipped: Vec<String>,
}

impl Report {
    fn merge(&mut self, other: Report) {
        self.processed += other.processed;
        self.written += other.written;
        self.skipped.extend(other.skipped);
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
fn documents_of<T: serde::de::DeserializeOwned>(
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

/// The item's current version in its source container, or the delivered one if the source
/// no longer has it. A batch that arrives late (a lease moved between instances, a retried
/// batch) may carry an older version than one already handled; copying the source's current
/// state instead makes every copy converge whatever the delivery order.
async fn current_version<T: serde::de::DeserializeOwned + serde::Serialize>(
    store: &Arc<dyn Store>,
    container: Container,
    delivered: T,
) -> StoreResult<T> {
    let item = serde_json::to_value(&delivered).map_err(|e| StoreError::Internal(e.to_string()))?;
    let pk = container.partition_key_of(&item)?;
    let Some(id) = item.get("id").and_then(Value::as_str) else {
        return Ok(delivered);
    };
    match store.read_item(container, &pk, id).await? {
        Some(current) => Ok(serde_json::from_value(current.item).unwrap_or(delivered)),
        None => Ok(delivered),
    }
}

/// A store failure inside one document's work: transient ones fail the batch (it will be
/// delivered again); others are recorded and the batch goes on.
fn settle(result: StoreResult<usize>, what: String, report: &mut Report) -> StoreResult<()> {
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

// ---- OnUserChanged -------------------------------------------------------------------------

/// SPEC 5.1: gives every post, comment and like of each changed user its current username.
pub async fn on_user_changed(store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
    let mut report = Report::default();
    let users = documents_of::<User>(documents, User::TYPE, |u| u.id.to_string(), &mut report);
    for delivered in users {
        let user = match current_version(store, Container::Users, delivered).await {
            Ok(user) => user,
            Err(e) => {
                settle(Err(e), "user read".to_owned(), &mut report)?;
                continue;
            }
        };
        let result = rename_everywhere(store, &user).await;
        settle(result, format!("user {}", user.id), &mut report)?;
    }
    Ok(report)
}

async fn rename_everywhere(store: &Arc<dyn Store>, user: &User) -> StoreResult<usize> {
    // Only the items that still carry another name: a repeated batch finds none.
    let query = Query::cross_partition()
        .filter("userId", FilterOp::Eq, user.user_id.as_str())
        .filter("userUsername", FilterOp::Ne, user.username.as_str());
    let mut written = 0;
    let mut continuation = None;
    loop {
        let page = store
            .query(
                Container::Posts,
                &query,
                PageRequest {
                    max_items: 100,
                    continuation: continuation.take(),
                },
            )
            .await?;
        written += stream::iter(page.items)
            .map(|item| rename_item(store, item, &user.username))
            .buffer_unordered(FAN_OUT_CONCURRENCY)
            .try_fold(0, |sum, n| async move { Ok(sum + n) })
            .await?;
        match page.continuation {
            Some(next) => continuation = Some(next),
            None => return Ok(written),
        }
    }
}

/// Sets `userUsername` on one item of `posts`, re-reading on a race with a like or comment
/// (which rewrites the post's counts) so neither write is lost.
async fn rename_item(store: &Arc<dyn Store>, item: Value, username: &str) -> StoreResult<usize> {
    let pk = Container::Posts.partition_key_of(&item)?;
    let Some(id) = item.get("id").and_then(Value::as_str) else {
        return Ok(0);
    };
    loop {
        let Some(current) = store.read_item(Container::Posts, &pk, id).await? else {
            return Ok(0);
        };
        if current.item.get("userUsername").and_then(Value::as_str) == Some(username) {
            return Ok(0);
        }
        let mut renamed = current.item;
        renamed["userUsername"] = Value::from(username);
        match store
            .replace_item(Container::Posts, &pk, renamed, Some(&current.etag))
            .await
        {
            Ok(_) => return Ok(1),
            Err(StoreError::PreconditionFailed) => continue,
            Err(StoreError::NotFound) => return Ok(0),
            Err(e) => return Err(e),
        }
    }
}

// ---- OnPostChanged -------------------------------------------------------------------------

/// SPEC 5.2: copies each changed post, in short form, into its author's partition of `users`
/// and into `feed`, and keeps `feed` to the [`FEED_SIZE`] most recent posts.
pub async fn on_post_changed(store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
    let mut report = Report::default();
    let posts = documents_of::<Post>(documents, Post::TYPE, |p| p.id.to_string(), &mut report);
    if !posts.is_empty() {
        copy_posts(store, posts, &mut report).await?;
    }
    Ok(report)
}

/// The copies of a batch's posts: reads first (each post's current version and its author
/// copy, side by side), then every write at once, one transactional batch per target
/// partition: the author copies that changed, per author; the feed's changes (copies added or
/// updated, posts pushed past the bound) in its one partition. A batch of posts is so a
/// handful of writes instead of one per copy and one per trimmed post, each waiting for the
/// one before (on the embedded store they also share one commit of its one writer).
async fn copy_posts(
    store: &Arc<dyn Store>,
    posts: Vec<Post>,
    report: &mut Report,
) -> StoreResult<()> {
    let read: Vec<_> = stream::iter(posts)
        .map(|delivered| read_post_and_author_copy(store, delivered))
        .buffered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    let mut copies = Vec::with_capacity(read.len());
    for (id, result) in read {
        match result {
            Ok(found) => copies.push(found),
            Err(e) => settle(Err(e), format!("post {id}"), report)?,
        }
    }
    // The feed: decide post by post against one window (order matters there).
    let mut feed = FeedWindow::load(store).await?;
    for (copy, _) in &copies {
        feed.admit(copy);
    }
    let feed_write = feed.changes()?;
    let adds_to_feed = feed_write
        .as_ref()
        .is_some_and(|write| write.operations.iter().any(|(_, op)| !is_delete(op)));
    let mut writes = author_copy_writes(&copies)?;
    writes.extend(feed_write);
    let done: Vec<_> = stream::iter(writes)
        .map(|write| write.run(store))
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    for part in done {
        report.merge(part?);
    }
    // Handlers running side by side (Functions instances) may each have added posts that
    // push others past the bound; whatever lies past it now goes.
    if adds_to_feed {
        match trim_feed(store).await {
            Ok(part) => report.merge(part),
            Err(e) => settle(Err(e), "feed trim".to_owned(), report)?,
        }
    }
    Ok(())
}

/// The post's current version, short, and its author's copy of it as stored (if any).
async fn read_post_and_author_copy(
    store: &Arc<dyn Store>,
    delivered: Post,
) -> (PostId, StoreResult<(Post, Option<Value>)>) {
    let id = delivered.id.clone();
    let read = async {
        // Serialising re-writes creationDate canonically, whatever form it arrived in.
        let copy = current_version(store, Container::Posts, delivered)
            .await?
            .short();
        let pk = PartitionKey::single(copy.user_id.as_str());
        let existing = store
            .read_item(Container::Users, &pk, copy.id.as_str())
            .await?;
        Ok((copy, existing.map(|d| d.item)))
    };
    (id, read.await)
}

fn to_value(copy: &Post) -> StoreResult<Value> {
    serde_json::to_value(copy).map_err(|e| StoreError::Internal(e.to_string()))
}

fn is_delete(operation: &BatchOperation) -> bool {
    matches!(operation, BatchOperation::Delete { .. })
}

/// The author copies that differ from what `users` holds, as one write per author.
fn author_copy_writes(copies: &[(Post, Option<Value>)]) -> StoreResult<Vec<PartitionWrite>> {
    let mut by_author: HashMap<&str, PartitionWrite> = HashMap::new();
    for (copy, existing) in copies {
        let item = to_value(copy)?;
        if existing.as_ref() == Some(&item) {
            continue;
        }
        let author = copy.user_id.as_str();
        by_author
            .entry(author)
            .or_insert_with(|| PartitionWrite {
                container: Container::Users,
                pk: PartitionKey::single(author),
                operations: Vec::new(),
            })
            .operations
            .push((
                format!("user copy of post {}", copy.id),
                BatchOperation::Upsert { item },
            ));
    }
    Ok(by_author.into_values().collect())
}

/// Writes to one logical partition, run as transactional batches of at most
/// [`MAX_BATCH_OPERATIONS`]; each operation is labelled for the report.
struct PartitionWrite {
    container: Container,
    pk: PartitionKey,
    operations: Vec<(String, BatchOperation)>,
}

impl PartitionWrite {
    /// A transient failure fails the whole write (the change-feed batch is delivered again);
    /// an operation the store refuses for good is reported and its batch runs again without
    /// it, and a delete of what is already gone (another handler trimmed it) is done.
    async fn run(self, store: &Arc<dyn Store>) -> StoreResult<Report> {
        let mut report = Report::default();
        let mut operations = self.operations.into_iter().peekable();
        while operations.peek().is_some() {
            let mut chunk: Vec<_> = operations.by_ref().take(MAX_BATCH_OPERATIONS).collect();
            while !chunk.is_empty() {
                let batch = chunk.iter().map(|(_, op)| op.clone()).collect();
                match store.execute_batch(self.container, &self.pk, batch).await {
                    Ok(_) => {
                        report.written += chunk.len();
                        break;
                    }
                    Err(e) if e.is_transient() => return Err(e),
                    Err(StoreError::BatchOperationFailed { index, cause })
                        if index < chunk.len() =>
                    {
                        let (what, operation) = chunk.remove(index);
                        if !(is_delete(&operation) && matches!(*cause, StoreError::NotFound)) {
                            settle(Err(*cause), what, &mut report)?;
                        }
                    }
                    Err(e) => {
                        for (what, _) in chunk.drain(..) {
                            settle(Err(e.clone()), what, &mut report)?;
                        }
                    }
                }
            }
        }
        Ok(report)
    }
}

/// The feed's current top [`FEED_SIZE`] (read once per batch), kept up to date as the batch
/// adds posts, to decide which posts belong in the feed without a read per post.
struct FeedWindow {
    /// Newest first.
    items: Vec<Post>,
    /// The feed's items as read, by id, to write only what changes.
    stored: HashMap<PostId, Value>,
    /// Copies admitted by this batch, by id (the last one of each post).
    admitted: HashMap<PostId, Post>,
}

impl FeedWindow {
    fn query() -> Query {
        Query::in_partition(feed_partition())
            .of_type(Post::TYPE)
            .order_by("creationDate", SortOrder::Descending)
    }

    async fn load(store: &Arc<dyn Store>) -> StoreResult<Self> {
        let page = store
            .query(
                Container::Feed,
                &Self::query(),
                PageRequest::first(FEED_SIZE),
            )
            .await?;
        let mut items = Vec::with_capacity(page.items.len());
        let mut stored = HashMap::with_capacity(page.items.len());
        for item in page.items {
            if let Ok(post) = serde_json::from_value::<Post>(item.clone()) {
                stored.insert(post.id.clone(), item);
                items.push(post);
            }
        }
        Ok(Self {
            items,
            stored,
            admitted: HashMap::new(),
        })
    }

    /// Takes `copy` into the window unless it is older than the oldest of a full feed.
    fn admit(&mut self, copy: &Post) {
        let existing = self.items.iter().position(|p| p.id == copy.id);
        let full = self.items.len() >= FEED_SIZE as usize;
        if existing.is_none()
            && full
            && self
                .items
                .last()
                .is_some_and(|oldest| copy.creation_date < oldest.creation_date)
        {
            return;
        }
        if let Some(at) = existing {
            self.items.remove(at);
        }
        let at = self
            .items
            .partition_point(|p| p.creation_date > copy.creation_date);
        self.items.insert(at, copy.clone());
        self.items.truncate(FEED_SIZE as usize);
        self.admitted.insert(copy.id.clone(), copy.clone());
    }

    /// What the feed needs to look like the window: the admitted copies still in it that
    /// differ from the stored ones, and deletes of the stored posts pushed out of it.
    fn changes(&self) -> StoreResult<Option<PartitionWrite>> {
        let mut operations = Vec::new();
        for post in &self.items {
            let Some(copy) = self.admitted.get(&post.id) else {
                continue;
            };
            let item = to_value(copy)?;
            if self.stored.get(&post.id) != Some(&item) {
                operations.push((
                    format!("feed copy of post {}", post.id),
                    BatchOperation::Upsert { item },
                ));
            }
        }
        for id in self.stored.keys() {
            if !self.items.iter().any(|p| &p.id == id) {
                operations.push((
                    format!("feed trim of post {id}"),
                    BatchOperation::Delete { id: id.to_string() },
                ));
            }
        }
        Ok((!operations.is_empty()).then(|| PartitionWrite {
            container: Container::Feed,
            pk: feed_partition(),
            operations,
        }))
    }
}

/// Deletes what lies beyond the feed's bound, in one batch. Safe with concurrent handlers:
/// anything past position [`FEED_SIZE`] in one snapshot stays past it (posts only get
/// added), and a post already deleted by another instance is simply not found.
async fn trim_feed(store: &Arc<dyn Store>) -> StoreResult<Report> {
    let beyond = FeedWindow::query().skip(FEED_SIZE);
    let page = store
        .query(Container::Feed, &beyond, PageRequest::first(1_000))
        .await?;
    let operations: Vec<_> = page
        .items
        .iter()
        .filter_map(|item| item.get("id").and_then(Value::as_str))
        .map(|id| {
            (
                format!("feed trim of post {id}"),
                BatchOperation::Delete { id: id.to_owned() },
            )
        })
        .collect();
    let write = PartitionWrite {
        container: Container::Feed,
        pk: feed_partition(),
        operations,
    };
    write.run(store).await
}

// ---- rebuild -------------------------------------------------------------------------------

/// Re-derives every copy from the sources (SPEC 5.3): usernames from `users` into `posts`,
/// then post copies into `users` and `feed`. Idempotent; safe while the platform runs.
pub async fn rebuild(store: &Arc<dyn Store>) -> StoreResult<Report> {
    let mut report = Report::default();
    for (container, item_type) in [
        (Container::Users, User::TYPE),
        (Container::Posts, Post::TYPE),
    ] {
        let query = Query::cross_partition().of_type(item_type);
        let mut continuation = None;
        loop {
            let page = store
                .query(
                    container,
                    &query,
                    PageRequest {
                        max_items: 500,
                        continuation: continuation.take(),
                    },
                )
                .await?;
            let part = match container {
                Container::Users => on_user_changed(store, &page.items).await?,
                _ => on_post_changed(store, &page.items).await?,
            };
            report.merge(part);
            match page.continuation {
                Some(next) => continuation = Some(next),
                None => break,
            }
        }
    }
    Ok(report)
}
