//! The targeted repairs of `verify --repair` and of the delayed re-check: one write (or a few)
//! per violation, each re-reading what it changes and writing with If-Match, or through the
//! change-feed handlers' own write paths where they already do the job (a post's copies, the
//! feed's trim and refill, a username, a delete's clean-up). Every repair is idempotent and
//! safe while the application serves: it writes nothing when it finds the item already right.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::copies::{
    Placement, current_username, delete_children, delete_if_orphan, enlist_tenant, erase_user,
    on_post_changed, place, recount_month, refill_feed, rename_item, scheduled_tenants, trim_feed,
};
use crate::domain::{
    Comment, Deleted, Like, Month, Post, PostId, TenantId, Tombstone, UserId, is_a,
};
use crate::store::{
    Container, Pages, PartitionKey, Query, Store, StoreError, StoreResult, rewrite_item,
};

/// Items per page when a post's comments and likes are counted.
const COUNT_PAGE: u32 = 1_000;

/// The container of a post copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CopyIn {
    Users,
    Feed,
    /// The schedule's partition of `feed`: an entry is a scheduled post's copy.
    Schedule,
}

impl CopyIn {
    pub fn container(self) -> Container {
        match self {
            CopyIn::Users => Container::Users,
            CopyIn::Feed | CopyIn::Schedule => Container::Feed,
        }
    }
}

/// A targeted write that undoes a violation. The variants are in the order repairs are
/// applied: the sources first (deletes finished, usernames, counts), then the copies made from
/// them, then the feed, so that every copy is made from a source already right.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Repair {
    /// Finish an account's erasure: what the user wrote before it goes.
    Erase { user_id: String },
    /// Finish a post's delete: its copies, comments and likes go.
    ClearDeletedPost { post_id: String },
    /// Remove the comments and likes of a post that does not exist.
    DeleteOrphans { post_id: String },
    /// Set an item's `userUsername` to its author's current username.
    Username {
        post_id: String,
        id: String,
        /// The author, whose rename this carries out.
        user_id: String,
    },
    /// Set a post's counts to the number of its comments and likes.
    Recount { post_id: String },
    /// Remove a post copy whose source is not a live post of the partition's user.
    DeleteCopy {
        copy_in: CopyIn,
        partition: String,
        id: String,
    },
    /// Copy the post's short form into `users` and `feed` again (`OnPostChanged` on it).
    Recopy { post_id: String },
    /// Put the post's copies in the views where it belongs now, and take them out of the
    /// `tag` or `month` partition where one was found that does not belong.
    Views {
        post_id: String,
        tag: Option<String>,
        month: Option<String>,
    },
    /// Set a month's count, and the index's, to the copies its partition holds.
    MonthCount { month: String },
    /// Refill the feed to its bound with the most recent posts, and trim what lies past it.
    Feed,
    /// Add the tenant to the publisher's directory of tenants with scheduled posts.
    Enlist { tenant: String },
}

/// What applying a repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairOutcome {
    /// It wrote; what it did.
    Fixed(String),
    /// Nothing to write: the item is right by now (or gone).
    Unchanged,
    /// The store refused for good (not a transient failure); why.
    Failed(String),
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repair::Erase { user_id } => write!(f, "finish the erasure of user {user_id:?}"),
            Repair::ClearDeletedPost { post_id } => {
                write!(f, "finish the delete of post {post_id}")
            }
            Repair::DeleteOrphans { post_id } => {
                write!(f, "remove the comments and likes of missing post {post_id}")
            }
            Repair::Username { post_id, id, .. } => write!(f, "set the username of {post_id}/{id}"),
            Repair::Recount { post_id } => write!(f, "recount post {post_id}"),
            Repair::DeleteCopy {
                copy_in,
                partition,
                id,
            } => write!(
                f,
                "remove the copy {}/{partition}/{id}",
                copy_in.container().name()
            ),
            Repair::Recopy { post_id } => write!(f, "copy post {post_id} again"),
            Repair::Views { post_id, .. } => write!(f, "place post {post_id} in its views"),
            Repair::MonthCount { month } => write!(f, "recount the archive's month {month}"),
            Repair::Feed => f.write_str("refill and trim the feed"),
            Repair::Enlist { tenant } => {
                write!(f, "add tenant {tenant:?} to the publisher's directory")
            }
        }
    }
}

