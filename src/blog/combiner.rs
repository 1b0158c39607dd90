//! The hot-post combiner: concurrent writes that change a post's counts (comments and likes
//! today; an "unlike" or a comment delete would be the same kind of write) share one
//! transactional batch per round, instead of each racing the others with its own
//! `[replace post If-Match, create item]` and retrying on every lost race.
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

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::mem::discriminant;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures::future::join_all;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{from_item, post_partition, to_item};
use crate::domain::{Post, PostId, is_a};
use crate::error::{Error, Result};
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
}

/// What became of a change.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
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
    reply: oneshot::Sender<Result<Applied>>,
}

enum Preparing {
    /// The writer is still reading what it needs (its user); a dropped sender means it gave
    /// up (its own error, or its request was cancelled).
    Awaited(oneshot::Receiver<Change>),
    /// Put back for the next round.
    Ready(Change),
}

/// A prepared writer of the current round.
struct Waiter {
    change: Change,
    reply: oneshot::Sender<Result<Applied>>,
}

impl Waiter {
    fn answer(self, result: Result<Applied>) {
        // The writer may be gone (request cancelled); its change stands, like any write
        // whose answer was lost.
        let _ = self.reply.send(result);
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

    fn answer_all(self, result: &Result<Applied>) {
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
        lead.answer(Ok(Applied::Written));
        for repeat in waiters {
            let outcome = (repeat.change.refused)(&StoreError::Conflict)
                .map(|()| Applied::AlreadyDone(stored.clone()));
            repeat.answer(outcome);
        }
    }
}

fn item_id(operation: &BatchOperation) -> Option<&str> {
    match operation {
        BatchOperation::Create { item }
        | BatchOperation::Upsert { item }
        | BatchOperation::Replace { item, .. } => item.get("id").and_then(Value::as_str),
        BatchOperation::Delete { id } => Some(id),
    }
}

fn operation_bytes(operation: &BatchOperation) -> usize {
    match operation {
        BatchOperation::Create { item }
        | BatchOperation::Upsert { item }
        | BatchOperation::Replace { item, .. } => serde_json::to_vec(item).map_or(0, |v| v.len()),
        BatchOperation::Delete { id } => id.len(),
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
    ) -> Result<(T, Applied)> {
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
                    return;
                }
                let take = queue.len().min(MAX_CHANGES);
                queue.drain(..take).collect::<Vec<_>>()
            };
            self.round(round).await;
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
        let prepared = join_all(pendings.into_iter().map(|pending| async move {
            let change = match pending.change {
                Preparing::Ready(change) => change,
                Preparing::Awaited(handed_over) => handed_over.await.ok()?,
            };
            Some(Waiter {
                change,
                reply: pending.reply,
            })
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
    async fn settle(&mut self, waiters: Vec<Waiter>) {
        let mut groups = self.group(waiters);
        let mut already_done: Vec<(Group, StoreError)> = Vec::new();
        let mut backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(2))
            .with_max_delay(Duration::from_millis(100))
            .with_max_times(MAX_CONFLICT_RETRIES)
            .with_jitter()
            .build();
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
                    // Another instance wrote the post (or deleted it): read it again.
                    self.known = None;
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
                    let group = groups.remove(index - 1);
                    match (group.lead().refused)(&cause) {
                        Ok(()) => already_done.push((group, *cause)),
                        Err(e) => group.answer_all(&Err(e)),
                    }
                }
                Err(e) => {
                    // Nothing was written (or, after a timeout, maybe it was: the next
                    // round reads the post again either way).
                    self.known = None;
                    let failed = Err(Error::from(e));
                    groups.into_iter().for_each(|g| g.answer_all(&failed));
                    break;
                }
            }
        }
        self.answer_already_done(already_done).await;
    }

    /// Answers the writers whose item was already there with the item as stored, read side
    /// by side. An item gone again in between sends its writers to the next round.
    async fn answer_already_done(&self, done: Vec<(Group, StoreError)>) {
        let pk = post_partition(&self.post_id);
        let reads = done.into_iter().map(|(group, cause)| {
            let pk = &pk;
            async move {
                let stored = match group.lead().operation {
                    // A delete found nothing: there is nothing to show.
                    BatchOperation::Delete { .. } => Ok(Some(None)),
                    _ => match self
                        .store()
                        .read_item(Container::Posts, pk, &group.id)
                        .await
                    {
                        Ok(Some(document)) => Ok(Some(Some(document.item))),
                        Ok(None) => Ok(None),
                        Err(e) => Err(e),
                    },
                };
                // `Ok(None)`: the item is gone again.
                (group, cause, stored)
            }
        });
        let mut again = Vec::new();
        for (group, cause, stored) in join_all(reads).await {
            match stored {
                Ok(Some(item)) => {
                    for waiter in group.waiters {
                        let outcome = (waiter.change.refused)(&cause)
                            .map(|()| Applied::AlreadyDone(item.clone()));
                        waiter.answer(outcome);
                    }
                }
                Ok(None) => again.extend(group.waiters),
                Err(e) => group.answer_all(&Err(e.into())),
            }
        }
        self.put_back(again);
    }
}
