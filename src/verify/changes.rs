//! The checks of `verify` over what changed, for the delayed re-check: each changed item is
//! checked against its source and its dependents with a few targeted reads, so the cost
//! grows with the number of changes, never with the size of the store:
//!
//! - a user: the items of `posts` that carry another name than theirs (the fan-out's query);
//! - an erasure marker: what the user wrote before the erasure (one query of their items);
//! - a post copy in `users`: its source post (a point read);
//! - a post: its author's name, its copy in `users`, its place in the feed, its counts against
//!   its comments and likes; a deleted post: no copy, comment or like left;
//! - a comment or like: its author's current name, its like id, and its post's counts (the
//!   post is checked once per batch, however many of its children changed).
//!
//! It reads the *current* version of what it checks, so a change overtaken by a later one is
//! checked as it is now. A violation it reports while the application writes may be gone by
//! the time it is repaired: every repair re-reads first and writes nothing then.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::{StreamExt, TryStreamExt, stream};
use tokio::sync::OnceCell;

use serde::Deserialize;
use serde_json::Value;

use super::Violation;
use super::checks::{self, AuthorState, Authored, PostSummary, canonical_hash};
use super::repair::{Children, count_children};
use crate::blog::{FEED_SIZE, feed_query, stored_feed};
use crate::copies::current_username;
use crate::domain::{Comment, Deleted, Like, Post, Timestamp, Tombstone, User, UserId, is_a};
use crate::store::{
    Container, FilterOp, PageRequest, Pages, PartitionKey, Query, Store, StoreResult,
    strip_system_properties,
};

/// Items per page of the queries of a user's items.
const PAGE_SIZE: u32 = 1_000;
/// Changed items checked at once: enough to hide the store's latency (a few reads each, one
/// after the other), few enough not to trip its rate limit.
const CONCURRENCY: usize = 16;

/// Checks every changed item of `documents`, a batch of `container`'s change feed as `store`
/// sees it (a `single` store, or one tenant's view of a `multi` one), and returns what is
/// wrong, each violation with its repair.
pub async fn check_changes(
    store: &Arc<dyn Store>,
    container: Container,
    documents: &[Value],
) -> StoreResult<Vec<Violation>> {
    let check = Targeted {
        store,
        authors: Mutex::default(),
        feed: OnceCell::new(),
        found: Mutex::default(),
    };
    match container {
        Container::Users => check.users(documents).await?,
        Container::Posts => check.posts(documents).await?,
        Container::Feed | Container::Tags | Container::Archive | Container::Leases => {}
    }
    Ok(check.found.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// The author fields of a post, comment or like.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthorFields {
    #[serde(rename = "type")]
    kind: String,
    id: String,
    post_id: String,
    user_id: String,
    user_username: String,
    creation_date: Timestamp,
}

impl AuthorFields {
    fn authored(&self) -> Option<Authored<'_>> {
        let kind = match self.kind.as_str() {
            Post::TYPE => Post::TYPE,
            Comment::TYPE => Comment::TYPE,
            Like::TYPE => Like::TYPE,
            _ => return None,
        };
        Some(Authored {
            kind,
            post_id: &self.post_id,
            id: &self.id,
            user_id: &self.user_id,
            username: &self.user_username,
            created: self.creation_date,
        })
    }
}

/// What the store holds of an author (see [`AuthorState`]), owned.
#[derive(Debug, Clone, Default)]
struct Author {
    username: Option<String>,
    erased_at: Option<Timestamp>,
}

impl Author {
    fn state(&self) -> AuthorState<'_> {
        AuthorState {
            username: self.username.as_deref(),
            erased_at: self.erased_at,
        }
    }
}

/// The feed's first [`FEED_SIZE`] posts, read once per batch.
struct FeedView {
    /// id -> (date, hash of the copy).
    entries: HashMap<String, (Timestamp, u64)>,
    oldest: Option<Timestamp>,
}

/// The checks of one batch. Items are checked side by side (up to [`CONCURRENCY`]), sharing
/// what the batch has read once (authors, the feed) and what it has found.
struct Targeted<'a> {
    store: &'a Arc<dyn Store>,
    /// Authors read so far in this batch, by user id.
    authors: Mutex<HashMap<String, Author>>,
    feed: OnceCell<FeedView>,
    found: Mutex<Vec<Violation>>,
}

