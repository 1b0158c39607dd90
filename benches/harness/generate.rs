//! The data generator: the case study's distribution (per user 5–50 posts; per post up to 25
//! comments and up to 100 likes by distinct users; comment authors and likers are random
//! users), reproducible from a seed, written through the `Store` at full speed.
//!
//! Each post goes in with its comments and likes as transactional batches in its own
//! partition (at most 100 operations each, the Cosmos DB limit), carrying its final counts,
//! so the data is what the product would hold after the same commands, in a fraction of the
//! requests. The copies in `users` and `feed` are then derived by the product's own
//! `copies::rebuild`, exactly as after a lost change-feed checkpoint.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use cosmos_blog::domain::{
    Comment, CommentContent, CommentId, Like, Month, Post, PostContent, PostId, Publication, Tag,
    Tags, Timestamp, Title, User, UserId, Username,
};
use cosmos_blog::store::{BatchOperation, Container, PartitionKey, Store};
use futures::{StreamExt, TryStreamExt, stream};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

/// Cosmos DB's limit of operations in one transactional batch.
const MAX_BATCH: usize = 100;
/// Batches in flight: the embedded store has one writer, but preparing the next batch while
/// one commits keeps it busy.
pub const IN_FLIGHT: usize = 4;
/// Posts are spread over this many days before the reference instant.
const HISTORY_DAYS: i64 = 365;
/// 2026-01-01T00:00:00Z: dates are fixed, not "now", so a seed gives the same data.
const REFERENCE_UNIX: i64 = 1_767_225_600;

#[derive(Debug, Clone)]
pub struct GenConfig {
    pub users: usize,
    pub seed: u64,
    pub progress: bool,
}

/// The posts (by place) that `keep` accepts, or all of them when it accepts none: an
/// operation on a post with comments (or likes) still has posts to run on in a data set
/// without any.
pub fn having<T: Copy>(posts: &[T], keep: impl Fn(T) -> bool) -> Vec<T> {
    let found: Vec<T> = posts.iter().copied().filter(|&post| keep(post)).collect();
    if found.is_empty() {
        posts.to_vec()
    } else {
        found
    }
}

/// A generated post, with what the profiler needs to pick targets.
#[derive(Debug, Clone, PartialEq)]
pub struct PostRef {
    pub post_id: PostId,
    pub comments: usize,
    pub likes: usize,
    /// Its author: the drafts list (their own) reads the author's partition.
    pub author: UserId,
    /// Its tags, normalised: Q8 reads a tag's partition of `tags`.
    pub tags: Vec<Tag>,
    /// The month it was published in, `None` for a draft: Q9 reads a month of `archive`.
    pub month: Option<Month>,
}

impl PostRef {
    pub fn is_published(&self) -> bool {
        self.month.is_some()
    }
}

/// The tags posts draw theirs from: a few common ones, so that a tag's list has posts.
const TAG_POOL: [&str; 12] = [
    "rust",
    "cosmos-db",
    "azure",
    "serverless",
    "databases",
    "web",
    "testing",
    "design",
    "travel",
    "cooking",
    "music",
    "books",
];

/// One post in this many is a draft, with no comments and no likes (they are refused on it).
const DRAFT_EVERY: usize = 10;

#[derive(Debug, Clone)]
pub struct Dataset {
    pub users: Vec<UserId>,
    pub posts: Vec<PostRef>,
    pub comments: usize,
    pub likes: usize,
    pub load_time: Duration,
    pub rebuild_time: Duration,
}

impl Dataset {
    /// A random published post: the reads of everyone's posts go to those (a draft is its
    /// author's alone). Drafts are one in [`DRAFT_EVERY`], so a few draws find one.
    pub fn published_post(&self, rng: &mut fastrand::Rng) -> &PostRef {
        let mut post = &self.posts[rng.usize(..self.posts.len())];
        for _ in 0..1_000 {
            if post.is_published() {
                break;
            }
            post = &self.posts[rng.usize(..self.posts.len())];
        }
        post
    }

    pub fn items(&self) -> usize {
        self.users.len() + self.posts.len() + self.comments + self.likes
    }
}

