//! The views beside the case study's copies: each published post's short copy in the
//! partition of each of its tags (`tags`, Q8) and in the partition of the month it was
//! published (`archive`, Q9), with each month's count of posts and the archive's index of
//! months. `OnPostChanged` places a post's copies from its current version; a deleted post's
//! are removed with it.
//!
//! Where a post's copies were is read from its author's copy in `users` before that copy is
//! rewritten: the tags and month it had when last copied. The views are written first, so a
//! batch that fails after them still finds the old author copy when it is delivered again.
//! Every step compares before it writes, so a repeated batch writes nothing.
//!
//! A month's count lives in the month's partition and changes in the same transactional batch
//! as the copy it counts (a create of a copy not there, or a delete of one that is, with the
//! count replaced under If-Match), so a repeated, late or failed batch cannot count a post
//! twice or lose it. The index partition holds a copy of each month's count, replaced only by
//! a newer revision: handlers racing on one month leave the index at the last count.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, stream};
use serde_json::Value;

use super::shared::{HANDLER_CONCURRENCY, to_value};
use crate::blog::{archive_index_partition, month_partition, published_on, tag_partition};
use crate::domain::{Month, MonthCount, Post, PostId, is_a};
use crate::retry::Backoff;
use crate::store::{
    BatchOperation, Container, Document, ETag, Pages, Query, Store, StoreError, StoreResult,
};

/// Attempts at one month's count before the batch is failed (and delivered again).
const MAX_COUNT_ATTEMPTS: usize = 60;

/// Where a post's copies belong in the views (nowhere, unless it is published).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Placement {
    pub tags: BTreeSet<String>,
    pub month: Option<Month>,
}

impl Placement {
    /// Where `post`, as it is now, belongs.
    pub(crate) fn of(post: &Post) -> Self {
        match published_on(post) {
            Some(date) => Self {
                tags: post.tags.iter().cloned().collect(),
                month: Some(Month::of(&date)),
            },
            None => Self::default(),
        }
    }

    /// Where the copies of a post may be, from its author copy as stored (`users`): every tag
    /// it carried and its month, whatever its state then.
    pub(crate) fn remembered(author_copy: Option<&Value>) -> Self {
        let Some(copy) =
            author_copy.and_then(|item| serde_json::from_value::<Post>(item.clone()).ok())
        else {
            return Self::default();
        };
        Self {
            tags: copy.tags.iter().cloned().collect(),
            month: published_on(&copy).map(|date| Month::of(&date)),
        }
    }
}

/// A post's copy in a view: its short form with its `publishedDate` written out (a post
/// stored before posts had a status carries none, and the views order by it).
fn view_copy(short: &Post) -> StoreResult<Value> {
    let mut item = to_value(short)?;
    if let Some(published) = published_on(short) {
        item["publishedDate"] = Value::from(published.to_string());
    }
    Ok(item)
}

/// A post's copy in a tag's partition: its short form and the tag.
pub(crate) fn tag_copy(short: &Post, tag: &str) -> StoreResult<Value> {
    let mut item = view_copy(short)?;
    item["tag"] = Value::from(tag);
    Ok(item)
}

/// A post's copy in its month's partition: its short form and the month.
pub(crate) fn archive_copy(short: &Post, month: &Month) -> StoreResult<Value> {
    let mut item = view_copy(short)?;
    item["month"] = Value::from(month.key());
    Ok(item)
}

/// Puts the views of each post in step: `posts` holds each post's id, its current short form
/// (`None`: deleted) and where its copies may be from before. Returns the items written.
pub(crate) async fn place_posts(
    store: &Arc<dyn Store>,
    posts: Vec<(PostId, Option<Post>, Placement)>,
) -> StoreResult<usize> {
    let written: Vec<StoreResult<usize>> = stream::iter(posts)
        .map(|(id, now, before)| async move { place(store, &id, now.as_ref(), &before).await })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    written.into_iter().sum()
}

/// Puts one post's views in step with `now` (its short form; `None` once deleted), looking
/// also where `before` says its copies may be.
pub(crate) async fn place(
    store: &Arc<dyn Store>,
    post_id: &PostId,
    now: Option<&Post>,
    before: &Placement,
) -> StoreResult<usize> {
    let wanted = now.map(Placement::of).unwrap_or_default();
    let mut written = 0;
    for tag in wanted.tags.union(&before.tags) {
        let want = match now {
            Some(short) if wanted.tags.contains(tag) => Some(tag_copy(short, tag)?),
            _ => None,
        };
        written += set_tag_copy(store, tag, post_id, want).await?;
    }
    let months: BTreeSet<Month> = wanted.month.iter().chain(&before.month).copied().collect();
    for month in months {
        let want = match now {
            Some(short) if wanted.month == Some(month) => Some(archive_copy(short, &month)?),
            _ => None,
        };
        written += set_archive_copy(store, &month, post_id, want).await?;
    }
    Ok(written)
}

