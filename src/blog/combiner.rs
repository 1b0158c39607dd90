//! The one way to change a post's counts: every write that moves `commentCount` or
//! `likeCount` (a comment, a like, an unlike, a comment delete, and the erasure deleting an
//! erased user's comments and likes on other posts) is a [`Change`] applied here. Concurrent
//! changes of one post share one transactional batch per round, instead of each racing the
//! others with its own `[replace post If-Match, write item]` and retrying on every lost race.
//!
//! Per post with writes waiting, one worker task runs rounds. A round takes up to
//! [`MAX_CHANGES`] waiting writes, reads the post if it does not know its current version
//! (side by side with the writers reading their own users), and runs one batch: the post
//! with its counts moved by all the round's changes, then each change. The batch is atomic,
//! so counts and items stay in step exactly as with one write per batch. After a batch the
//! worker knows the post's new version and etag, so the next round needs no read: under a
//! burst a write costs its user read plus 1/99 of a batch.
//!
//! The worker is a spawned task, so a writer whose request is cancelled (a client hanging
//! up) strands nobody: a cancelled writer that has not handed over its change yet is
//! skipped; one that has is written and its answer dropped. Another instance writing the
//! post makes the batch fail its If-Match: the round reads the post again and retries, with
//! jittered backoff, and answers 409 after [`MAX_CONFLICT_RETRIES`] lost races in a row.
//!
//! Faults. The store retries what fails transiently (see `store::cosmos`), and the SDK retries
//! a batch whose answer was lost, which may have committed. Such a retry cannot count twice:
//! every attempt of a round carries the If-Match of the post as the round read it, so at most
//! one attempt commits (the others meet the post it changed, a 412), and children are written
//! by id. It can answer wrongly, though: its writers would see "lost race, then your comment
//! exists (409) / your like is gone (404)". So after a lost race a change that finds its own
//! effect counts as written: a create whose item is stored exactly as it sent it (a comment's
//! id is new per request, a like carries its own creation date), or a delete whose item is gone
//! after an attempt of its round may have committed unseen. Telling "committed" from "not
//! committed" costs nothing on the way that works and one point read on a refusal, which the
//! combiner made anyway to answer with the stored item. When the store's retries run out, the
//! writers get the store's error (503, or 429 with `Retry-After`) and the batch may or may not
//! have committed; either way counts and items agree, and a client retrying a like or a delete
//! is answered as if it came after.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::mem::discriminant;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::join_all;
use serde_json::Value;
use tokio::sync::oneshot;

use super::storage::{from_item, post_partition, to_item};
use crate::domain::{Post, PostId, UserId, is_a};
use crate::error::{Error, Result};
use crate::retry::Backoff;
use crate::store::{BatchOperation, Container, ETag, Store, StoreError};

/// Cosmos DB runs at most 100 operations in one transactional batch; one is the post.
pub const MAX_CHANGES: usize = 99;
/// Cosmos DB refuses a batch request over 2 MiB; the items of one batch stay under this
/// (a post may hold 100,000 characters and a comment 10,000, so 99 comments can exceed it).
const MAX_BATCH_BYTES: usize = 1_500_000;
/// Lost If-Match races in a row (other instances writing the post) before giving up.
const MAX_CONFLICT_RETRIES: usize = 60;

/// How a change moves the post's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountDelta {
    pub comments: i64,
    pub likes: i64,
}

impl CountDelta {
    pub const ONE_COMMENT: CountDelta = CountDelta {
        comments: 1,
        likes: 0,
    };
    pub const ONE_LIKE: CountDelta = CountDelta {
        comments: 0,
        likes: 1,
    };

    /// The opposite move: what deleting the item that `self` counted does.
    pub const fn negated(self) -> CountDelta {
        CountDelta {
            comments: -self.comments,
            likes: -self.likes,
        }
    }

    fn plus(self, other: CountDelta) -> CountDelta {
        CountDelta {
            comments: self.comments + other.comments,
            likes: self.likes + other.likes,
        }
    }

    fn apply_to(self, post: &mut Post) {
        post.comment_count = post.comment_count.saturating_add_signed(self.comments);
        post.like_count = post.like_count.saturating_add_signed(self.likes);
    }
}