impl Repair {
    /// The repair that must follow this one: a copy taken out of the feed leaves room that
    /// the feed's refill fills.
    pub fn then(&self) -> Option<Repair> {
        match self {
            Repair::DeleteCopy {
                copy_in: CopyIn::Feed,
                ..
            }
            | Repair::ClearDeletedPost { .. }
            | Repair::DeleteOrphans { .. } => Some(Repair::Feed),
            _ => None,
        }
    }

    /// Applies the repair to `store` (a `single` store or one tenant's view). Transient
    /// failures are returned, so the caller retries; refusals for good are an outcome.
    pub async fn apply(&self, store: &Arc<dyn Store>) -> StoreResult<RepairOutcome> {
        let result = match self {
            Repair::Erase { user_id } => erase(store, user_id).await,
            Repair::ClearDeletedPost { post_id } => clear_deleted(store, post_id).await,
            Repair::DeleteOrphans { post_id } => delete_orphans(store, post_id).await,
            Repair::Username { post_id, id, .. } => set_username(store, post_id, id).await,
            Repair::Recount { post_id } => recount(store, post_id).await,
            Repair::DeleteCopy {
                copy_in,
                partition,
                id,
            } => delete_copy(store, copy_in.container(), partition, id).await,
            Repair::Recopy { post_id } => recopy(store, post_id).await,
            Repair::Views {
                post_id,
                tag,
                month,
            } => views(store, post_id, tag.as_deref(), month.as_deref()).await,
            Repair::MonthCount { month } => month_count(store, month).await,
            Repair::Feed => feed(store).await,
            Repair::Enlist { tenant } => enlist(store, tenant).await,
        };
        match result {
            Err(e) if !e.is_transient() => Ok(RepairOutcome::Failed(e.to_string())),
            other => other,
        }
    }
}

fn written(n: usize, what: impl FnOnce(usize) -> String) -> RepairOutcome {
    if n == 0 {
        RepairOutcome::Unchanged
    } else {
        RepairOutcome::Fixed(what(n))
    }
}

fn post_id(raw: &str) -> StoreResult<PostId> {
    PostId::parse(raw).map_err(|e| StoreError::BadRequest(e.to_string()))
}

async fn read(
    store: &Arc<dyn Store>,
    container: Container,
    partition: &str,
    id: &str,
) -> StoreResult<Option<crate::store::Document>> {
    store
        .read_item(container, &PartitionKey::single(partition), id)
        .await
}

async fn erase(store: &Arc<dyn Store>, user_id: &str) -> StoreResult<RepairOutcome> {
    let user = UserId::parse(user_id).map_err(|e| StoreError::BadRequest(e.to_string()))?;
    let marker = read(
        store,
        Container::Users,
        user_id,
        &Tombstone::erasure_id(&user),
    )
    .await?;
    let Some(marker) = marker.and_then(|d| serde_json::from_value::<Tombstone>(d.item).ok()) else {
        return Ok(RepairOutcome::Unchanged);
    };
    let n = erase_user(store, &marker).await?;
    Ok(written(n, |n| {
        format!("{n} items written before the erasure deleted")
    }))
}

/// Finishes a post's delete as `OnPostChanged` does on its tombstone: its copies, comments
/// and likes go, and its place in the feed is refilled in the same write.
async fn clear_deleted(store: &Arc<dyn Store>, raw_post_id: &str) -> StoreResult<RepairOutcome> {
    let Some(current) = read(store, Container::Posts, raw_post_id, raw_post_id).await? else {
        return Ok(RepairOutcome::Unchanged);
    };
    let of_a_post = serde_json::from_value::<Tombstone>(current.item.clone())
        .is_ok_and(|tombstone| tombstone.of == Deleted::Post);
    if !of_a_post {
        return Ok(RepairOutcome::Unchanged);
    }
    handle_again(
        store,
        current.item,
        "copies, comments and likes of the deleted post removed",
    )
    .await
}