/// Makes the tag's partition hold `want` as the post's copy (or none).
async fn set_tag_copy(
    store: &Arc<dyn Store>,
    tag: &str,
    post_id: &PostId,
    want: Option<Value>,
) -> StoreResult<usize> {
    let pk = tag_partition(tag);
    let existing = store
        .read_item(Container::Tags, &pk, post_id.as_str())
        .await?;
    match (existing, want) {
        (Some(found), Some(want)) if found.item == want => Ok(0),
        (_, Some(want)) => {
            store.upsert_item(Container::Tags, &pk, want).await?;
            Ok(1)
        }
        (None, None) => Ok(0),
        (Some(_), None) => match store
            .delete_item(Container::Tags, &pk, post_id.as_str())
            .await
        {
            Ok(()) => Ok(1),
            Err(StoreError::NotFound) => Ok(0),
            Err(e) => Err(e),
        },
    }
}

/// Makes the month's partition hold `want` as the post's copy (or none); a copy that comes or
/// goes changes the month's count in the same batch, and then the index.
pub(crate) async fn set_archive_copy(
    store: &Arc<dyn Store>,
    month: &Month,
    post_id: &PostId,
    want: Option<Value>,
) -> StoreResult<usize> {
    let pk = month_partition(month);
    let mut delays = Backoff::new(Duration::from_millis(2), Duration::from_millis(100)).delays();
    for _ in 0..MAX_COUNT_ATTEMPTS {
        let existing = store
            .read_item(Container::Archive, &pk, post_id.as_str())
            .await?;
        let copy_op = match (&existing, want.clone()) {
            (Some(found), Some(want)) if found.item == want => return Ok(0),
            // The same post, changed: no count moves. If-Match, so that a delete of the copy
            // in between (a handler unpublishing it) is not undone without its count.
            (Some(found), Some(item)) => {
                match store
                    .replace_item(Container::Archive, &pk, item, Some(&found.etag))
                    .await
                {
                    Ok(_) => return Ok(1),
                    Err(e) if is_race(&e) => continue,
                    Err(e) => return Err(e),
                }
            }
            (None, None) => return Ok(0),
            (None, Some(item)) => BatchOperation::Create { item },
            (Some(_), None) => BatchOperation::Delete {
                id: post_id.to_string(),
            },
        };
        let (count, etag) = read_count(store, month).await?;
        let post_count = if want.is_some() {
            count.post_count + 1
        } else {
            count.post_count.saturating_sub(1)
        };
        let counted = MonthCount::new(month, post_count, count.revision + 1);
        let count_op = count_write(&counted, etag)?;
        match store
            .execute_batch(Container::Archive, &pk, vec![copy_op, count_op])
            .await
        {
            Ok(_) => return Ok(2 + sync_index(store, &counted).await?),
            Err(StoreError::BatchOperationFailed { cause, .. }) if is_race(&cause) => {}
            Err(e) => return Err(e),
        }
        tokio::time::sleep(delays.next().unwrap_or(Duration::from_millis(100))).await;
    }
    Err(StoreError::PreconditionFailed)
}

/// Another writer came first: read again and retry.
fn is_race(cause: &StoreError) -> bool {
    matches!(
        cause,
        StoreError::Conflict | StoreError::PreconditionFailed | StoreError::NotFound
    )
}

/// The month's count as its partition holds it, with its etag (`None`: no count yet, zero).
async fn read_count(
    store: &Arc<dyn Store>,
    month: &Month,
) -> StoreResult<(MonthCount, Option<ETag>)> {
    let found = store
        .read_item(
            Container::Archive,
            &month_partition(month),
            &MonthCount::id_of(month),
        )
        .await?;
    Ok(match found {
        Some(Document { item, etag }) if is_a::<MonthCount>(&item) => {
            match serde_json::from_value::<MonthCount>(item) {
                Ok(count) => (count, Some(etag)),
                Err(_) => (MonthCount::new(month, 0, 0), Some(etag)),
            }
        }
        _ => (MonthCount::new(month, 0, 0), None),
    })
}

/// The write of a count over the one read with `etag` (a create where there was none).
fn count_write(count: &MonthCount, etag: Option<ETag>) -> StoreResult<BatchOperation> {
    let item = serde_json::to_value(count).map_err(|e| StoreError::Internal(e.to_string()))?;
    Ok(match etag {
        Some(etag) => BatchOperation::Replace {
            item,
            if_match: Some(etag),
        },
        None => BatchOperation::Create { item },
    })
}

