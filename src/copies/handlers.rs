//! The two denormalisation handlers (`OnUserChanged`, `OnPostChanged`), shared by the standalone pump, the Azure
//! Functions triggers and `rebuild`.
//!
//! Both are idempotent: they compare before they write, so a repeated or late batch writes
//! nothing. A document that cannot be read as its type is logged and skipped; a transient
//! store failure fails the whole batch so that it is delivered again.

use std::collections::HashMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};
use serde::Deserialize;
use serde_json::Value;

use super::deletes::{Cleared, clear_deleted_post, erase_user, refill_feed};
use crate::blog::{FEED_SIZE, feed_partition, feed_query};
use crate::domain::{Comment, Deleted, Like, Post, PostId, Tombstone, Typed, User, is_a};
use crate::store::{
    BatchOperation, Container, ETag, FilterOp, MAX_BATCH_OPERATIONS, PageRequest, Pages,
    PartitionKey, Query, Store, StoreError, StoreResult, strip_system_properties,
};

/// Writes of the username fan-out in flight at once: enough to hide latency, few enough not
/// to trip the store's rate limit on one user's burst.
const FAN_OUT_CONCURRENCY: usize = 8;
/// Posts of one batch read at once by `OnPostChanged`, and its writes in flight at once, for
/// the same reason.
const HANDLER_CONCURRENCY: usize = 16;

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
    pub(crate) fn merge(&mut self, other: Report) {
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

/// The item's current version in its source container: `None` when a tombstone has taken
/// its place (the item was deleted since). A batch that arrives late (a lease moved between
/// instances, a retried batch) may carry an older version than one already handled; copying
/// the source's current state instead makes every copy converge whatever the delivery order.
/// An item the source does not return at all is taken as delivered: on Cosmos DB a read
/// without the writer's session may lag behind the change feed, and deletes always leave a
/// tombstone, so absence alone is no proof of a delete (`rebuild` sweeps the rare copy whose
/// tombstone was purged before a late batch came).
async fn current_version<T: serde::de::DeserializeOwned + serde::Serialize + Typed>(
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

/// Gives every post, comment and like of each changed user its current username.
pub async fn on_user_changed(store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
    let mut report = Report::default();
    let users = documents_of::<User>(documents, User::TYPE, |u| u.id.to_string(), &mut report);
    for delivered in users {
        let user = match current_version(store, Container::Users, delivered).await {
            // A user item is never replaced by a tombstone (an erasure deletes it and leaves
            // a marker under another id), so this does not happen; nothing to rename.
            Ok(None) => continue,
            Ok(Some(user)) => user,
            Err(e) => {
                settle(Err(e), "user read".to_owned(), &mut report)?;
                continue;
            }
        };
        let result = rename_everywhere(store, &user).await;
        settle(result, format!("user {}", user.id), &mut report)?;
    }
    for marker in tombstones_of(documents, Deleted::User, &mut report) {
        let result = erase_user(store, &marker).await;
        settle(
            result,
            format!("erasure of user {}", marker.user_id),
            &mut report,
        )?;
    }
    Ok(report)
}

/// The tombstones of deleted posts or erased accounts in a batch.
fn tombstones_of(documents: &[Value], of: Deleted, report: &mut Report) -> Vec<Tombstone> {
    documents_of::<Tombstone>(documents, Tombstone::TYPE, |t| t.id.clone(), report)
        .into_iter()
        .filter(|t| t.of == of)
        .collect()
}

async fn rename_everywhere(store: &Arc<dyn Store>, user: &User) -> StoreResult<usize> {
    // Only the items that still carry another name: a repeated batch finds none.
    let query = Query::cross_partition()
        .filter("userId", FilterOp::Eq, user.user_id.as_str())
        .filter("userUsername", FilterOp::Ne, user.username.as_str());
    let mut written = 0;
    let mut pages = Pages::new(&**store, Container::Posts, &query, 100);
    while let Some(items) = pages.next().await? {
        written += stream::iter(items)
            .map(|item| rename_item(store, item, &user.username))
            .buffer_unordered(FAN_OUT_CONCURRENCY)
            .try_fold(0, |sum, n| async move { Ok(sum + n) })
            .await?;
    }
    Ok(written)
}

/// Sets `userUsername` on one item of `posts`, re-reading on a race with a like or comment
/// (which rewrites the post's counts) so neither write is lost.
pub(crate) async fn rename_item(
    store: &Arc<dyn Store>,
    item: Value,
    username: &str,
) -> StoreResult<usize> {
    let pk = Container::Posts.partition_key_of(&item)?;
    let Some(id) = item.get("id").and_then(Value::as_str) else {
        return Ok(0);
    };
    loop {
        let Some(current) = store.read_item(Container::Posts, &pk, id).await? else {
            return Ok(0);
        };
        // A tombstone (the post was deleted since) has no author fields to correct.
        let authored = is_a::<Post>(&current.item)
            || is_a::<Comment>(&current.item)
            || is_a::<Like>(&current.item);
        if !authored || current.item.get("userUsername").and_then(Value::as_str) == Some(username) {
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

/// Clears up after deleted posts (their tombstones), gives each changed post,
/// comment and like its author's current username (see [`correct_usernames`]), then copies
/// each changed post, in short form, into its author's partition of `users` and into `feed`,
/// and keeps `feed` to the [`FEED_SIZE`] most recent posts.
pub async fn on_post_changed(store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
    let mut report = Report::default();
    // Deleted posts first, so that the feed window below no longer holds them.
    let mut left_feed = false;
    for tombstone in tombstones_of(documents, Deleted::Post, &mut report) {
        let Some(post_id) = &tombstone.post_id else {
            continue;
        };
        let result = clear_deleted_post(store, post_id, &tombstone.user_id).await;
        left_feed |= result.as_ref().is_ok_and(|cleared| cleared.left_feed);
        let result = result.map(|cleared| cleared.written);
        settle(result, format!("deleted post {post_id}"), &mut report)?;
    }
    // First, so that the copies below are made from the corrected posts.
    report.merge(correct_usernames(store, documents).await?);
    let posts = documents_of::<Post>(documents, Post::TYPE, |p| p.id.to_string(), &mut report);
    if !posts.is_empty() || left_feed {
        copy_posts(store, posts, left_feed, &mut report).await?;
    }
    Ok(report)
}

/// The copies of a batch's posts: reads first (each post's current version and its author
/// copy, side by side), then every write at once, one transactional batch per target
/// partition: the author copies that changed, per author; the feed's changes (copies added or
/// updated, posts pushed past the bound) in its one partition. A batch of posts is so a
/// handful of writes instead of one per copy and one per trimmed post, each waiting for the
/// one before (on the embedded store they also share one commit of its one writer).
///
/// `left_feed`: deleted posts of this batch left the feed, which is then refilled first.
async fn copy_posts(
    store: &Arc<dyn Store>,
    posts: Vec<Post>,
    mut left_feed: bool,
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
            Ok(Found::Live(copy, existing)) => copies.push((copy, existing)),
            Ok(Found::Deleted(cleared)) => {
                report.written += cleared.written;
                left_feed |= cleared.left_feed;
            }
            Err(e) => settle(Err(e), format!("post {id}"), report)?,
        }
    }
    if left_feed {
        let result = refill_feed(store).await;
        settle(result, "feed refill".to_owned(), report)?;
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
    if adds_to_feed || left_feed {
        match trim_feed(store).await {
            Ok(part) => report.merge(part),
            Err(e) => settle(Err(e), "feed trim".to_owned(), report)?,
        }
    }
    Ok(())
}

/// What became of a changed post: its short copy and its author's copy of it as stored (if
/// any), or, when the post has been deleted since, the clean-up of everything derived from it.
enum Found {
    Live(Post, Option<Value>),
    Deleted(Cleared),
}

/// The post's current version, short, and its author's copy of it as stored (if any).
async fn read_post_and_author_copy(
    store: &Arc<dyn Store>,
    delivered: Post,
) -> (PostId, StoreResult<Found>) {
    let id = delivered.id.clone();
    let author = delivered.user_id.clone();
    let read = async {
        // Serialising re-writes creationDate canonically, whatever form it arrived in.
        let Some(current) = current_version(store, Container::Posts, delivered).await? else {
            // A late version of a post deleted since: never copy it back.
            let cleared = clear_deleted_post(store, &id, &author).await?;
            return Ok(Found::Deleted(cleared));
        };
        let copy = current.short();
        let pk = PartitionKey::single(copy.user_id.as_str());
        let existing = store
            .read_item(Container::Users, &pk, copy.id.as_str())
            .await?;
        Ok(Found::Live(copy, existing.map(|d| d.item)))
    };
    (id.clone(), read.await)
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
    async fn load(store: &Arc<dyn Store>) -> StoreResult<Self> {
        let page = store
            .query(
                Container::Feed,
                &feed_query(),
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
pub(crate) async fn trim_feed(store: &Arc<dyn Store>) -> StoreResult<Report> {
    let beyond = feed_query().skip(FEED_SIZE);
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

// ---- OnPostChanged: usernames of new items (the rename race) -------------------------------

/// The author fields of a changed post, comment or like.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Authored {
    id: String,
    post_id: String,
    user_id: String,
    user_username: String,
}

/// Gives every changed post, comment and like its author's current username.
///
/// This closes the rename race that `OnUserChanged` alone leaves open: the API reads the
/// author's user, then writes the item; if the user is renamed in between and the rename's
/// fan-out query runs before the item is visible, nothing else would ever correct it. Here
/// every item's own change reads the author's username *after* the item was written, so:
///
/// - if that read sees the rename, the item is corrected here;
/// - if it does not, the rename commits after the read, hence after the item was written, and
///   the rename's fan-out query (which runs after the rename) sees the item and corrects it.
///
/// Either way the last writer of an item has read the final username, whatever order the two
/// handlers run in: the standalone pump runs them as independent tasks, and Azure Functions
/// as independent triggers, so nothing here relies on one running before the other. A
/// correction is itself a change of `posts`; it comes back through the feed and then writes
/// nothing. (On Cosmos DB this needs reads that see every write committed before them, as the
/// account's Strong or Bounded Staleness consistency gives, or Session consistency when both
/// triggers share one client; with weaker reads the argument holds once replicas catch up.)
///
/// Cost per batch: one point read of `users` per distinct author of the batch's items (a
/// batch of 100 likes of one hot post by 100 users: 100 reads; by one user: one), plus, only
/// for an item that carries another name, one replace (and a re-read if it changed since).
/// An item whose author no longer exists is left alone.
async fn correct_usernames(store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
    let mut report = Report::default();
    let items = authored_items(documents);
    let authors: Vec<String> = items
        .iter()
        .map(|(authored, _)| authored.user_id.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let read: Vec<(String, StoreResult<Option<String>>)> = stream::iter(authors)
        .map(|user_id| async move {
            let username = current_username(store, &user_id).await;
            (user_id, username)
        })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    let mut usernames: HashMap<String, String> = HashMap::new();
    for (user_id, result) in read {
        match result {
            Ok(Some(username)) => {
                usernames.insert(user_id, username);
            }
            // No such user: its items are left as they are.
            Ok(None) => {}
            Err(e) => settle(Err(e), format!("user {user_id} read"), &mut report)?,
        }
    }
    // Owned, so that the stream below has no borrow of the batch to carry.
    let corrections: Vec<(Authored, Value, String)> = items
        .into_iter()
        .filter_map(|(authored, document)| {
            let username = usernames.get(&authored.user_id)?;
            (&authored.user_username != username).then(|| {
                let username = username.clone();
                (authored, document.clone(), username)
            })
        })
        .collect();
    let corrected: Vec<_> = stream::iter(corrections)
        .map(|(authored, document, username)| async move {
            let result = correct_username(store, document, &username).await;
            (authored, result)
        })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    for (authored, result) in corrected {
        let what = format!("username of {} in post {}", authored.id, authored.post_id);
        settle(result, what, &mut report)?;
    }
    Ok(report)
}

/// The posts, comments and likes of a batch with their author fields, the last version of
/// each item only. Other documents (no author fields) are not this step's concern.
fn authored_items(documents: &[Value]) -> Vec<(Authored, &Value)> {
    let mut latest: HashMap<(String, String), (Authored, &Value)> = HashMap::new();
    for document in documents {
        let item_type = document.get("type").and_then(Value::as_str);
        if !matches!(item_type, Some("post" | "comment" | "like")) {
            continue;
        }
        if let Ok(authored) = Authored::deserialize(document) {
            let key = (authored.post_id.clone(), authored.id.clone());
            latest.insert(key, (authored, document));
        }
    }
    latest.into_values().collect()
}

pub(crate) async fn current_username(
    store: &Arc<dyn Store>,
    user_id: &str,
) -> StoreResult<Option<String>> {
    let user = store
        .read_item(Container::Users, &PartitionKey::single(user_id), user_id)
        .await?;
    Ok(user.and_then(|doc| {
        doc.item
            .get("username")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }))
}

/// Replaces the delivered version of the item with `username`, on the condition that it is
/// still the current one (its `_etag`); if it is not (a like or comment bumped the counts
/// since), re-reads and retries like the fan-out does, so no concurrent write is lost.
async fn correct_username(
    store: &Arc<dyn Store>,
    document: Value,
    username: &str,
) -> StoreResult<usize> {
    let pk = Container::Posts.partition_key_of(&document)?;
    let etag = document
        .get("_etag")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(etag) = etag {
        let mut item = document.clone();
        strip_system_properties(&mut item);
        item["userUsername"] = Value::from(username);
        match store
            .replace_item(Container::Posts, &pk, item, Some(&ETag(etag)))
            .await
        {
            Ok(_) => return Ok(1),
            Err(StoreError::NotFound) => return Ok(0),
            Err(StoreError::PreconditionFailed) => {}
            Err(e) => return Err(e),
        }
    }
    rename_item(store, document, username).await
}