async fn delete_orphans(store: &Arc<dyn Store>, raw_post_id: &str) -> StoreResult<RepairOutcome> {
    match read(store, Container::Posts, raw_post_id, raw_post_id).await? {
        None => {
            let n = delete_children(store, &post_id(raw_post_id)?).await?;
            Ok(written(n, |n| {
                format!("{n} orphan comments and likes removed")
            }))
        }
        Some(current) if is_a::<Tombstone>(&current.item) => {
            clear_deleted(store, raw_post_id).await
        }
        // The post exists (now): its children are not orphans.
        Some(_) => Ok(RepairOutcome::Unchanged),
    }
}

async fn set_username(
    store: &Arc<dyn Store>,
    post_id: &str,
    id: &str,
) -> StoreResult<RepairOutcome> {
    let Some(current) = read(store, Container::Posts, post_id, id).await? else {
        return Ok(RepairOutcome::Unchanged);
    };
    let Some(user_id) = current.item.get("userId").and_then(Value::as_str) else {
        return Ok(RepairOutcome::Unchanged);
    };
    let Some(username) = current_username(store, user_id).await? else {
        return Ok(RepairOutcome::Failed(format!(
            "user {user_id:?} has no user item"
        )));
    };
    let n = rename_item(&**store, current.item, &username).await?;
    Ok(written(n, |_| format!("userUsername set to {username:?}")))
}

/// The comments and likes of a post's partition: how many of each, and those whose id is in
/// `keep`, as they are now.
pub(crate) struct Children {
    pub comments: u64,
    pub likes: u64,
    pub kept: Vec<Value>,
}

/// Counts the comments and likes in a post's partition, keeping those of `keep` on the way.
pub(crate) async fn count_children(
    store: &Arc<dyn Store>,
    post_id: &str,
    keep: &HashSet<String>,
) -> StoreResult<Children> {
    let query =
        Query::in_partition(PartitionKey::single(post_id)).of_types(&[Comment::TYPE, Like::TYPE]);
    let mut children = Children {
        comments: 0,
        likes: 0,
        kept: Vec::new(),
    };
    let mut pages = Pages::new(&**store, Container::Posts, &query, COUNT_PAGE);
    while let Some(items) = pages.next().await? {
        for item in items {
            if is_a::<Like>(&item) {
                children.likes += 1;
            } else {
                children.comments += 1;
            }
            if item
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| keep.contains(id))
            {
                children.kept.push(item);
            }
        }
    }
    Ok(children)
}

/// Sets a post's counts to its comments and likes, with If-Match on the post read before the
/// count: a comment or like added meanwhile changes the post (its count goes up in the same
/// transaction), so the write fails and the count is taken again; no concurrent change is
/// lost. (This is the only count write outside the API's comment and like transactions.)
async fn recount(store: &Arc<dyn Store>, post_id: &str) -> StoreResult<RepairOutcome> {
    let pk = PartitionKey::single(post_id);
    let recounted = rewrite_item(
        &**store,
        Container::Posts,
        &pk,
        post_id,
        |mut item| async move {
            if !is_a::<Post>(&item) {
                return Ok(None);
            }
            let Children {
                comments, likes, ..
            } = count_children(store, post_id, &HashSet::new()).await?;
            let count = |field: &str| item.get(field).and_then(Value::as_u64);
            let before = (count("commentCount"), count("likeCount"));
            if before == (Some(comments), Some(likes)) {
                return Ok(None);
            }
            item["commentCount"] = Value::from(comments);
            item["likeCount"] = Value::from(likes);
            let said = format!(
                "counts set to {comments} comments and {likes} likes (were {} and {})",
                before.0.unwrap_or_default(),
                before.1.unwrap_or_default()
            );
            Ok(Some((item, said)))
        },
    )
    .await?;
    Ok(recounted.map_or(RepairOutcome::Unchanged, RepairOutcome::Fixed))
}

