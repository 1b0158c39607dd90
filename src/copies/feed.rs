//! The feed's rules as the handlers keep them: a batch's posts are placed in the window of
//! the most recent posts, the posts that leave it are replaced by the next most recent ones
//! (the refill), and what lies past the bound goes. The bound ([`FEED_SIZE`]) and the feed's
//! query live with the reading side, in `blog::feed`.
//!
//! **Why the feed converges.** Each write is decided on a snapshot of the feed's newest
//! [`FEED_SIZE`] copies and is one transactional batch of the feed's partition. Three rules
//! make the snapshots and the refill's query of `users` agree with what the others write:
//!
//! 1. *A post older than the oldest of a full window enters only through the refill.* It is
//!    not among the most recent posts unless posts leave the window, and then only if no
//!    post newer than it is left out; only the refill, which reads the newest copies of
//!    `users` in order, knows. (Admitting it because posts of the same batch had just left
//!    made room let it in ahead of newer posts past the bound: an old post in the feed and a
//!    newer one missing, for good.)
//! 2. *A write that changes which posts the feed holds is fenced by the window's oldest copy*
//!    (its floor): it replaces or deletes that copy with `If-Match` on the etag read before
//!    the snapshot (see [`Snapshot::fenced`]). Handlers side by side (Functions instances on
//!    other leases) decide on the same snapshot only until one of them writes: that write
//!    changes the floor's etag, so every other write decided on that snapshot fails and is
//!    decided again on the feed as it is now. A post that arrives is a `Create` and a copy
//!    that changes a `Replace`, so no write brings back a copy that another one removed.
//! 3. *The author copies of a batch are written before its feed is decided, and a refill
//!    checks what it took from `users` once its write is in.* A refill that read `users`
//!    before another handler removed or changed an author copy either meets that change when
//!    it reads the copies it took again, or wrote before that handler read the feed, which
//!    then removes or corrects the copy itself.
//!
//! A write that removes a post and the posts that take its place is one batch, so a delivery
//! that stops halfway leaves the feed as it was or complete. The refill costs one
//! cross-partition query of the most recent post copies in `users` (on Cosmos DB it fans out
//! to every physical partition of `users`: the one read of the platform that does, and only
//! after a post of the feed was deleted or unpublished) and a point read of `users` per post
//! it adds. A write that changes which posts the feed holds costs a point read of the floor
//! and the window's query once more.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::{StreamExt, stream};
use serde_json::Value;

use super::shared::{HANDLER_CONCURRENCY, Report, to_value};
use crate::blog::{
    FEED_SIZE, PUBLISHED_DATE, feed_partition, feed_query, newest_feed_copies, published_only,
};
use crate::domain::{Post, PostId};
use crate::store::{
    BatchOperation, Container, ETag, MAX_BATCH_OPERATIONS, PageRequest, PartitionKey, Query,
    SortOrder, Store, StoreError, StoreResult,
};

/// What the feed follows of one batch, once the batch's author copies are written.
#[derive(Debug, Clone)]
pub(super) enum FeedChange {
    /// A deleted post (its author copy is gone).
    Gone(PostId),
    /// A post's current short copy, published or not, and whether `users` listed it as
    /// published before the batch wrote it: a refill that read `users` before then missed it.
    Copy { copy: Box<Post>, was_listed: bool },
}

/// Copies past the bound that one write deletes (more go with the next).
const BEYOND_PER_WRITE: u32 = 99;
/// Writes that may lose a race with other handlers, or be decided again after a refill read
/// an author copy that changed, before the batch fails (it is delivered again).
const MAX_ATTEMPTS: usize = 20;

/// Brings the feed in line with `changes`.
pub(super) async fn keep_feed(
    store: &Arc<dyn Store>,
    changes: &[FeedChange],
) -> StoreResult<Report> {
    follow(store, Inputs::of(changes)).await
}

/// Deletes what lies beyond the feed's bound (for the repairs of `verify`; the handlers trim
/// as they write).
pub(crate) async fn trim_feed(store: &Arc<dyn Store>) -> StoreResult<Report> {
    follow(store, Inputs::default()).await
}