/// One write in the post's partition that moves its counts.
pub struct Change {
    /// What to do to the child item (the post's replace is the combiner's).
    pub operation: BatchOperation,
    pub delta: CountDelta,
    /// What the store refusing this operation alone means to its writer: `Ok(())` when the
    /// item is already as the change wants it (a repeated like; answered with the stored
    /// item, the counts untouched), or the writer's error.
    pub refused: fn(&StoreError) -> Result<()>,
    /// Who asks for it: on an unpublished post, anyone but its author is answered that there
    /// is no such post, as every read answers them. `None`: the system's own change (an
    /// erasure removing a user's comments and likes), which goes through whoever sees the post.
    pub asked_by: Option<UserId>,
}

impl Change {
    /// Whether the change goes through on `post` while it is unpublished: a delete the system
    /// asks for, or its author. (A group's writers share one item, so the lead speaks for
    /// them: only creates, refused here anyway, are grouped.)
    fn goes_through_unpublished(&self, post: &Post) -> bool {
        let deletes = !matches!(self.operation, BatchOperation::Create { .. });
        deletes
            && self
                .asked_by
                .as_ref()
                .is_none_or(|asker| asker == &post.user_id)
    }
}

/// What became of a change.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeOutcome {
    /// Written, with the post's counts, in one batch.
    Written,
    /// Refused as already done: the item as stored (`None` when the change deletes it).
    AlreadyDone(Option<Value>),
}

/// Per post, the writes waiting for the next round. A post has an entry exactly while its
/// worker runs.
type Queues = HashMap<PostId, VecDeque<Pending>>;

#[derive(Clone)]
pub struct Combiner {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    queues: Mutex<Queues>,
}

/// A writer in a queue: its change (still being prepared, or ready) and where its answer goes.
struct Pending {
    change: Preparing,
    reply: oneshot::Sender<Result<ChangeOutcome>>,
}

enum Preparing {
    /// The writer is still reading what it needs (its user); a dropped sender means it gave
    /// up (its own error, or its request was cancelled).
    Awaited(oneshot::Receiver<Change>),
    /// Put back for the next round.
    Ready(Change),
}

/// The answers of a round, sent once the worker has settled its queue (see [`Worker::run`]).
type Outbox = Arc<
    Mutex<
        Vec<(
            oneshot::Sender<Result<ChangeOutcome>>,
            Result<ChangeOutcome>,
        )>,
    >,
>;

/// A prepared writer of the current round.
struct Waiter {
    change: Change,
    reply: oneshot::Sender<Result<ChangeOutcome>>,
    outbox: Outbox,
}

impl Waiter {
    fn answer(self, result: Result<ChangeOutcome>) {
        self.outbox
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push((self.reply, result));
    }

    fn pending(self) -> Pending {
        Pending {
            change: Preparing::Ready(self.change),
            reply: self.reply,
        }
    }
}

/// Writers of the same item in one round: the first one's operation goes into the batch;
/// the others are repeats (a user liking twice at once), answered as if their operation
/// had run right after it.
struct Group {
    id: String,
    waiters: Vec<Waiter>,
}

impl Group {
    fn lead(&self) -> &Change {
        &self.waiters[0].change
    }

    fn answer_all(self, result: &Result<ChangeOutcome>) {
        for waiter in self.waiters {
            waiter.answer(result.clone());
        }
    }

    /// The lead's operation went through: the repeats find the item it wrote.
    fn written(self) {
        let mut waiters = self.waiters.into_iter();
        let Some(lead) = waiters.next() else { return };
        let stored = match &lead.change.operation {
            BatchOperation::Create { item } => Some(item.clone()),
            _ => None,
        };
        lead.answer(Ok(ChangeOutcome::Written));
        for repeat in waiters {
            let outcome = (repeat.change.refused)(&StoreError::Conflict)
                .map(|()| ChangeOutcome::AlreadyDone(stored.clone()));
            repeat.answer(outcome);
        }
    }
}

fn item_id(operation: &BatchOperation) -> Option<&str> {
    match operation {
        BatchOperation::Create { item }
        | BatchOperation::Upsert { item }
        | BatchOperation::Replace { item, .. } => item.get("id").and_then(Value::as_str),
        BatchOperation::Delete { id, .. } => Some(id),
    }
}