const WORDS: &[&str] = &[
    "cosmos",
    "partition",
    "feed",
    "change",
    "latency",
    "request",
    "unit",
    "query",
    "model",
    "post",
    "comment",
    "like",
    "user",
    "index",
    "throughput",
    "container",
    "azure",
    "rust",
    "function",
    "trigger",
    "denormalise",
    "copy",
    "batch",
    "etag",
    "lease",
    "scale",
    "blog",
];

/// Words up to a length drawn from `chars`.
fn sentence(rng: &mut fastrand::Rng, chars: std::ops::Range<usize>) -> String {
    let chars = rng.usize(chars);
    let mut text = String::with_capacity(chars + 16);
    while text.len() < chars {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(WORDS[rng.usize(..WORDS.len())]);
    }
    text.truncate(chars);
    text.trim_end().to_owned()
}

fn uuid(rng: &mut fastrand::Rng) -> String {
    uuid::Builder::from_random_bytes(rng.u128(..).to_le_bytes())
        .into_uuid()
        .to_string()
}

fn timestamp(unix_nanos: i128) -> Timestamp {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(unix_nanos)
        .expect("generated dates are in range");
    let text = at
        .format(&time::format_description::well_known::Rfc3339)
        .expect("RFC 3339 formats every date");
    Timestamp::parse(&text).expect("RFC 3339 parses")
}

/// `k` distinct indices out of `0..n`.
fn distinct(rng: &mut fastrand::Rng, n: usize, k: usize) -> Vec<usize> {
    let k = k.min(n);
    if k * 2 > n {
        let mut all: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut all);
        all.truncate(k);
        all
    } else {
        let mut chosen = std::collections::BTreeSet::new();
        while chosen.len() < k {
            chosen.insert(rng.usize(..n));
        }
        chosen.into_iter().collect()
    }
}

/// The users numbered `numbers`: `user-000042`, named `writer42`.
pub fn writers(numbers: std::ops::Range<usize>) -> anyhow::Result<Vec<User>> {
    numbers
        .map(|i| {
            let id = UserId::parse(&format!("user-{i:06}"))?;
            Ok(User::new(id, Username::parse(&format!("writer{i}"))?))
        })
        .collect()
}

/// Every post of `users` (5 to 50 each), planned before anything is written, from one RNG
/// in a fixed order, so the data does not depend on the order in which concurrent writes
/// finish.
pub fn plan_posts(
    rng: &mut fastrand::Rng,
    users: &[User],
) -> anyhow::Result<Vec<(PostRef, Vec<Value>)>> {
    let mut partitions = Vec::new();
    for author in 0..users.len() {
        for _ in 0..rng.usize(5..=50) {
            partitions.push(post_partition(rng, users, author)?);
        }
    }
    Ok(partitions)
}

