//! The blog's operations on the V3 model: users, posts, comments, likes, the feed, and
//! the deletes. Every read is one request to one logical
//! partition; the counts of a post change in the same transactional batch as the comment or
//! like that changes them. Backend-agnostic: it sees only [`Store`].

mod children;
pub(crate) mod combiner;
mod deletes;
mod drafts;
mod feed;
pub mod images;
mod list_cache;
mod listed;
mod paging;
mod schedule;
mod storage;
mod views;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::Retryable;
use serde::de::DeserializeOwned;
use serde_json::Value;

use combiner::{Change, ChangeOutcome, Combiner, CountDelta};
pub use feed::{
    FEED_SIZE, PUBLISHED_DATE, feed_partition, feed_query, newest_feed_copies, published_only,
    stored_feed,
};
pub use list_cache::{BlogLists, ListCache, ListPage, Listing};
use list_cache::{Kept, ListKey, first_item};
use listed::Addressed;
pub use listed::{Listed, Seen, WireJson, page_json};
pub use paging::{ListRequest, PageSize, decode_continuation, encode_continuation};
pub use schedule::{
    PUBLISH_BATCH, Published, SCHEDULE_TYPE, ScheduleEntry, schedule_partition, schedule_query,
};
use storage::{from_item, listed_page, post_partition, to_item, user_partition};
pub use views::{LISTED_BY, archive_index_partition, month_partition, published_on, tag_partition};

use crate::domain::{
    Comment, CommentContent, CommentId, IdempotencyKey, Like, LikeId, Post, PostContent, PostId,
    Publication, Tags, Timestamp, Title, Tombstone, Typed, User, UserId, Username, is_a,
};
use crate::error::{Error, Result};
use crate::retry::Backoff;
use crate::signing::ServerKey;
use crate::store::{
    BatchOperation, Container, Document, ETag, JsonPage, Page, PageRequest, PartitionKey,
    PartitionVersion, Query, RawItem, SortOrder, Store, StoreError,
};

/// Whether a command made something new or found/changed something that existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    Existing,
}

#[derive(Clone)]
pub struct Blog {
    store: Arc<dyn Store>,
    /// Comments and likes of one post, written together (see [`combiner`]).
    combiner: Combiner,
    /// Pages of lists read lately, served again while their partition is unchanged.
    lists: BlogLists,
    /// Signs the lists' continuation tokens (see [`paging`]).
    key: ServerKey,
}

/// A page of a list: the one kept, its partition unchanged, or one just read.
enum ListRead<T> {
    Kept(Listing<T>),
    Read(ReadPage),
}

/// A page just read, with what keeping it takes (nothing is kept without both).
struct ReadPage {
    page: Page<RawItem>,
    version: Option<PartitionVersion>,
    key: Option<ListKey>,
}

/// Why one optimistic attempt did not go through.
enum Attempt {
    /// Someone else wrote first (etag mismatch or create race): read again and retry.
    Stale,
    Failed(Error),
}

impl From<Error> for Attempt {
    fn from(error: Error) -> Self {
        Attempt::Failed(error)
    }
}

impl From<StoreError> for Attempt {
    fn from(error: StoreError) -> Self {
        Attempt::Failed(error.into())
    }
}