fn operation_bytes(operation: &BatchOperation) -> usize {
    match operation {
        BatchOperation::Create { item }
        | BatchOperation::Upsert { item }
        | BatchOperation::Replace { item, .. } => serde_json::to_vec(item).map_or(0, |v| v.len()),
        BatchOperation::Delete { id, .. } => id.len(),
    }
}

fn lock(queues: &Mutex<Queues>) -> MutexGuard<'_, Queues> {
    // The lock is only held to move writers in and out of queues, which cannot panic.
    queues
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Combiner {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                queues: Mutex::default(),
            }),
        }
    }

    /// Writes the change that `prepare` makes, together with the other writers of the post.
    /// The writer joins the post's queue before it prepares, so that a round can read the
    /// post while the writer reads its user. An error of `prepare` is the writer's own
    /// answer, and its change is withdrawn.
    pub async fn apply<T>(
        &self,
        post_id: &PostId,
        prepare: impl Future<Output = Result<(T, Change)>>,
    ) -> Result<(T, ChangeOutcome)> {
        let (hand_over, handed_over) = oneshot::channel();
        let (reply, answer) = oneshot::channel();
        self.enqueue(
            post_id,
            vec![Pending {
                change: Preparing::Awaited(handed_over),
                reply,
            }],
            false,
        );
        let (value, change) = prepare.await?;
        // The worker waits for this change or for the sender to drop; it cannot be gone
        // while this writer's entry is queued.
        let _ = hand_over.send(change);
        let applied = answer
            .await
            .map_err(|_| Error::Internal("the post's write combiner stopped".into()))??;
        Ok((value, applied))
    }

    /// Writes changes that are ready (no preparation), together with the other writers of
    /// the post: up to [`MAX_CHANGES`] of them share a batch. One answer per change, in order.
    pub async fn apply_all(
        &self,
        post_id: &PostId,
        changes: Vec<Change>,
    ) -> Vec<Result<ChangeOutcome>> {
        let (pendings, answers): (Vec<_>, Vec<_>) = changes
            .into_iter()
            .map(|change| {
                let (reply, answer) = oneshot::channel();
                let pending = Pending {
                    change: Preparing::Ready(change),
                    reply,
                };
                (pending, answer)
            })
            .unzip();
        self.enqueue(post_id, pendings, false);
        join_all(answers.into_iter().map(|answer| async {
            answer
                .await
                .map_err(|_| Error::Internal("the post's write combiner stopped".into()))?
        }))
        .await
    }

    /// Queues writers (at the back, or at the front when put back from a round) and starts
    /// the post's worker if none runs.
    fn enqueue(&self, post_id: &PostId, pendings: Vec<Pending>, front: bool) {
        let start_worker = {
            let mut queues = lock(&self.inner.queues);
            let (queue, new) = match queues.get_mut(post_id) {
                Some(queue) => (queue, false),
                None => (queues.entry(post_id.clone()).or_default(), true),
            };
            if front {
                for pending in pendings.into_iter().rev() {
                    queue.push_front(pending);
                }
            } else {
                queue.extend(pendings);
            }
            new
        };
        if start_worker {
            let worker = Worker {
                combiner: self.clone(),
                post_id: post_id.clone(),
                known: None,
                outbox: Outbox::default(),
            };
            tokio::spawn(crate::telemetry::in_current_context(worker.run()));
        }
    }
}

/// Removes the post's queue if the worker ends without doing so (a panic): the writers
/// queued then get an error instead of waiting for good.
struct QueueGuard<'a> {
    combiner: &'a Combiner,
    post_id: &'a PostId,
    armed: bool,
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            lock(&self.combiner.inner.queues).remove(self.post_id);
        }
    }
}

struct Worker {
    combiner: Combiner,
    post_id: PostId,
    /// The post's current version as of the last batch or read, with its etag.
    known: Option<(Post, ETag)>,
    outbox: Outbox,
}