/// Brings the feed's posts to the most recent published post copies of `users`, whether or
/// not the feed is full (for `rebuild` and the repairs of `verify`; the handlers refill as
/// posts leave). Writes only the copies that differ.
pub(crate) async fn refill_feed(store: &Arc<dyn Store>) -> StoreResult<Report> {
    let inputs = Inputs {
        refill: true,
        ..Inputs::default()
    };
    follow(store, inputs).await
}

/// What one write of the feed is decided from.
#[derive(Default)]
struct Inputs {
    /// Posts that may not be in the feed (deleted, or a refill took a copy `users` no longer
    /// lists).
    gone: BTreeSet<PostId>,
    /// Current short copies, the last one of each post, with whether `users` listed them.
    copies: Vec<(Post, bool)>,
    /// Refill from `users` even if no post left (a repair).
    refill: bool,
}

impl Inputs {
    fn of(changes: &[FeedChange]) -> Self {
        let mut inputs = Self::default();
        for change in changes {
            match change {
                FeedChange::Gone(id) => {
                    inputs.gone.insert(id.clone());
                }
                FeedChange::Copy { copy, was_listed } => {
                    inputs.copy(Post::clone(copy), *was_listed)
                }
            }
        }
        inputs
    }

    fn copy(&mut self, copy: Post, was_listed: bool) {
        self.copies.retain(|(held, _)| held.id != copy.id);
        self.copies.push((copy, was_listed));
    }
}

/// Decides and writes until the feed holds what `inputs` ask, deciding again when a write
/// lost a race or a refill took a copy that `users` changed since, and going on while a
/// write was only a part of the plan or copies past the bound are left.
async fn follow(store: &Arc<dyn Store>, mut inputs: Inputs) -> StoreResult<Report> {
    let mut report = Report::default();
    let mut candidates: Option<Vec<Post>> = None;
    let mut attempts = 0;
    while attempts < MAX_ATTEMPTS {
        let mut snapshot = Snapshot::read(store).await?;
        let mut plan = decide_with_refill(store, &snapshot, &inputs, &mut candidates).await?;
        if plan.changes_holdings {
            let Some(fenced) = snapshot.fenced(store).await? else {
                attempts += 1;
                continue;
            };
            snapshot = fenced;
            plan = decide_with_refill(store, &snapshot, &inputs, &mut candidates).await?;
        }
        let mut operations = plan.operations(&snapshot)?;
        if operations.is_empty() {
            return Ok(report);
        }
        // More than a batch holds (a feed far from its most recent posts): the first part,
        // then the rest decided again on what it left.
        let partial = operations.len() > MAX_BATCH_OPERATIONS;
        operations.truncate(MAX_BATCH_OPERATIONS);
        let written = operations.len();
        match write(store, operations).await {
            Ok(Written::Done) => report.written += written,
            Ok(Written::LostRace) => {
                attempts += 1;
                continue;
            }
            Err(e) if e.is_transient() => return Err(e),
            Err(e) => {
                tracing::error!(error = %e, "feed write refused; the feed waits for a repair");
                report.skipped.push(format!("feed write: {e}"));
                return Ok(report);
            }
        }
        let stale = changed_since_refill(store, &plan.refilled).await?;
        if stale.is_empty() && snapshot.beyond.is_empty() && !partial {
            return Ok(report);
        }
        if !stale.is_empty() {
            // Rule 3: decide again with those copies as `users` holds them now, from a new
            // query of `users`.
            attempts += 1;
            candidates = None;
        }
        for (id, current) in stale {
            match current {
                Some(copy) => inputs.copy(copy, true),
                None => {
                    inputs.gone.insert(id);
                }
            }
        }
    }
    Err(StoreError::Unavailable(
        "the feed kept changing under this batch's writes; it will be delivered again".into(),
    ))
}