async fn delete_copy(
    store: &Arc<dyn Store>,
    container: Container,
    partition: &str,
    id: &str,
) -> StoreResult<RepairOutcome> {
    let Some(copy) = read(store, container, partition, id).await? else {
        return Ok(RepairOutcome::Unchanged);
    };
    let n = delete_if_orphan(&**store, container, &copy.item).await?;
    Ok(written(n, |_| "removed".to_owned()))
}

async fn recopy(store: &Arc<dyn Store>, post_id: &str) -> StoreResult<RepairOutcome> {
    let Some(current) = read(store, Container::Posts, post_id, post_id).await? else {
        return Ok(RepairOutcome::Unchanged);
    };
    if !is_a::<Post>(&current.item) {
        return Ok(RepairOutcome::Unchanged);
    }
    handle_again(store, current.item, "copies written again").await
}

/// Runs `OnPostChanged` on `item` (a post or its tombstone) as if the change feed delivered it.
async fn handle_again(
    store: &Arc<dyn Store>,
    item: Value,
    what: &str,
) -> StoreResult<RepairOutcome> {
    let report = on_post_changed(store, &[item]).await?;
    if !report.skipped.is_empty() {
        return Ok(RepairOutcome::Failed(report.skipped.join("; ")));
    }
    Ok(written(report.written, |n| format!("{what} ({n} writes)")))
}

async fn feed(store: &Arc<dyn Store>) -> StoreResult<RepairOutcome> {
    let mut refilled = refill_feed(store).await?;
    refilled.merge(trim_feed(store).await?);
    if !refilled.skipped.is_empty() {
        return Ok(RepairOutcome::Failed(refilled.skipped.join("; ")));
    }
    Ok(written(refilled.written, |n| {
        format!("{n} posts added or trimmed")
    }))
}

/// The directory lives in `leases`, which no tenant's view scopes: `store` may be one.
async fn enlist(store: &Arc<dyn Store>, tenant: &str) -> StoreResult<RepairOutcome> {
    let tenant = TenantId::parse(tenant).map_err(|e| StoreError::BadRequest(e.to_string()))?;
    if scheduled_tenants(&**store).await?.contains(&tenant) {
        return Ok(RepairOutcome::Unchanged);
    }
    enlist_tenant(&**store, &tenant).await?;
    Ok(RepairOutcome::Fixed("added to the directory".to_owned()))
}

async fn views(
    store: &Arc<dyn Store>,
    raw_post_id: &str,
    tag: Option<&str>,
    month: Option<&str>,
) -> StoreResult<RepairOutcome> {
    let post_id = post_id(raw_post_id)?;
    let now = store
        .read_item(
            Container::Posts,
            &PartitionKey::single(raw_post_id),
            raw_post_id,
        )
        .await?
        .filter(|document| is_a::<Post>(&document.item))
        .and_then(|document| serde_json::from_value::<Post>(document.item).ok())
        .map(|post| post.short());
    let before = Placement {
        tags: tag.map(str::to_owned).into_iter().collect(),
        month: month.and_then(Month::from_key),
    };
    let n = place(store, &post_id, now.as_ref(), &before).await?;
    Ok(written(n, |n| {
        format!("wrote {n} items of the views of post {raw_post_id}")
    }))
}

async fn month_count(store: &Arc<dyn Store>, raw_month: &str) -> StoreResult<RepairOutcome> {
    let Some(month) = Month::from_key(raw_month) else {
        return Ok(RepairOutcome::Failed(format!(
            "{raw_month:?} is not a month"
        )));
    };
    let n = recount_month(store, &month).await?;
    Ok(written(n, |_| format!("recounted the month {raw_month}")))
}