impl Worker {
    async fn run(mut self) {
        let post_id = self.post_id.clone();
        let combiner = self.combiner.clone();
        let mut guard = QueueGuard {
            combiner: &combiner,
            post_id: &post_id,
            armed: true,
        };
        loop {
            let round = {
                let mut queues = lock(&combiner.inner.queues);
                let queue = queues.entry(post_id.clone()).or_default();
                if queue.is_empty() {
                    // Under the lock: a writer arriving now finds no queue and starts a
                    // new worker.
                    queues.remove(&post_id);
                    guard.armed = false;
                    None
                } else {
                    let take = queue.len().min(MAX_CHANGES);
                    Some(queue.drain(..take).collect::<Vec<_>>())
                }
            };
            // The last round's answers go out only now: a writer that writes again once
            // answered never joins this worker's queue when it had none left, and so pays
            // the same (a read of the post) every time; writers that queued meanwhile keep
            // the worker, and its knowledge of the post, busy.
            self.send_answers();
            let Some(round) = round else { return };
            self.round(round).await;
        }
    }

    fn send_answers(&self) {
        let answers = std::mem::take(
            &mut *self
                .outbox
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        for (reply, result) in answers {
            // The writer may be gone (request cancelled); its change stands, like any
            // write whose answer was lost.
            let _ = reply.send(result);
        }
    }

    fn store(&self) -> &Arc<dyn Store> {
        &self.combiner.inner.store
    }

    /// The post as last seen, or read now. `Ok(None)`: there is no such post.
    async fn current_post(&mut self) -> Result<Option<(Post, ETag)>> {
        if let Some(known) = &self.known {
            return Ok(Some(known.clone()));
        }
        let read = self
            .store()
            .read_item(
                Container::Posts,
                &post_partition(&self.post_id),
                self.post_id.as_str(),
            )
            .await?;
        let current = match read {
            // A tombstone where the post was: deleted, so as good as absent.
            Some(document) if is_a::<Post>(&document.item) => {
                Some((from_item::<Post>(document.item)?, document.etag))
            }
            _ => None,
        };
        self.known.clone_from(&current);
        Ok(current)
    }

    async fn round(&mut self, pendings: Vec<Pending>) {
        let prepared = join_all(pendings.into_iter().map(|pending| {
            let outbox = Arc::clone(&self.outbox);
            async move {
                let change = match pending.change {
                    Preparing::Ready(change) => change,
                    Preparing::Awaited(handed_over) => handed_over.await.ok()?,
                };
                Some(Waiter {
                    change,
                    reply: pending.reply,
                    outbox,
                })
            }
        }));
        // The writers read their users while the round reads the post.
        let (waiters, post) = tokio::join!(prepared, self.current_post());
        let mut waiters: Vec<Waiter> = waiters.into_iter().flatten().collect();
        if waiters.is_empty() {
            return;
        }
        match post {
            Ok(Some(_)) => {}
            Ok(None) => {
                let missing = Err(Error::not_found("post", self.post_id.as_str()));
                return waiters.into_iter().for_each(|w| w.answer(missing.clone()));
            }
            Err(e) => {
                self.known = None;
                return waiters.into_iter().for_each(|w| w.answer(Err(e.clone())));
            }
        }
        let fitting = self.fitting_in_one_batch(&waiters);
        if fitting < waiters.len() {
            let later = waiters.split_off(fitting);
            self.put_back(later);
        }
        self.settle(waiters).await;
    }

    /// How many of `waiters` fit in one batch request beside the post (at least one).
    fn fitting_in_one_batch(&self, waiters: &[Waiter]) -> usize {
        let post_bytes = self
            .known
            .as_ref()
            .and_then(|(post, _)| serde_json::to_vec(post).ok())
            .map_or(0, |v| v.len());
        let mut bytes = post_bytes;
        for (at, waiter) in waiters.iter().enumerate() {
            bytes += operation_bytes(&waiter.change.operation);
            if bytes > MAX_BATCH_BYTES && at > 0 {
                return at;
            }
        }
        waiters.len()
    }

    fn put_back(&self, waiters: Vec<Waiter>) {
        if waiters.is_empty() {
            return;
        }
        let pendings = waiters.into_iter().map(Waiter::pending).collect();
        self.combiner.enqueue(&self.post_id, pendings, true);
    }

    /// Groups the round's writers by item: repeats of a create share its fate; any other
    /// second write of the same item waits for the next round, where it runs after the first.
    fn group(&self, waiters: Vec<Waiter>) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::with_capacity(waiters.len());
        let mut by_id: HashMap<String, usize> = HashMap::new();
        let mut later = Vec::new();
        for waiter in waiters {
            let Some(id) = item_id(&waiter.change.operation).map(str::to_owned) else {
                waiter.answer(Err(Error::Internal("a change without an item id".into())));
                continue;
            };
            match by_id.get(&id) {
                None => {
                    by_id.insert(id.clone(), groups.len());
                    groups.push(Group {
                        id,
                        waiters: vec![waiter],
                    });
                }
                Some(&at) => {
                    let lead = &groups[at].lead().operation;
                    let both_creates = matches!(lead, BatchOperation::Create { .. })
                        && discriminant(lead) == discriminant(&waiter.change.operation);
                    if both_creates {
                        groups[at].waiters.push(waiter);
                    } else {
                        later.push(waiter);
                    }
                }
            }
        }
        self.put_back(later);
        groups
    }

