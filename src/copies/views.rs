//! The views beside the case study's copies: each published post's short copy in the
//! partition of each of its tags (`tags`, Q8) and in the partition of the month it was
//! published (`archive`, Q9), with each month's count of posts and the archive's index of
//! months. `OnPostChanged` places a post's copies from its current version; a deleted post's
//! are removed with it.
//!
//! Where a post's copies are is read from its author's copy in `users`: the tags and month it
//! had when last copied. So no copy may exist where that copy does not name it, even when a
//! handler stops halfway and the post changes again before its batch is delivered again (the
//! change feed then delivers only the latest version, and the version that was half handled
//! is forgotten). A post's views therefore move in two [`Move`]s around the author copy's
//! write: the copies it leaves go first, while the old author copy still names them; the
//! copies it arrives in come after, once the new author copy names them. Every step compares
//! before it writes, so a repeated batch writes nothing.
//!
//! A month's count lives in the month's partition and changes in the same transactional batch
//! as the copy it counts (a create of a copy not there, or a delete of one that is, with the
//! count replaced under If-Match), so a repeated, late or failed batch cannot count a post
//! twice or lose it. The index partition holds a copy of each month's count, replaced only by
//! a newer revision: handlers racing on one month leave the index at the last count.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, stream};
use serde_json::Value;

use super::shared::{HANDLER_CONCURRENCY, to_value};
use crate::blog::{archive_index_partition, month_partition, published_on, tag_partition};
use crate::domain::{Month, MonthCount, Post, PostId, is_a};
use crate::retry::Backoff;
use crate::store::{
    BatchOperation, Container, Document, ETag, MAX_BATCH_OPERATIONS, Pages, PartitionKey, Query,
    Store, StoreError, StoreResult,
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

/// One post's copy wanted in one partition of a view: its id and the copy (`None`: none).
type Wanted = (PostId, Option<Value>);

/// Which half of moving a post's views to write: the two sides of the author copy's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    /// Removes the copies from where they were and the post no longer belongs.
    Leave,
    /// Writes the copies where the post belongs (new ones, and those that changed).
    Arrive,
}

impl Move {
    /// The tags whose partitions this move writes.
    fn tags<'a>(self, now: &'a Placement, before: &'a Placement) -> Vec<&'a String> {
        match self {
            Move::Leave => before.tags.difference(&now.tags).collect(),
            Move::Arrive => now.tags.iter().collect(),
        }
    }

    /// The month whose partition this move writes, if any.
    fn month(self, now: &Placement, before: &Placement) -> Option<Month> {
        match self {
            Move::Leave => before.month.filter(|month| now.month != Some(*month)),
            Move::Arrive => now.month,
        }
    }
}

/// Makes one [`Move`] of the views of each post: `posts` holds each post's id, its current
/// short form (`None`: deleted) and where its copies may be from before. The copies are
/// gathered by the partition they live in, and each partition is written as transactional
/// batches (a month's with its count), so a batch of posts costs a write per tag and per
/// month rather than one per copy. Returns the items written.
pub(crate) async fn move_posts(
    store: &Arc<dyn Store>,
    posts: &[(PostId, Option<Post>, Placement)],
    step: Move,
) -> StoreResult<usize> {
    let mut by_tag: BTreeMap<String, Vec<Wanted>> = BTreeMap::new();
    let mut by_month: BTreeMap<Month, Vec<Wanted>> = BTreeMap::new();
    for (id, now, before) in posts {
        let wanted = now.as_ref().map(Placement::of).unwrap_or_default();
        // Leaving, the copy goes; arriving, the post is there (where it belongs now).
        let arriving = now.as_ref().filter(|_| step == Move::Arrive);
        for tag in step.tags(&wanted, before) {
            let want = arriving.map(|short| tag_copy(short, tag)).transpose()?;
            by_tag
                .entry(tag.clone())
                .or_default()
                .push((id.clone(), want));
        }
        if let Some(month) = step.month(&wanted, before) {
            let want = arriving
                .map(|short| archive_copy(short, &month))
                .transpose()?;
            by_month.entry(month).or_default().push((id.clone(), want));
        }
    }
    let tags = stream::iter(by_tag)
        .map(|(tag, wanted)| async move {
            let (written, _) = set_copies(store, ViewPartition::Tag(&tag), &wanted).await?;
            Ok(written)
        })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect::<Vec<_>>();
    let months = stream::iter(by_month)
        .map(|(month, wanted)| async move { set_archive_copies(store, &month, wanted).await })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect::<Vec<_>>();
    let (tags, months) = futures::join!(tags, months);
    tags.into_iter().chain(months).sum()
}

/// Puts one post's views in step with `now` (its short form; `None` once deleted), looking
/// also where `before` says its copies may be: both moves, for the writers that keep no
/// author copy in between (a repair, a deleted post's clean-up before its author copy goes).
pub(crate) async fn place(
    store: &Arc<dyn Store>,
    post_id: &PostId,
    now: Option<&Post>,
    before: &Placement,
) -> StoreResult<usize> {
    let posts = [(post_id.clone(), now.cloned(), before.clone())];
    let left = move_posts(store, &posts, Move::Leave).await?;
    Ok(left + move_posts(store, &posts, Move::Arrive).await?)
}