/// Writes `users`, then the posts' `partitions`, [`IN_FLIGHT`] partitions at a time;
/// `written` is called after each user and each post's partition.
pub async fn write_users_and_posts(
    store: &Arc<dyn Store>,
    users: &[User],
    partitions: Vec<(PostRef, Vec<Value>)>,
    written: impl Fn(),
) -> anyhow::Result<()> {
    stream::iter(users)
        .map(|user| {
            let item = serde_json::to_value(user);
            let pk = PartitionKey::single(user.user_id.as_str());
            async move { write_partition(store, Container::Users, pk, vec![item?]).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .inspect_ok(|()| written())
        .try_collect::<()>()
        .await?;
    stream::iter(partitions)
        .map(|(post, items)| {
            let pk = PartitionKey::single(post.post_id.as_str());
            write_partition(store, Container::Posts, pk, items)
        })
        .buffer_unordered(IN_FLIGHT)
        .inspect_ok(|()| written())
        .try_collect::<()>()
        .await
}

/// One post's partition, ready to write: the post, then its comments and likes, whose
/// authors are drawn from `users`.
pub fn post_partition(
    rng: &mut fastrand::Rng,
    users: &[User],
    author: usize,
) -> anyhow::Result<(PostRef, Vec<Value>)> {
    let second = 1_000_000_000i128;
    let created =
        (REFERENCE_UNIX - rng.i64(0..HISTORY_DAYS * 86_400)) as i128 * second + rng.i128(0..second);
    let title = Title::parse(&sentence(rng, 10..80))?;
    let content = PostContent::parse(&sentence(rng, 100..2_000))?;
    let mut post = Post::new(PostId::generate(), &users[author], title, content);
    post.id = PostId::parse(&uuid(rng))?;
    post.post_id = post.id.clone();
    post.creation_date = timestamp(created);
    // Published when written, as a post made without a status is.
    post.published_date = Some(post.creation_date);
    let tag_count = rng.usize(0..=3);
    let drawn: Vec<&str> = distinct(rng, TAG_POOL.len(), tag_count)
        .into_iter()
        .map(|i| TAG_POOL[i])
        .collect();
    let tags = Tags::parse(&drawn)?;
    post = post.tagged(&tags);
    let draft = rng.usize(..DRAFT_EVERY) == 0;
    if draft {
        post.set_publication(Publication::Draft, post.creation_date);
    }
    let (comments, likes) = if draft {
        (0, 0)
    } else {
        (rng.usize(0..=25), rng.usize(0..=100).min(users.len()))
    };
    post.comment_count = comments as u64;
    post.like_count = likes as u64;

    let mut items = vec![serde_json::to_value(&post)?];
    // Children come after their post: up to 30 days later.
    let later = |rng: &mut fastrand::Rng| timestamp(created + rng.i128(1..30 * 86_400 * second));
    for _ in 0..comments {
        let author = &users[rng.usize(..users.len())];
        let text = CommentContent::parse(&sentence(rng, 10..300))?;
        let mut comment = Comment::new(CommentId::generate(), post.post_id.clone(), author, text);
        comment.id = CommentId::parse(&uuid(rng))?;
        comment.creation_date = later(rng);
        items.push(serde_json::to_value(&comment)?);
    }
    for liker in distinct(rng, users.len(), likes) {
        let mut like = Like::new(post.post_id.clone(), &users[liker]);
        like.creation_date = later(rng);
        items.push(serde_json::to_value(&like)?);
    }
    let post_ref = PostRef {
        month: post.published_date().map(|at| Month::of(&at)),
        post_id: post.post_id,
        comments,
        likes,
        author: post.user_id,
        tags: tags.iter().cloned().collect(),
    };
    Ok((post_ref, items))
}

/// Writes one partition's items as transactional batches of at most [`MAX_BATCH`].
pub async fn write_partition(
    store: &Arc<dyn Store>,
    container: Container,
    pk: PartitionKey,
    items: Vec<Value>,
) -> anyhow::Result<()> {
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let operations = items
            .by_ref()
            .take(MAX_BATCH)
            .map(|item| BatchOperation::Upsert { item })
            .collect();
        store
            .execute_batch(container, &pk, operations)
            .await
            .with_context(|| format!("loading partition {}", pk.to_json_array()))?;
    }
    Ok(())
}

pub fn progress_bar(show: bool, len: usize, what: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_owned());
    bar
}

/// Generates and loads the data set, then derives the copies with `rebuild`.
pub async fn generate(store: &Arc<dyn Store>, config: &GenConfig) -> anyhow::Result<Dataset> {
    anyhow::ensure!(config.users > 0, "--users must be at least 1");
    let started = Instant::now();
    let mut rng = fastrand::Rng::with_seed(config.seed);
    let users = writers(0..config.users)?;
    let partitions = plan_posts(&mut rng, &users)?;
    let posts: Vec<PostRef> = partitions.iter().map(|(p, _)| p.clone()).collect();

    let bar = progress_bar(config.progress, users.len() + partitions.len(), "loading");
    write_users_and_posts(store, &users, partitions, || bar.inc(1)).await?;
    bar.finish_and_clear();
    let load_time = started.elapsed();

    let spinner = progress_bar(config.progress, 0, "rebuild");
    spinner.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    cosmos_blog::copies::rebuild(store)
        .await
        .context("rebuilding the copies")?;
    spinner.finish_and_clear();

    Ok(Dataset {
        comments: posts.iter().map(|p| p.comments).sum(),
        likes: posts.iter().map(|p| p.likes).sum(),
        users: users.into_iter().map(|u| u.user_id).collect(),
        posts,
        load_time,
        rebuild_time: started.elapsed(),
    })
}