    /// Runs the round's batch until it goes through: a change the store refuses leaves the
    /// batch (it failed atomically at that operation, so nothing was written) and the rest
    /// is retried; a lost If-Match race re-reads the post and retries the whole round.
    ///
    /// A lost race may be no race: when the answer of a batch that committed is lost (a
    /// timeout after the service ran it), the retry, by the SDK or by the store, meets the
    /// post the batch itself changed and fails its If-Match. Nothing is counted twice: the
    /// If-Match makes every attempt of a round a compare-and-swap on one etag, of which one
    /// commits at most, and the items are written by id. What is left is to answer right:
    /// after a lost race the round runs again on the post as it is, and a change that finds
    /// its own effect (see [`Worker::settle_refused`]) was written by an earlier attempt.
    async fn settle(&mut self, waiters: Vec<Waiter>) {
        let mut groups = self.group(waiters);
        let mut refused: Vec<(Group, StoreError)> = Vec::new();
        // Whether an earlier attempt of this round may have committed unseen.
        let mut maybe_applied = false;
        let mut backoff = Backoff::new(Duration::from_millis(2), Duration::from_millis(100))
            .at_most(MAX_CONFLICT_RETRIES)
            .delays();
        while !groups.is_empty() {
            let (mut post, etag) = match self.current_post().await {
                Ok(Some(current)) => current,
                Ok(None) => {
                    let missing = Err(Error::not_found("post", self.post_id.as_str()));
                    groups.into_iter().for_each(|g| g.answer_all(&missing));
                    break;
                }
                Err(e) => {
                    groups
                        .into_iter()
                        .for_each(|g| g.answer_all(&Err(e.clone())));
                    break;
                }
            };
            // Nobody but its author sees an unpublished post, so nobody comments on it or
            // likes it, and nobody else removes a like or a comment of it: as for a post that
            // does not exist. (The system's deletes still go through: an erasure removes its
            // user's comments from a post unpublished since.)
            if !post.is_published() {
                let (refused, others): (Vec<Group>, Vec<Group>) = groups
                    .into_iter()
                    .partition(|g| !g.lead().goes_through_unpublished(&post));
                let missing = Err(Error::not_found("post", self.post_id.as_str()));
                refused.into_iter().for_each(|g| g.answer_all(&missing));
                groups = others;
                if groups.is_empty() {
                    break;
                }
            }
            let delta = groups
                .iter()
                .fold(CountDelta::default(), |sum, g| sum.plus(g.lead().delta));
            delta.apply_to(&mut post);
            let post_item = match to_item(&post) {
                Ok(item) => item,
                Err(e) => {
                    groups
                        .into_iter()
                        .for_each(|g| g.answer_all(&Err(e.clone())));
                    break;
                }
            };
            let mut operations = Vec::with_capacity(groups.len() + 1);
            operations.push(BatchOperation::Replace {
                item: post_item,
                if_match: Some(etag),
            });
            operations.extend(groups.iter().map(|g| g.lead().operation.clone()));
            crate::telemetry::metrics::record_combined_batch(groups.len());
            let result = self
                .store()
                .execute_batch(Container::Posts, &post_partition(&self.post_id), operations)
                .await;
            match result {
                Ok(etags) => {
                    self.known = etags.into_iter().next().flatten().map(|etag| (post, etag));
                    groups.into_iter().for_each(Group::written);
                    break;
                }
                Err(StoreError::BatchOperationFailed { index: 0, cause })
                    if matches!(
                        *cause,
                        StoreError::PreconditionFailed | StoreError::NotFound
                    ) =>
                {
                    // Another instance wrote the post (or deleted it), or this round's own
                    // earlier attempt did: read it again.
                    self.known = None;
                    maybe_applied = true;
                    match backoff.next() {
                        Some(delay) => tokio::time::sleep(delay).await,
                        None => {
                            let busy = Err(Error::Conflict(
                                "the post is being changed by many requests at once; try again"
                                    .into(),
                            ));
                            groups.into_iter().for_each(|g| g.answer_all(&busy));
                            break;
                        }
                    }
                }
                Err(StoreError::BatchOperationFailed { index, cause })
                    if (1..=groups.len()).contains(&index) =>
                {
                    refused.push((groups.remove(index - 1), *cause));
                }
                Err(e) => {
                    // Nothing was written, or, when the answer was lost after the store's
                    // retries, maybe all of it: the writers get the error either way (a 503),
                    // and the next round reads the post again.
                    self.known = None;
                    let failed = Err(Error::from(e));
                    groups.into_iter().for_each(|g| g.answer_all(&failed));
                    break;
                }
            }
        }
        self.settle_refused(refused, maybe_applied).await;
    }