/// The copies a partition of `container` holds of `wanted`'s posts, by post id: one point
/// read each, side by side.
async fn stored_copies(
    store: &Arc<dyn Store>,
    container: Container,
    pk: &PartitionKey,
    wanted: &[Wanted],
) -> StoreResult<HashMap<PostId, Document>> {
    let ids: Vec<PostId> = wanted.iter().map(|(id, _)| id.clone()).collect();
    let read: Vec<StoreResult<Option<(PostId, Document)>>> = stream::iter(ids)
        .map(|id| {
            let pk = pk.clone();
            async move {
                let found = store.read_item(container, &pk, id.as_str()).await?;
                Ok(found.map(|document| (id, document)))
            }
        })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    read.into_iter().filter_map(Result::transpose).collect()
}

/// The operation that makes `stored` (a post's copy as the partition holds it) what `want`
/// says, and how it moves the partition's count of copies; `None` when it already is.
fn copy_operation(
    id: &PostId,
    stored: Option<&Document>,
    want: &Option<Value>,
) -> Option<(BatchOperation, i64)> {
    match (stored, want) {
        (Some(found), Some(want)) if &found.item == want => None,
        // The same post, changed: no count moves. If-Match, so that a delete of the copy in
        // between (a handler unpublishing it) is not undone without its count.
        (Some(found), Some(item)) => Some((
            BatchOperation::Replace {
                item: item.clone(),
                if_match: Some(found.etag.clone()),
            },
            0,
        )),
        (None, Some(item)) => Some((BatchOperation::Create { item: item.clone() }, 1)),
        (Some(_), None) => {
            let delete = BatchOperation::Delete {
                id: id.to_string(),
                if_match: None,
            };
            Some((delete, -1))
        }
        (None, None) => None,
    }
}

/// A partition of the views: a tag's in `tags`, or a month's in `archive`, which counts its
/// copies.
#[derive(Clone, Copy)]
enum ViewPartition<'a> {
    Tag(&'a str),
    Month(&'a Month),
}

/// Makes the view's partition hold each wanted copy (or none), in batches; in a month's, copies
/// that come or go change its count in the same batch. Returns the items written and the last
/// count written.
async fn set_copies(
    store: &Arc<dyn Store>,
    view: ViewPartition<'_>,
    wanted: &[Wanted],
) -> StoreResult<(usize, Option<MonthCount>)> {
    let (container, pk, counted) = match view {
        ViewPartition::Tag(tag) => (Container::Tags, tag_partition(tag), None),
        ViewPartition::Month(month) => (Container::Archive, month_partition(month), Some(month)),
    };
    // One place in each batch of a month is kept for the count.
    let batch_size = MAX_BATCH_OPERATIONS - usize::from(counted.is_some());
    let mut written = 0;
    let mut last_count = None;
    for chunk in wanted.chunks(batch_size) {
        let (n, count) = write_chunk(store, container, &pk, chunk, counted).await?;
        written += n;
        last_count = count.or(last_count);
    }
    Ok((written, last_count))
}

/// Makes the month's partition hold each wanted copy (or none), in batches that change the
/// month's count with the copies that come or go, and then the index.
///
/// The index is brought to the month's count even when this call moved no count: an earlier
/// delivery of the same batch may have committed the copies and the count and stopped before
/// the index, and a delivery that finds the copies in place is the only one that comes.
pub(crate) async fn set_archive_copies(
    store: &Arc<dyn Store>,
    month: &Month,
    wanted: Vec<Wanted>,
) -> StoreResult<usize> {
    let view = ViewPartition::Month(month);
    let (mut written, last_count) = set_copies(store, view, &wanted).await?;
    let count = match last_count {
        Some(counted) => Some(counted),
        None => match read_count(store, month).await? {
            (held, Some(_)) => Some(held),
            (_, None) => None,
        },
    };
    if let Some(count) = count {
        written += sync_index(store, &count).await?;
    }
    Ok(written)
}

/// Writes one batch's worth of wanted copies to one partition: reads what it holds, writes
/// what differs as one transactional batch (with the month's count replaced under If-Match
/// when `counted` names the month and copies come or go), and reads and tries again when
/// another writer came first. Returns the items written and the count written, if any.
async fn write_chunk(
    store: &Arc<dyn Store>,
    container: Container,
    pk: &PartitionKey,
    chunk: &[Wanted],
    counted: Option<&Month>,
) -> StoreResult<(usize, Option<MonthCount>)> {
    let mut delays = Backoff::new(Duration::from_millis(2), Duration::from_millis(100)).delays();
    for _ in 0..MAX_COUNT_ATTEMPTS {
        let stored = stored_copies(store, container, pk, chunk).await?;
        let mut operations = Vec::new();
        let mut delta = 0;
        for (id, want) in chunk {
            if let Some((operation, moves)) = copy_operation(id, stored.get(id), want) {
                operations.push(operation);
                delta += moves;
            }
        }
        if operations.is_empty() {
            return Ok((0, None));
        }
        let mut count = None;
        if let Some(month) = counted.filter(|_| delta != 0) {
            let (held, etag) = read_count(store, month).await?;
            let post_count = held.post_count.saturating_add_signed(delta);
            let new = MonthCount::new(month, post_count, held.revision + 1);
            operations.push(count_write(&new, etag)?);
            count = Some(new);
        }
        let written = operations.len();
        match store.execute_batch(container, pk, operations).await {
            Ok(_) => return Ok((written, count)),
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