/// The plan for `snapshot`, with the refill's candidates read from `users` (once) if it needs
/// them.
async fn decide_with_refill(
    store: &Arc<dyn Store>,
    snapshot: &Snapshot,
    inputs: &Inputs,
    candidates: &mut Option<Vec<Post>>,
) -> StoreResult<Plan> {
    let plan = Plan::decide(snapshot, inputs, candidates.as_deref());
    if !plan.wants_refill {
        return Ok(plan);
    }
    let read = newest_listed_copies(store, inputs.gone.len()).await?;
    Ok(Plan::decide(
        snapshot,
        inputs,
        Some(&candidates.insert(read)[..]),
    ))
}

/// The most recent published post copies of `users`, enough that [`FEED_SIZE`] remain once
/// `skipped` of them are left out.
async fn newest_listed_copies(store: &Arc<dyn Store>, skipped: usize) -> StoreResult<Vec<Post>> {
    let wanted = FEED_SIZE.saturating_add(u32::try_from(skipped).unwrap_or(u32::MAX));
    let copies = published_only(Query::cross_partition().of_type(Post::TYPE))
        .order_by(PUBLISHED_DATE, SortOrder::Descending);
    let page = store
        .query(Container::Users, &copies, PageRequest::first(wanted))
        .await?;
    Ok(page
        .items
        .into_iter()
        .filter_map(|item| serde_json::from_value::<Post>(item).ok())
        .collect())
}

/// The feed's newest [`FEED_SIZE`] copies as read, and the copies past the bound.
struct Snapshot {
    /// Newest first, in the feed query's order.
    items: Vec<Post>,
    /// The items as stored, by id, to write only what changes.
    stored: HashMap<PostId, Value>,
    /// Ids of copies past the bound (a write cut short before the rules above, a hand edit).
    beyond: Vec<String>,
    /// The etag of the oldest of `items`, read before them (see [`Snapshot::fenced`]).
    fence: Option<ETag>,
}

impl Snapshot {
    async fn read(store: &Arc<dyn Store>) -> StoreResult<Self> {
        // One past the bound, to learn whether the feed holds more than it may.
        let mut window = newest_feed_copies(&**store, FEED_SIZE + 1).await?;
        let beyond = if window.len() > FEED_SIZE as usize {
            window.truncate(FEED_SIZE as usize);
            let past = feed_query().skip(FEED_SIZE);
            let page = store
                .query(Container::Feed, &past, PageRequest::first(BEYOND_PER_WRITE))
                .await?;
            page.items.iter().filter_map(id_of).collect()
        } else {
            Vec::new()
        };
        let mut items = Vec::with_capacity(window.len());
        let mut stored = HashMap::with_capacity(window.len());
        for item in window {
            if let Ok(post) = serde_json::from_value::<Post>(item.clone()) {
                stored.insert(post.id.clone(), item);
                items.push(post);
            }
        }
        Ok(Self {
            items,
            stored,
            beyond,
            fence: None,
        })
    }

    /// The window's oldest copy: every write that changes which posts the feed holds
    /// replaces or deletes it, with `If-Match`.
    fn floor(&self) -> Option<&Post> {
        self.items.last()
    }

    /// The window read again, with the etag of its floor read in between: the etag is no
    /// newer than the window, so a write fenced by it succeeds only if no other write
    /// changed which posts the feed holds since the window was read (every such write
    /// replaces or deletes the floor of the feed it read, which is this one's floor: the
    /// same copy is the floor of both reads, or this answers `None` and the caller reads
    /// again). An empty feed has no floor: its writes only create copies, and two handlers
    /// creating the same one conflict.
    async fn fenced(&self, store: &Arc<dyn Store>) -> StoreResult<Option<Self>> {
        let Some(floor) = self.floor() else {
            return Ok(Some(Self::read(store).await?));
        };
        let pk = feed_partition();
        let Some(document) = store
            .read_item(Container::Feed, &pk, floor.id.as_str())
            .await?
        else {
            return Ok(None);
        };
        let mut again = Self::read(store).await?;
        if again.floor().map(|post| &post.id) != Some(&floor.id) {
            return Ok(None);
        }
        again.fence = Some(document.etag);
        Ok(Some(again))
    }
}

fn id_of(item: &Value) -> Option<String> {
    item.get("id").and_then(Value::as_str).map(str::to_owned)
}