    /// Answers the writers whose change the store refused alone, after reading what it
    /// refused on (side by side):
    /// - a create that finds its own item (equal to the one it sent), or a delete that finds
    ///   nothing after an attempt of its round may have committed unseen, was written by that
    ///   attempt;
    /// - otherwise the change's `refused` decides: already done (answered with the item as
    ///   stored), or the writer's error;
    /// - an item gone again in between sends its writers to the next round.
    async fn settle_refused(&self, refused: Vec<(Group, StoreError)>, maybe_applied: bool) {
        let pk = post_partition(&self.post_id);
        let reads = refused.into_iter().map(|(group, cause)| {
            let pk = &pk;
            async move {
                let stored = match (&group.lead().operation, &cause) {
                    (BatchOperation::Delete { .. }, StoreError::NotFound) if maybe_applied => {
                        Ok(Verdict::Mine)
                    }
                    // A delete found nothing: there is nothing to show.
                    (BatchOperation::Delete { .. }, _) => Ok(Verdict::Stored(None)),
                    (operation, _) => match self
                        .store()
                        .read_item(Container::Posts, pk, &group.id)
                        .await
                    {
                        Ok(Some(document)) if is_own(operation, &document.item) => {
                            Ok(Verdict::Mine)
                        }
                        Ok(Some(document)) => Ok(Verdict::Stored(Some(document.item))),
                        Ok(None) => Ok(Verdict::Gone),
                        Err(e) => Err(e),
                    },
                };
                (group, cause, stored)
            }
        });
        let mut again = Vec::new();
        for (group, cause, verdict) in join_all(reads).await {
            match verdict {
                Ok(Verdict::Mine) => group.written(),
                Ok(Verdict::Stored(item)) => {
                    for waiter in group.waiters {
                        let outcome = (waiter.change.refused)(&cause)
                            .map(|()| ChangeOutcome::AlreadyDone(item.clone()));
                        waiter.answer(outcome);
                    }
                }
                Ok(Verdict::Gone) => again.extend(group.waiters),
                Err(e) => group.answer_all(&Err(e.into())),
            }
        }
        self.put_back(again);
    }
}

/// What a refused change found in the store.
enum Verdict {
    /// Its own effect: an earlier attempt of it committed.
    Mine,
    /// Someone else's item (or, for a delete, nothing to show).
    Stored(Option<Value>),
    /// Nothing any more: try again.
    Gone,
}

/// Whether `stored` is the item that `operation` writes, as written by it: equal in every
/// field but `userUsername`, the one field the change-feed handlers rewrite on the items of
/// a post's partition. A comment's id is new with each request and a like's creation date
/// is its own, so another writer's item never passes for this one's.
fn is_own(operation: &BatchOperation, stored: &Value) -> bool {
    let BatchOperation::Create { item } = operation else {
        return false;
    };
    let without_username = |value: &Value| {
        let mut value = value.clone();
        if let Value::Object(fields) = &mut value {
            fields.remove("userUsername");
        }
        value
    };
    without_username(item) == without_username(stored)
}