/// Re-runs `attempt` while it loses optimistic-concurrency races, with jittered backoff so
/// that many writers of one post spread out instead of colliding in lock step.
async fn until_not_stale<T, F, Fut>(attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Attempt>>,
{
    let policy = Backoff::new(Duration::from_millis(2), Duration::from_millis(100)).at_most(60);
    attempt
        .retry(policy.builder())
        .when(|e| matches!(e, Attempt::Stale))
        .await
        .map_err(|e| match e {
            Attempt::Stale => Error::Conflict(
                "the item is being changed by many requests at once; try again".into(),
            ),
            Attempt::Failed(error) => error,
        })
}

/// Lets `caller` go on as the author of `post`. Anyone else is refused: with 403 where they
/// see the post (it is published), else with the 404 its reads answer them, so that a write
/// tells no more than a read of whether an unpublished post exists.
fn author_only(post: &Post, caller: &UserId, refusal: &'static str) -> Result<()> {
    if &post.user_id == caller {
        Ok(())
    } else if post.is_published() {
        Err(Error::Forbidden(refusal))
    } else {
        Err(Error::not_found("post", post.post_id.as_str()))
    }
}

/// A [`Change`]'s `refused` for an item whose id says what it is (a like, derived from the
/// liker; a comment, from an idempotency key): a conflict means it is there already.
fn already_there(cause: &StoreError) -> Result<()> {
    match cause {
        StoreError::Conflict => Ok(()),
        other => Err(other.clone().into()),
    }
}

impl Blog {
    /// The blog on `store`, every read sent to the store, its continuation tokens signed with
    /// a key of this process alone: for the commands that write and the tests, not a server.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with_lists(store, ListCache::none().scoped(""), ServerKey::drawn())
    }

    /// The blog on `store`, keeping its lists' pages in `lists`, its continuation tokens
    /// signed with the server's `key`.
    pub fn with_lists(store: Arc<dyn Store>, lists: BlogLists, key: ServerKey) -> Self {
        Self {
            combiner: Combiner::new(Arc::clone(&store)),
            store,
            lists,
            key,
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    // ---- users -------------------------------------------------------------------------

    /// C1: create or rename the caller's own user.
    pub async fn put_user(
        &self,
        caller: &UserId,
        user_id: UserId,
        username: Username,
    ) -> Result<(User, CreateOutcome)> {
        if caller != &user_id {
            return Err(Error::Forbidden("a user can only be written by itself"));
        }
        let wanted = User::new(user_id.clone(), username);
        let pk = user_partition(&user_id);
        // A create whose answer was lost may have committed; its retry then finds the user
        // as wanted, created by this request (or by the same request sent twice at once).
        let tried_to_create = AtomicBool::new(false);
        until_not_stale(|| async {
            let item = to_item(&wanted)?;
            match self
                .read::<User>(Container::Users, &pk, user_id.as_str())
                .await?
            {
                None => {
                    tried_to_create.store(true, Ordering::Relaxed);
                    match self.store.create_item(Container::Users, &pk, item).await {
                        Ok(_) => Ok((wanted.clone(), CreateOutcome::Created)),
                        Err(StoreError::Conflict) => Err(Attempt::Stale),
                        Err(e) => Err(e.into()),
                    }
                }
                Some((current, _)) if current == wanted => {
                    let outcome = if tried_to_create.load(Ordering::Relaxed) {
                        CreateOutcome::Created
                    } else {
                        CreateOutcome::Existing
                    };
                    Ok((current, outcome))
                }
                Some((_, etag)) => {
                    match self
                        .store
                        .replace_item(Container::Users, &pk, item, Some(&etag))
                        .await
                    {
                        Ok(_) => Ok((wanted.clone(), CreateOutcome::Existing)),
                        Err(StoreError::PreconditionFailed | StoreError::NotFound) => {
                            Err(Attempt::Stale)
                        }
                        Err(e) => Err(e.into()),
                    }
                }
            }
        })
        .await
    }

    /// Q1.
    pub async fn get_user(&self, user_id: &UserId) -> Result<User> {
        self.get_user_as::<User>(user_id).await
    }

    /// Q1 in the form `T`: the user parsed, or as the JSON the API sends.
    pub async fn get_user_as<T: Listed<Item = User>>(&self, user_id: &UserId) -> Result<T> {
        self.read_as::<T>(Container::Users, &user_partition(user_id), user_id.as_str())
            .await?
            .ok_or_else(|| Error::not_found("user", user_id.as_str()))
    }

    /// Q7 (`multi` layout): the tenant's users, a page at a time, in the store's order
    /// (Cosmos DB's is the hash of the keys). Through a tenant's view of the store this is a
    /// query on the first level of the hierarchical key: Cosmos DB routes it to the physical
    /// partitions holding the tenant, not to all of them.
    pub async fn list_users<T: Listed<Item = User>>(
        &self,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let query = Query::cross_partition().of_type(User::TYPE);
        self.page(Container::Users, &query, "users", page).await
    }

    /// The caller's user item: where the username of everything they write comes from.
    async fn registered(&self, caller: &UserId) -> Result<User> {
        self.get_user(caller).await.map_err(|e| match e {
            Error::NotFound { .. } => Error::UnregisteredCaller(caller.to_string()),
            other => other,
        })
    }

    // ---- posts -------------------------------------------------------------------------

    /// C2 (create): the caller is the author and must have a user item.
    pub async fn create_post(
        &self,
        caller: &UserId,
        title: Title,
        content: PostContent,
    ) -> Result<Post> {
        self.create_post_with_key(caller, title, content, Publication::Publish, None)
            .await
    }

    /// [`Blog::create_post`], with the request's `Idempotency-Key` if it has one: then the
    /// post's id comes from the caller and the key, so a repeat finds the post the first
    /// request created (see [`Blog::create_post_once`]).
    pub async fn create_post_with_key(
        &self,
        caller: &UserId,
        title: Title,
        content: PostContent,
        publication: Publication,
        key: Option<&IdempotencyKey>,
    ) -> Result<Post> {
        let post = (title, content, &Tags::default());
        self.create_tagged_post(caller, post, publication, key)
            .await
    }

    /// [`Blog::create_post_with_key`] of a post with its title, content and tags. A schedule
    /// must lie in the future, except for the retry of a request answered before: with a key,
    /// a `publishAt` past by now is checked only once no post of the key answers the retry.
    pub async fn create_tagged_post(
        &self,
        caller: &UserId,
        (title, content, tags): (Title, PostContent, &Tags),
        publication: Publication,
        key: Option<&IdempotencyKey>,
    ) -> Result<Post> {
        let author = self.registered(caller).await?;
        let timely = publication.ahead_of(Timestamp::now());
        let Some(key) = key else {
            let publication = timely?;
            let post =
                Post::with_publication(PostId::generate(), &author, title, content, publication)
                    .tagged(tags);
            let pk = post_partition(&post.post_id);
            let item = to_item(&post)?;
            return match self
                .store
                .create_item(Container::Posts, &pk, item.clone())
                .await
            {
                Ok(_) => Ok(post),
                // The id is new: the post found there is this one, created by an attempt whose
                // answer was lost (the SDK or the store retried it).
                Err(StoreError::Conflict) if self.holds(Container::Posts, &pk, &item).await? => {
                    Ok(post)
                }
                Err(StoreError::Conflict) => {
                    Err(Error::Conflict("a post with this id already exists".into()))
                }
                Err(e) => Err(e.into()),
            };
        };
        let id = PostId::for_key(caller, key);
        let post = Post::with_publication(id, &author, title, content, publication).tagged(tags);
        match timely {
            Ok(_) => self.create_post_once(post).await,
            // Its time has passed since the first request: that request's post answers a
            // retry, and only a request new to the key is refused.
            Err(late) => self.post_of_key(&post).await?.ok_or_else(|| late.into()),
        }
    }

    /// Creates `wanted`, whose id the key derived; when the store already holds that id, the
    /// post there answers (see [`Blog::post_of_key`]).
    async fn create_post_once(&self, wanted: Post) -> Result<Post> {
        let pk = post_partition(&wanted.post_id);
        until_not_stale(|| async {
            let created = self
                .store
                .create_item(Container::Posts, &pk, to_item(&wanted)?)
                .await;
            match created {
                Ok(_) => Ok(wanted.clone()),
                // Gone again (a tombstone's time ran out): the id is free.
                Err(StoreError::Conflict) => self.post_of_key(&wanted).await?.ok_or(Attempt::Stale),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    /// What the store holds at `wanted`'s id, which a key derived, as the answer to a repeat
    /// of the request that made it: the same post (as stored, its counts and username as they
    /// are now, and its publication as it is now: it may have been published since), 422 for
    /// a different title, content or tags, 409 once it was deleted; `None` when it holds
    /// nothing there.
    async fn post_of_key(&self, wanted: &Post) -> Result<Option<Post>> {
        let stored = self
            .store
            .read_item(
                Container::Posts,
                &post_partition(&wanted.post_id),
                wanted.id.as_str(),
            )
            .await?;
        let Some(document) = stored else {
            return Ok(None);
        };
        if is_a::<Tombstone>(&document.item) {
            return Err(Error::KeyPostDeleted);
        }
        let stored: Post = from_item(document.item)?;
        let same = stored.user_id == wanted.user_id
            && stored.title == wanted.title
            && stored.content == wanted.content
            && stored.tags == wanted.tags;
        if same {
            Ok(Some(stored))
        } else {
            Err(Error::KeyReused("post"))
        }
    }

    /// C2 (edit): only the author may edit; the counts are kept as they are, even when
    /// likes and comments arrive during the edit (If-Match, retried). `publication` publishes,
    /// unpublishes or schedules the post; `None` keeps it as it is.
    pub async fn edit_post(
        &self,
        caller: &UserId,
        post_id: &PostId,
        title: Title,
        content: PostContent,
        publication: Option<Publication>,
    ) -> Result<Post> {
        self.edit_tagged_post(caller, post_id, (title, content, None), publication)
            .await
    }

    /// [`Blog::edit_post`], with the post's new tags (`None`: its tags as they are). A
    /// schedule must lie in the future.
    pub async fn edit_tagged_post(
        &self,
        caller: &UserId,
        post_id: &PostId,
        (title, content, tags): (Title, PostContent, Option<&Tags>),
        publication: Option<Publication>,
    ) -> Result<Post> {
        let publication = publication
            .map(|asked| asked.ahead_of(Timestamp::now()))
            .transpose()?;
        let pk = post_partition(post_id);
        until_not_stale(|| async {
            let (mut post, etag) = self.existing_post(post_id).await?;
            author_only(&post, caller, "only the author of a post can edit it")?;
            let publication = publication.unwrap_or_else(|| post.publication());
            let tags =
                tags.map_or_else(|| post.tags.clone(), |tags| post.clone().tagged(tags).tags);
            let text_unchanged = post.title == title.as_str() && post.content == content.as_str();
            if text_unchanged && post.tags == tags && post.publication() == publication {
                return Ok(post);
            }
            let now = Timestamp::now();
            if !text_unchanged || post.tags != tags {
                post.title = title.as_str().to_owned();
                post.content = content.as_str().to_owned();
                post.tags = tags;
                post.modified_date = Some(now);
            }
            post.set_publication(publication, now);
            match self
                .store
                .replace_item(Container::Posts, &pk, to_item(&post)?, Some(&etag))
                .await
            {
                Ok(_) => Ok(post),
                // A race, or this edit's own attempt whose answer was lost: the next attempt
                // finds the post as edited and is done.
                Err(StoreError::PreconditionFailed) => Err(Attempt::Stale),
                Err(StoreError::NotFound) => Err(Error::not_found("post", post_id.as_str()).into()),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    /// Q2: the post with its full content, author username and counts.
    pub async fn get_post(&self, post_id: &PostId) -> Result<Post> {
        self.get_post_as::<Post>(post_id).await
    }

    /// Q2 in the form `T`: the post parsed, or as the JSON the API sends.
    pub async fn get_post_as<T: Listed<Item = Post>>(&self, post_id: &PostId) -> Result<T> {
        self.read_as::<T>(Container::Posts, &post_partition(post_id), post_id.as_str())
            .await?
            .ok_or_else(|| Error::not_found("post", post_id.as_str()))
    }

    /// Whether `caller` likes the post: a point read of their like (its id comes from the
    /// liker) in the post's partition.
    pub async fn has_liked(&self, caller: &UserId, post_id: &PostId) -> Result<bool> {
        let like_id = LikeId::for_liker(caller);
        let like = self
            .read_as::<Like>(Container::Posts, &post_partition(post_id), like_id.as_str())
            .await?;
        Ok(like.is_some())
    }

    async fn existing_post(&self, post_id: &PostId) -> Result<(Post, ETag)> {
        self.read::<Post>(Container::Posts, &post_partition(post_id), post_id.as_str())
            .await?
            .ok_or_else(|| Error::not_found("post", post_id.as_str()))
    }

    /// Q3: the user's published posts in short form, newest published first, from the
    /// copies in the user's own partition of `users`.
    pub async fn user_posts<T: Listed<Item = Post>>(
        &self,
        user_id: &UserId,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let query = published_only(Query::in_partition(user_partition(user_id)))
            .of_type(Post::TYPE)
            .order_by(PUBLISHED_DATE, SortOrder::Descending);
        let list = format!("posts:{user_id}");
        self.user_page(user_id, &query, &list, page).await
    }

    /// A page of `query` in `user_id`'s own partition of `users`. An empty first page is
    /// checked against the user, so that a user who does not exist is a 404 and not an empty
    /// list.
    async fn user_page<T: Listed>(
        &self,
        user_id: &UserId,
        query: &Query,
        list: &str,
        request: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let page = self.page(Container::Users, query, list, request).await?;
        if page.items.is_empty() && request.is_first() {
            self.get_user(user_id).await?;
        }
        Ok(page)
    }

    // ---- comments and likes ------------------------------------------------------------

    /// C3: the comment and the post's new comment count, in one transaction (shared with
    /// the other comments and likes of the post waiting at the same time).
    pub async fn add_comment(
        &self,
        caller: &UserId,
        post_id: &PostId,
        content: CommentContent,
    ) -> Result<Comment> {
        self.add_comment_with_key(caller, post_id, content, None)
            .await
    }

    /// [`Blog::add_comment`], with the request's `Idempotency-Key` if it has one: then the
    /// comment's id comes from the post, the caller and the key, the store refuses a repeat,
    /// and the comment it holds answers it (the same comment, or 422 for another content).
    pub async fn add_comment_with_key(
        &self,
        caller: &UserId,
        post_id: &PostId,
        content: CommentContent,
        key: Option<&IdempotencyKey>,
    ) -> Result<Comment> {
        let id = match key {
            Some(key) => CommentId::for_key(post_id, caller, key),
            None => CommentId::generate(),
        };
        let (comment, applied) = self
            .combiner
            .apply(post_id, async {
                let author = self.registered(caller).await?;
                let comment = Comment::new(id, post_id.clone(), &author, content);
                let change = Change {
                    operation: BatchOperation::Create {
                        item: to_item(&comment)?,
                    },
                    delta: CountDelta::ONE_COMMENT,
                    refused: if key.is_some() {
                        already_there
                    } else {
                        |cause| match cause {
                            StoreError::Conflict => Err(Error::Conflict(
                                "a comment with this id already exists".into(),
                            )),
                            other => Err(other.clone().into()),
                        }
                    },
                    asked_by: Some(caller.clone()),
                };
                Ok((comment, change))
            })
            .await?;
        match applied {
            ChangeOutcome::Written => Ok(comment),
            ChangeOutcome::AlreadyDone(Some(stored)) if key.is_some() => {
                let stored: Comment = from_item(stored)?;
                if stored.user_id == comment.user_id && stored.content == comment.content {
                    Ok(stored)
                } else {
                    Err(Error::KeyReused("comment"))
                }
            }
            ChangeOutcome::AlreadyDone(_) => Err(Error::Internal(
                "a new comment was taken for an existing one".into(),
            )),
        }
    }

    /// C4: like once. A repeated like changes nothing and returns the existing like.
    pub async fn like_post(
        &self,
        caller: &UserId,
        post_id: &PostId,
    ) -> Result<(Like, CreateOutcome)> {
        let (like, applied) = self
            .combiner
            .apply(post_id, async {
                let liker = self.registered(caller).await?;
                let like = Like::new(post_id.clone(), &liker);
                let change = Change {
                    operation: BatchOperation::Create {
                        item: to_item(&like)?,
                    },
                    delta: CountDelta::ONE_LIKE,
                    // The like's id comes from the liker: it exists when they liked before.
                    refused: already_there,
                    asked_by: Some(caller.clone()),
                };
                Ok((like, change))
            })
            .await?;
        match applied {
            ChangeOutcome::Written => Ok((like, CreateOutcome::Created)),
            ChangeOutcome::AlreadyDone(Some(existing)) => {
                Ok((from_item(existing)?, CreateOutcome::Existing))
            }
            ChangeOutcome::AlreadyDone(None) => Err(Error::Internal(
                "an existing like was answered without the like".into(),
            )),
        }
    }

    /// Q6: the most recent posts in short form, newest first, from the `feed` partition.
    pub async fn feed(&self, size: PageSize) -> Result<Vec<Post>> {
        let page = self
            .store
            .query(
                Container::Feed,
                &feed_query(),
                PageRequest::first(size.get()),
            )
            .await?;
        page.items.into_iter().map(from_item).collect()
    }

    // ---- helpers -----------------------------------------------------------------------

    /// The item `id` if it is a `T`. Another kind of item under that id counts as absent:
    /// a tombstone where a deleted post was, or a like asked for as a comment.
    async fn read<T: DeserializeOwned + Typed>(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> Result<Option<(T, ETag)>> {
        match self.store.read_item(container, pk, id).await? {
            Some(Document { item, etag }) if is_a::<T>(&item) => Ok(Some((from_item(item)?, etag))),
            _ => Ok(None),
        }
    }

    /// The item at `id` in the form `T`, from its stored text: no document is built on the
    /// way, and no etag is read. An item of another kind at that id (a tombstone) is none.
    /// Kept like a page of a list (of the item alone, or of none), and handed over again
    /// while the store vouches that its partition is unchanged.
    async fn read_as<T: Listed>(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> Result<Option<T>> {
        // Lists are named `kind:id`; an item's name cannot be one of theirs.
        let key = self
            .lists
            .key::<T>(format_args!("item/{}/{id}", container.name()), 1, None);
        let kept = key.as_ref().and_then(|key| self.lists.get(key));
        if let Some(found) = self.kept_if_unchanged::<T>(kept.as_ref())? {
            return Ok(first_item(found));
        }
        let known = kept.as_ref().map(Kept::version);
        let answer = self.store.read_item_json(container, pk, id, known).await?;
        let found = match self.kept_or_read::<T>(answer, kept, key)? {
            ListRead::Kept(page) => page,
            ListRead::Read(read) => self.keep(read, |page| {
                let item = page
                    .items
                    .first()
                    .map(|stored| T::from_stored_of_kind(stored));
                // The item alone is the answer: no page of it is written.
                Ok(ListPage::new(Page::of_one(item.transpose()?.flatten())))
            })?,
        };
        Ok(first_item(found))
    }

    /// Whether the store holds exactly `item` (at its id, in `pk`): how a write whose answer
    /// was lost is recognised when its retry is refused.
    async fn holds(&self, container: Container, pk: &PartitionKey, item: &Value) -> Result<bool> {
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return Ok(false);
        };
        Ok(self
            .store
            .read_item(container, pk, id)
            .await?
            .is_some_and(|document| &document.item == item))
    }

    /// A page of `list` in the form `T`, the kept one while its partition is unchanged.
    async fn page<T: Listed>(
        &self,
        container: Container,
        query: &Query,
        list: &str,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        match self
            .list_page::<T>(container, query, list, (page, 0))
            .await?
        {
            ListRead::Kept(page) => Ok(page),
            ListRead::Read(read) => self.keep(read, listed_page::<T>),
        }
    }

    /// A page of `list`: the one kept in the form `T` if the store tells or answers that its
    /// partition is unchanged since, else the page as the store reads it now, `extra` items
    /// longer than `size` (items the caller takes out). At most one store request.
    async fn list_page<T: Listed>(
        &self,
        container: Container,
        query: &Query,
        list: &str,
        (page, extra): (ListRequest<'_>, u32),
    ) -> Result<ListRead<T>> {
        let ListRequest { size, continuation } = page;
        let key = self.lists.key::<T>(list, size.get(), continuation);
        let kept = key.as_ref().and_then(|key| self.lists.get(key));
        if let Some(page) = self.kept_if_unchanged::<T>(kept.as_ref())? {
            return Ok(ListRead::Kept(page));
        }
        let request = PageRequest {
            max_items: size.get() + extra,
            continuation: continuation
                .map(|token| decode_continuation(&self.key, list, token))
                .transpose()?,
        };
        let known = kept.as_ref().map(Kept::version);
        let answer = match self
            .store
            .query_json(container, query, request, known)
            .await
        {
            Err(StoreError::BadRequest(_)) if continuation.is_some() => {
                return Err(Error::InvalidContinuation);
            }
            other => other?,
        };
        let answer = match answer {
            JsonPage::Read { page, version } => JsonPage::Read {
                page: Page {
                    items: page.items,
                    continuation: page
                        .continuation
                        .map(|token| encode_continuation(&self.key, list, &token)),
                },
                version,
            },
            unchanged => unchanged,
        };
        self.kept_or_read(answer, kept, key)
    }

    /// The kept page, if the store tells without a request that nothing has changed since it
    /// was read: most reads of a kept page, on a blog read far more than written.
    fn kept_if_unchanged<T: Listed>(&self, kept: Option<&Kept>) -> Result<Option<Listing<T>>> {
        match kept {
            Some(kept) if self.store.holds_unchanged(kept.version()) => kept_as(kept).map(Some),
            _ => Ok(None),
        }
    }

    /// The kept page if the store's `answer` vouches for it (kept again if the store renewed
    /// its version), else the page the store read.
    fn kept_or_read<T: Listed>(
        &self,
        answer: JsonPage,
        kept: Option<Kept>,
        key: Option<ListKey>,
    ) -> Result<ListRead<T>> {
        match answer {
            JsonPage::Unchanged { renewed } => {
                let kept = kept.ok_or_else(|| {
                    Error::Internal("the store vouched for a page not kept".into())
                })?;
                let page = kept_as::<T>(&kept)?;
                if let (Some(key), Some(renewed)) = (key, renewed) {
                    self.lists.renew(key, kept, renewed);
                }
                Ok(ListRead::Kept(page))
            }
            JsonPage::Read { page, version } => Ok(ListRead::Read(ReadPage { page, version, key })),
        }
    }

    /// The page just read, in the form `T` that `list` makes of it, kept if pages are kept
    /// and the store gave its version.
    fn keep<T: Listed>(
        &self,
        read: ReadPage,
        list: impl FnOnce(Page<RawItem>) -> Result<ListPage<T>>,
    ) -> Result<Listing<T>> {
        let ReadPage { page, version, key } = read;
        let keeping = key.zip(version).map(|(key, version)| {
            let stored_bytes = page.items.iter().map(|item| item.get().len()).sum();
            (key, version, stored_bytes)
        });
        let page = Arc::new(list(page)?);
        if let Some((key, version, stored_bytes)) = keeping {
            self.lists
                .keep(key, version, Arc::clone(&page), stored_bytes);
        }
        Ok(page)
    }
}

/// The kept page in the form `T` it is asked in: a list's pages are kept in one form per key,
/// so any other is a fault of the caller's key.
fn kept_as<T: Listed>(kept: &Kept) -> Result<Listing<T>> {
    kept.page::<T>()
        .ok_or_else(|| Error::Internal("a kept page was asked for in another form".into()))
}