/// What the feed should hold after a write: decided post by post against one snapshot
/// (order matters there).
struct Plan {
    /// Newest first, at most [`FEED_SIZE`].
    window: Vec<Post>,
    /// Copies the refill took from `users`: read there again once written.
    refilled: Vec<Post>,
    /// Whether the write changes which posts the feed holds, or their order: then it is
    /// fenced (see [`Snapshot::fenced`]).
    changes_holdings: bool,
    /// Whether the window lost posts and lacks the refill's candidates to fill up.
    wants_refill: bool,
}

impl Plan {
    fn decide(snapshot: &Snapshot, inputs: &Inputs, candidates: Option<&[Post]>) -> Self {
        let mut plan = Self {
            window: snapshot.items.clone(),
            refilled: Vec::new(),
            changes_holdings: !snapshot.beyond.is_empty(),
            wants_refill: false,
        };
        // Rule 1: past the floor of a full window, only the refill lets a post in.
        let floor = (snapshot.items.len() >= FEED_SIZE as usize)
            .then(|| snapshot.floor().map(Post::list_date))
            .flatten();
        let mut lost = false;
        for id in &inputs.gone {
            lost |= plan.remove(id);
        }
        for (copy, was_listed) in &inputs.copies {
            let below_floor = floor.is_some_and(|floor| copy.list_date() < floor);
            let held = plan.window.iter().position(|post| post.id == copy.id);
            match held {
                _ if !copy.is_published() => lost |= plan.remove(&copy.id),
                // Moved past the floor: whether it stays is the refill's to say.
                Some(_) if below_floor => lost |= plan.remove(&copy.id),
                Some(at) if plan.window[at].list_date() == copy.list_date() => {
                    plan.window[at] = copy.clone();
                }
                Some(_) => {
                    plan.remove(&copy.id);
                    plan.insert(copy);
                }
                // Not among the most recent. A refill on another instance may have read
                // `users` before this batch listed it: the fence makes it read again.
                None if below_floor => plan.changes_holdings |= !was_listed,
                None => {
                    plan.insert(copy);
                }
            }
        }
        let short = plan.window.len() < FEED_SIZE as usize;
        if (lost && short) || inputs.refill {
            match candidates {
                Some(candidates) => plan.refill(candidates, &inputs.gone),
                None => plan.wants_refill = true,
            }
        }
        plan
    }

    /// Takes the post `id` out of the window; whether it was there.
    fn remove(&mut self, id: &PostId) -> bool {
        let Some(at) = self.window.iter().position(|post| &post.id == id) else {
            return false;
        };
        self.window.remove(at);
        self.changes_holdings = true;
        true
    }

    /// Places `copy` by its date, unless it is older than every post of a full window; the
    /// oldest leaves a window that is over full. Whether it was placed.
    fn insert(&mut self, copy: &Post) -> bool {
        let full = self.window.len() >= FEED_SIZE as usize;
        if full
            && self
                .window
                .last()
                .is_some_and(|oldest| copy.list_date() < oldest.list_date())
        {
            return false;
        }
        let at = self
            .window
            .partition_point(|post| post.list_date() >= copy.list_date());
        self.window.insert(at, copy.clone());
        self.window.truncate(FEED_SIZE as usize);
        self.changes_holdings = true;
        true
    }

    /// Fills the window with the most recent `candidates` it lacks (newest first), but those
    /// of `gone`.
    fn refill(&mut self, candidates: &[Post], gone: &BTreeSet<PostId>) {
        for candidate in candidates {
            let held = self.window.iter().any(|post| post.id == candidate.id);
            if !held && !gone.contains(&candidate.id) && self.insert(candidate) {
                self.refilled.push(candidate.clone());
            }
        }
        self.refilled
            .retain(|refilled| self.window.iter().any(|post| post.id == refilled.id));
    }