/// The last version of each item of a batch (by partition and id), without system
/// properties, in feed order.
fn latest(documents: &[Value], pk_field: &str) -> Vec<Value> {
    let key = |item: &Value| {
        let text = |field: &str| item.get(field).and_then(Value::as_str).map(str::to_owned);
        (text(pk_field), text("id"))
    };
    let mut last: HashMap<(Option<String>, Option<String>), usize> = HashMap::new();
    for (at, document) in documents.iter().enumerate() {
        last.insert(key(document), at);
    }
    documents
        .iter()
        .enumerate()
        .filter(|(at, document)| last.get(&key(document)) == Some(at))
        .map(|(_, document)| {
            let mut item = document.clone();
            strip_system_properties(&mut item);
            item
        })
        .collect()
}

fn text<'v>(item: &'v Value, field: &str) -> &'v str {
    item.get(field).and_then(Value::as_str).unwrap_or("?")
}

impl Targeted<'_> {
    fn lock<'m, T>(&self, mutex: &'m Mutex<T>) -> MutexGuard<'m, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn report(&self, violation: Violation) {
        self.lock(&self.found).push(violation);
    }

    fn report_all(&self, violations: impl IntoIterator<Item = Violation>) {
        self.lock(&self.found).extend(violations);
    }

    async fn read(
        &self,
        container: Container,
        partition: &str,
        id: &str,
    ) -> StoreResult<Option<Value>> {
        Ok(self
            .store
            .read_item(container, &PartitionKey::single(partition), id)
            .await?
            .map(|document| document.item))
    }

    fn unreadable(&self, container: Container, item: &Value, pk_field: &str, why: String) {
        let found = checks::unreadable(container, text(item, pk_field), text(item, "id"), why);
        self.report(found);
    }

    /// The author's current username (one point read per author and batch) and, only if they
    /// have no user item, their erasure (another point read), to tell an item an erasure left
    /// behind from one by nobody.
    async fn author(&self, user_id: &str) -> StoreResult<Author> {
        if let Some(author) = self.lock(&self.authors).get(user_id) {
            return Ok(author.clone());
        }
        let username = current_username(self.store, user_id).await?;
        let erased_at = match (&username, UserId::parse(user_id)) {
            (None, Ok(id)) => self.erasure(user_id, &Tombstone::erasure_id(&id)).await?,
            _ => None,
        };
        let author = Author {
            username,
            erased_at,
        };
        self.lock(&self.authors)
            .insert(user_id.to_owned(), author.clone());
        Ok(author)
    }

    /// When `user_id`'s account was erased, from its marker `marker_id`, if there is one.
    async fn erasure(&self, user_id: &str, marker_id: &str) -> StoreResult<Option<Timestamp>> {
        let marker = self.read(Container::Users, user_id, marker_id).await?;
        Ok(marker
            .and_then(|m| Tombstone::deserialize(&m).ok())
            .filter(|m| m.of == Deleted::User)
            .map(|m| m.deleted_at))
    }

    // ---- users -------------------------------------------------------------------------

    async fn users(&self, documents: &[Value]) -> StoreResult<()> {
        stream::iter(latest(documents, "userId"))
            .map(|item| async move {
                match item.get("type").and_then(Value::as_str).unwrap_or_default() {
                    User::TYPE => self.user(&item).await,
                    Tombstone::TYPE => self.erased(&item).await,
                    Post::TYPE => self.user_copy(&item).await,
                    // An image's item has no copies to keep in step.
                    crate::images::IMAGE_TYPE => Ok(()),
                    other => {
                        let why = format!("unknown item type {other:?}");
                        self.unreadable(Container::Users, &item, "userId", why);
                        Ok(())
                    }
                }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await
    }

    /// A user against the usernames on their posts, comments and likes.
    async fn user(&self, item: &Value) -> StoreResult<()> {
        let user_id = text(item, "userId");
        let author = self.author(user_id).await?;
        let Some(username) = &author.username else {
            // Gone since (erased): the marker's own change is checked.
            return Ok(());
        };
        let query = authored_by(user_id).filter("userUsername", FilterOp::Ne, username.as_str());
        self.authored_items(&query, &author, None).await
    }

    /// An erasure marker against what the user wrote before it.
    async fn erased(&self, item: &Value) -> StoreResult<()> {
        let user_id = text(item, "userId");
        let Some(erased_at) = self.erasure(user_id, text(item, "id")).await? else {
            return Ok(());
        };
        let author = Author {
            username: None,
            erased_at: Some(erased_at),
        };
        self.authored_items(&authored_by(user_id), &author, Some(erased_at))
            .await
    }

    /// Checks each item `query` finds against `author` (written up to `until`, if given).
    async fn authored_items(
        &self,
        query: &Query,
        author: &Author,
        until: Option<Timestamp>,
    ) -> StoreResult<()> {
        let mut pages = Pages::new(&**self.store, Container::Posts, query, PAGE_SIZE);
        while let Some(items) = pages.next().await? {
            for item in items {
                let Ok(fields) = AuthorFields::deserialize(&item) else {
                    continue;
                };
                if until.is_some_and(|until| fields.creation_date > until) {
                    continue;
                }
                let found = fields
                    .authored()
                    .and_then(|authored| checks::author(&authored, &author.state()));
                self.report_all(found);
            }
        }
        Ok(())
    }

    /// A post copy in `users` against its source post.
    async fn user_copy(&self, item: &Value) -> StoreResult<()> {
        let (partition, id) = (text(item, "userId"), text(item, "id"));
        let Some(copy) = self.read(Container::Users, partition, id).await? else {
            return Ok(());
        };
        let source = self.live_post(id).await?;
        let summary = source.as_ref().map(PostSummary::of);
        let found = checks::user_copy(partition, id, canonical_hash(&copy), summary.as_ref());
        self.report_all(found);
        Ok(())
    }

    /// The post `post_id` if it is live.
    async fn live_post(&self, post_id: &str) -> StoreResult<Option<Post>> {
        let current = self.read(Container::Posts, post_id, post_id).await?;
        Ok(current
            .filter(is_a::<Post>)
            .and_then(|item| Post::deserialize(&item).ok()))
    }

    // ---- posts -------------------------------------------------------------------------

    async fn posts(&self, documents: &[Value]) -> StoreResult<()> {
        // Each post partition touched, with the comments and likes of the batch in it.
        let mut touched: BTreeMap<String, HashSet<String>> = BTreeMap::new();
        for item in latest(documents, "postId") {
            let post_id = text(&item, "postId").to_owned();
            match item.get("type").and_then(Value::as_str).unwrap_or_default() {
                Post::TYPE | Tombstone::TYPE => {
                    touched.entry(post_id).or_default();
                }
                Comment::TYPE | Like::TYPE => {
                    let id = text(&item, "id").to_owned();
                    touched.entry(post_id).or_default().insert(id);
                }
                other => {
                    let why = format!("unknown item type {other:?}");
                    self.unreadable(Container::Posts, &item, "postId", why);
                }
            }
        }
        stream::iter(touched)
            .map(
                |(post_id, children)| async move { self.post_partition(&post_id, &children).await },
            )
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await
    }

    /// One post partition: the post (live, deleted or missing) against its copies, its author
    /// and its children, and the batch's `children` against their authors.
    async fn post_partition(&self, post_id: &str, children: &HashSet<String>) -> StoreResult<()> {
        let current = self.read(Container::Posts, post_id, post_id).await?;
        match current {
            Some(item) if is_a::<Post>(&item) => match Post::deserialize(&item) {
                Ok(post) => self.live(&post, children).await,
                Err(why) => {
                    self.unreadable(Container::Posts, &item, "postId", format!("post: {why}"));
                    Ok(())
                }
            },
            Some(item) if is_a::<Tombstone>(&item) => match Tombstone::deserialize(&item) {
                Ok(tombstone) => self.deleted(post_id, &tombstone).await,
                Err(why) => {
                    let why = format!("tombstone: {why}");
                    self.unreadable(Container::Posts, &item, "postId", why);
                    Ok(())
                }
            },
            // Another kind of item under the post's id: reported when it changes itself.
            Some(_) => Ok(()),
            None if children.is_empty() => Ok(()),
            None => self.children(post_id, None, false, children).await,
        }
    }

    async fn live(&self, post: &Post, children: &HashSet<String>) -> StoreResult<()> {
        let (post_id, author_id) = (post.id.as_str(), post.user_id.as_str());
        let summary = PostSummary::of(post);
        let author = self.author(author_id).await?;
        self.report_all(checks::author(&post.into(), &author.state()));
        match self.read(Container::Users, author_id, post_id).await? {
            None => self.report(checks::missing_user_copy(post_id, author_id)),
            Some(copy) => self.report_all(checks::user_copy(
                author_id,
                post_id,
                canonical_hash(&copy),
                Some(&summary),
            )),
        }
        self.in_feed(post_id, &summary).await?;
        self.children(post_id, Some(&summary), false, children)
            .await
    }

    /// A deleted post: no copy, comment or like may be left.
    async fn deleted(&self, post_id: &str, tombstone: &Tombstone) -> StoreResult<()> {
        let author = tombstone.user_id.as_str();
        if let Some(copy) = self.read(Container::Users, author, post_id).await? {
            let found = checks::user_copy(author, post_id, canonical_hash(&copy), None);
            self.report_all(found);
        }
        if let Some(copy) = self.read(Container::Feed, Post::TYPE, post_id).await? {
            self.report_all(checks::feed_copy(post_id, canonical_hash(&copy), None));
        }
        self.children(post_id, None, true, &HashSet::new()).await
    }

    /// The comments and likes of the post partition: counted against the post (`source`), or
    /// reported left without it; those of the batch (`changed`) checked against their authors.
    async fn children(
        &self,
        post_id: &str,
        source: Option<&PostSummary>,
        deleted: bool,
        changed: &HashSet<String>,
    ) -> StoreResult<()> {
        // Those of the batch, as they are now, against their authors (and each like's id).
        let Children {
            comments,
            likes,
            kept,
        } = count_children(self.store, post_id, changed).await?;
        for item in kept {
            self.child(&item).await?;
        }
        let found = match source {
            Some(source) => checks::counts(post_id, source, comments, likes),
            None => {
                let example = changed
                    .iter()
                    .next()
                    .map(String::as_str)
                    .unwrap_or_default();
                checks::children_without_post(post_id, deleted, comments, likes, example)
            }
        };
        self.report_all(found);
        Ok(())
    }

    async fn child(&self, item: &Value) -> StoreResult<()> {
        let fields = match AuthorFields::deserialize(item) {
            Ok(fields) => fields,
            Err(why) => {
                let why = format!("{}: {why}", text(item, "type"));
                self.unreadable(Container::Posts, item, "postId", why);
                return Ok(());
            }
        };
        let author = self.author(&fields.user_id).await?;
        if let Some(authored) = fields.authored() {
            self.report_all(checks::author(&authored, &author.state()));
        }
        if is_a::<Like>(item) {
            match Like::deserialize(item) {
                Ok(like) => self.report_all(checks::like_id(&like)),
                Err(why) => {
                    self.unreadable(Container::Posts, item, "postId", format!("like: {why}"))
                }
            }
        }
        Ok(())
    }

    // ---- feed --------------------------------------------------------------------------

    /// The feed's first page, and what lies past its bound, read once per batch.
    async fn feed_view(&self) -> StoreResult<&FeedView> {
        self.feed.get_or_try_init(|| self.read_feed()).await
    }

    async fn read_feed(&self) -> StoreResult<FeedView> {
        let window = stored_feed(&**self.store).await?;
        let mut entries = HashMap::with_capacity(window.len());
        let mut oldest = None;
        for copy in &window {
            let Ok(post) = Post::deserialize(copy) else {
                continue;
            };
            let date = post.list_date();
            oldest = Some(oldest.map_or(date, |o: Timestamp| o.min(date)));
            entries.insert(post.id.to_string(), (date, canonical_hash(copy)));
        }
        let beyond = self
            .store
            .query(
                Container::Feed,
                &feed_query().skip(FEED_SIZE),
                PageRequest::first(1_000),
            )
            .await?;
        let ids: Vec<String> = beyond
            .items
            .iter()
            .map(|item| text(item, "id").to_owned())
            .collect();
        let held = entries.len() + ids.len();
        self.report_all(checks::feed_over_bound(&ids, held));
        Ok(FeedView { entries, oldest })
    }

    /// A live post against the feed: in it, its copy must be its short form; out of it, it
    /// must be older than every post the full feed holds (a post tied with the oldest is left
    /// to `verify`, which knows every post's date).
    async fn in_feed(&self, post_id: &str, summary: &PostSummary) -> StoreResult<()> {
        let feed = self.feed_view().await?;
        let found = match (feed.entries.get(post_id), summary.published) {
            (Some((_, hash)), _) => checks::feed_copy(post_id, *hash, Some(summary)),
            // Not published: not in the feed, as it should be.
            (None, None) => None,
            (None, Some(published)) => self.missing_published(post_id, published, feed),
        };
        self.report_all(found);
        Ok(())
    }

    /// A published post the feed does not hold: it must be older than every post of a full
    /// feed.
    fn missing_published(
        &self,
        post_id: &str,
        published: Timestamp,
        feed: &FeedView,
    ) -> Option<Violation> {
        match () {
            () if feed.entries.len() < FEED_SIZE as usize => Some(checks::missing_from_feed(
                post_id,
                format!(
                    "the feed holds {} posts, fewer than {FEED_SIZE}, and not this one",
                    feed.entries.len()
                ),
            )),
            () => feed
                .oldest
                .filter(|oldest| published > *oldest)
                .map(|oldest| {
                    checks::missing_from_feed(
                        post_id,
                        format!(
                            "post of {published} is newer than the oldest post of the feed \
                             ({oldest})"
                        ),
                    )
                }),
        }
    }
}

/// The posts, comments and likes of `user_id` in `posts` (a cross-partition query: the one of
/// the username fan-out).
fn authored_by(user_id: &str) -> Query {
    Query::cross_partition()
        .filter("userId", FilterOp::Eq, user_id)
        .of_types(&[Post::TYPE, Comment::TYPE, Like::TYPE])
}