/// Copies `count` into the archive's index unless the index holds it or a newer revision.
pub(crate) async fn sync_index(store: &Arc<dyn Store>, count: &MonthCount) -> StoreResult<usize> {
    let pk = archive_index_partition();
    let wanted = count.in_index();
    let item = serde_json::to_value(&wanted).map_err(|e| StoreError::Internal(e.to_string()))?;
    for _ in 0..MAX_COUNT_ATTEMPTS {
        let found = store.read_item(Container::Archive, &pk, &wanted.id).await?;
        let write = match &found {
            Some(Document { item: stored, .. }) if stored == &item => return Ok(0),
            Some(Document { item: stored, etag }) => {
                let revision = stored.get("revision").and_then(Value::as_u64);
                if revision.is_some_and(|revision| revision > wanted.revision) {
                    return Ok(0);
                }
                store
                    .replace_item(Container::Archive, &pk, item.clone(), Some(etag))
                    .await
            }
            None => {
                store
                    .create_item(Container::Archive, &pk, item.clone())
                    .await
            }
        };
        match write {
            Ok(_) => return Ok(1),
            Err(e) if is_race(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::PreconditionFailed)
}

/// Sets the month's count to the number of copies its partition holds, and the index to it:
/// what `rebuild` and the repairs of `verify` do with a count that drifted (an item written
/// by hand, a restore). Returns the items written.
pub(crate) async fn recount_month(store: &Arc<dyn Store>, month: &Month) -> StoreResult<usize> {
    for _ in 0..MAX_COUNT_ATTEMPTS {
        let held = copies_in_month(store, month).await?;
        let (count, etag) = read_count(store, month).await?;
        if count.post_count == held && etag.is_some() {
            return sync_index(store, &count).await;
        }
        let counted = MonthCount::new(month, held, count.revision + 1);
        let item =
            serde_json::to_value(&counted).map_err(|e| StoreError::Internal(e.to_string()))?;
        let pk = month_partition(month);
        let written = match etag {
            Some(etag) => {
                store
                    .replace_item(Container::Archive, &pk, item, Some(&etag))
                    .await
            }
            None => store.create_item(Container::Archive, &pk, item).await,
        };
        match written {
            Ok(_) => return Ok(1 + sync_index(store, &counted).await?),
            Err(e) if is_race(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::PreconditionFailed)
}

/// How many post copies the month's partition holds (a query of that partition alone).
pub(crate) async fn copies_in_month(store: &Arc<dyn Store>, month: &Month) -> StoreResult<u64> {
    let query = Query::in_partition(month_partition(month)).of_type(Post::TYPE);
    let mut pages = Pages::new(&**store, Container::Archive, &query, 1_000);
    let mut held = 0;
    while let Some(items) = pages.next().await? {
        held += items.len() as u64;
    }
    Ok(held)
}

/// Removes the copies of `container` (`tags` or `archive`) that their post no longer places
/// there (deleted, unpublished, untagged, moved to another month) and copies again those that
/// differ from it: one point read of each copy's post. Returns the items written.
pub(crate) async fn sweep_view_copy(
    store: &Arc<dyn Store>,
    container: Container,
    copy: &Value,
) -> StoreResult<usize> {
    let Some(post_id) = copy
        .get("postId")
        .and_then(Value::as_str)
        .and_then(|id| PostId::parse(id).ok())
    else {
        return Ok(0);
    };
    let source = store
        .read_item(
            Container::Posts,
            &crate::store::PartitionKey::single(post_id.as_str()),
            post_id.as_str(),
        )
        .await?
        .filter(|document| is_a::<Post>(&document.item))
        .and_then(|document| serde_json::from_value::<Post>(document.item).ok())
        .map(|post| post.short());
    let field = |name: &str| copy.get(name).and_then(Value::as_str).map(str::to_owned);
    let before = match container {
        Container::Tags => Placement {
            tags: field("tag").into_iter().collect(),
            month: None,
        },
        _ => Placement {
            tags: BTreeSet::new(),
            month: field("month").as_deref().and_then(Month::from_key),
        },
    };
    place(store, &post_id, source.as_ref(), &before).await
}

/// The months an archive item names (a copy's or a count's), for the recounts of `rebuild`.
pub(crate) fn month_of_archive_item(item: &Value) -> Option<Month> {
    let key = item
        .get("of")
        .or_else(|| item.get("month"))
        .and_then(Value::as_str)?;
    Month::from_key(key)
}