    /// The batch that makes the feed look like the plan, in the order in which a write cut to
    /// the size of one transactional batch takes it: the fence on the snapshot's floor when
    /// the holdings change (rule 2); each copy that arrives with one that leaves, so that a
    /// part keeps the feed as full as it was (arrivals are created, so that none comes back
    /// after another write removed it; of those that leave, the copies past the bound first,
    /// then the oldest); the rest of either; last the copies that change (replaced, for the
    /// same reason).
    fn operations(&self, snapshot: &Snapshot) -> StoreResult<Vec<BatchOperation>> {
        let floor = self
            .changes_holdings
            .then(|| snapshot.floor().map(|floor| &floor.id))
            .flatten();
        let mut fence = None;
        let (mut arrivals, mut changes) = (Vec::new(), Vec::new());
        for post in &self.window {
            let item = to_value(post)?;
            if Some(&post.id) == floor {
                let if_match = snapshot.fence.clone();
                fence = Some(BatchOperation::Replace { item, if_match });
                continue;
            }
            match snapshot.stored.get(&post.id) {
                None => arrivals.push(BatchOperation::Create { item }),
                Some(stored) if stored != &item => changes.push(BatchOperation::Replace {
                    item,
                    if_match: None,
                }),
                Some(_) => {}
            }
        }
        let mut departures: Vec<_> = snapshot
            .beyond
            .iter()
            .map(|id| BatchOperation::Delete {
                id: id.clone(),
                if_match: None,
            })
            .collect();
        for post in snapshot.items.iter().rev() {
            if self.window.iter().any(|kept| kept.id == post.id) {
                continue;
            }
            let if_match = (Some(&post.id) == floor)
                .then(|| snapshot.fence.clone())
                .flatten();
            let delete = BatchOperation::Delete {
                id: post.id.to_string(),
                if_match,
            };
            if Some(&post.id) == floor {
                fence = Some(delete);
            } else {
                departures.push(delete);
            }
        }
        let mut operations: Vec<_> = fence.into_iter().collect();
        let (mut arrivals, mut departures) = (arrivals.into_iter(), departures.into_iter());
        loop {
            match (arrivals.next(), departures.next()) {
                (None, None) => break,
                (arrival, departure) => operations.extend(arrival.into_iter().chain(departure)),
            }
        }
        operations.extend(changes);
        Ok(operations)
    }
}

/// How a write of the feed ended.
enum Written {
    Done,
    /// Another write came first: its fence, a copy it created or removed.
    LostRace,
}

async fn write(store: &Arc<dyn Store>, operations: Vec<BatchOperation>) -> StoreResult<Written> {
    match store
        .execute_batch(Container::Feed, &feed_partition(), operations)
        .await
    {
        Ok(_) => Ok(Written::Done),
        Err(StoreError::BatchOperationFailed { cause, .. }) if lost_race(&cause) => {
            Ok(Written::LostRace)
        }
        Err(e) if lost_race(&e) => Ok(Written::LostRace),
        Err(e) => Err(e),
    }
}

fn lost_race(cause: &StoreError) -> bool {
    matches!(
        cause,
        StoreError::PreconditionFailed | StoreError::NotFound | StoreError::Conflict
    )
}

/// Rule 3: the copies a refill took from `users` that `users` no longer holds as they were,
/// each with its copy now (`None`: gone, or no longer published). One point read each.
async fn changed_since_refill(
    store: &Arc<dyn Store>,
    refilled: &[Post],
) -> StoreResult<Vec<(PostId, Option<Post>)>> {
    let read: Vec<_> = stream::iter(refilled.to_vec())
        .map(|copy| listed_copy(store, copy))
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    let mut changed = Vec::new();
    for result in read {
        let (copy, now) = result?;
        if now.as_ref() != Some(&copy) {
            changed.push((copy.id, now));
        }
    }
    Ok(changed)
}

/// `copy`, and the author copy of its post as `users` holds it now if it lists it as
/// published.
async fn listed_copy(store: &Arc<dyn Store>, copy: Post) -> StoreResult<(Post, Option<Post>)> {
    let pk = PartitionKey::single(copy.user_id.as_str());
    let document = store
        .read_item(Container::Users, &pk, copy.id.as_str())
        .await?;
    let now = document
        .and_then(|document| serde_json::from_value::<Post>(document.item).ok())
        .filter(Post::is_published);
    Ok((copy, now))
}
