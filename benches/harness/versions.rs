//! The ten operations under the three data models of the case study, on the same store.
//!
//! V3 is the product: [`Blog`]. V1 and V2 exist only here, written against the same
//! [`Store`] as an experienced developer would have written them for those models:
//! - V1 (normalised) uses neither the copies (`users` post copies, `feed`) nor the
//!   denormalised fields (`userUsername`, counts): usernames come from reading the users,
//!   counts from querying the comments and likes (the `Store` API has no aggregates, so a
//!   count reads the items; Cosmos DB's `SELECT VALUE COUNT(1)` would return one number),
//!   and Q3/Q6 are cross-partition queries over `posts` followed by per-result lookups.
//! - V2 reads the denormalised fields, but has no copies: Q3/Q6 are cross-partition queries
//!   over `posts`. Its other operations are the product's.
//!
//! Writes of V1 go to posts created by V1 itself (see the profiler), so the items without
//! denormalised fields never meet the product's readers.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;
use cosmos_blog::blog::{Blog, ListRequest, PageSize};
use cosmos_blog::domain::{
    Comment, CommentContent, CommentId, Like, LikeId, Post, PostContent, PostId,
    SHORT_CONTENT_CHARS, Timestamp, Title, UserId, Username,
};
use cosmos_blog::store::{
    Container, PageRequest, PartitionKey, Query, SortOrder, Store, StoreError,
};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    V1,
    V2,
    V3,
}

impl Version {
    pub const ALL: [Version; 3] = [Version::V1, Version::V2, Version::V3];

    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "V1",
            Version::V2 => "V2",
            Version::V3 => "V3",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    C1,
    Q1,
    C2,
    Q2,
    Q3,
    C3,
    Q4,
    C4,
    Q5,
    Q6,
}

impl Op {
    /// In the order of the case study's operations and figures.
    pub const ALL: [Op; 10] = [
        Op::C1,
        Op::Q1,
        Op::C2,
        Op::Q2,
        Op::Q3,
        Op::C3,
        Op::Q4,
        Op::C4,
        Op::Q5,
        Op::Q6,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::C1 => "C1",
            Op::Q1 => "Q1",
            Op::C2 => "C2",
            Op::Q2 => "Q2",
            Op::Q3 => "Q3",
            Op::C3 => "C3",
            Op::Q4 => "Q4",
            Op::C4 => "C4",
            Op::Q5 => "Q5",
            Op::Q6 => "Q6",
        }
    }

    pub fn is_query(self) -> bool {
        matches!(self, Op::Q1 | Op::Q2 | Op::Q3 | Op::Q4 | Op::Q5 | Op::Q6)
    }

    /// The case study's figures, measured on the real service: (ms, RU) for V1, V2, V3.
    pub fn case_study(self) -> [(f64, f64); 3] {
        match self {
            Op::C1 => [(7.0, 5.71), (7.0, 5.71), (7.0, 5.71)],
            Op::Q1 => [(2.0, 1.0), (2.0, 1.0), (2.0, 1.0)],
            Op::C2 => [(9.0, 8.76), (9.0, 8.76), (9.0, 8.76)],
            Op::Q2 => [(9.0, 19.54), (2.0, 1.0), (2.0, 1.0)],
            Op::Q3 => [(130.0, 619.41), (28.0, 201.54), (4.0, 6.46)],
            Op::C3 => [(7.0, 8.57), (7.0, 15.27), (7.0, 15.27)],
            Op::Q4 => [(23.0, 27.72), (4.0, 7.72), (4.0, 7.72)],
            Op::C4 => [(6.0, 7.05), (7.0, 14.67), (7.0, 14.67)],
            Op::Q5 => [(59.0, 58.92), (4.0, 8.92), (4.0, 8.92)],
            Op::Q6 => [(306.0, 2063.54), (83.0, 532.33), (9.0, 16.97)],
        }
    }
}

/// What one run of an operation works on.
#[derive(Debug, Clone)]
pub struct Target {
    /// The reader's subject (Q1, Q3) or the author/actor of a command.
    pub user: UserId,
    /// The post read (Q2, Q4, Q5) or commented/liked (C3, C4).
    pub post: PostId,
    /// A user id that does not exist yet (C1).
    pub new_user: UserId,
}

/// The operations of one model, over one store (usually a metered one).
#[derive(Clone)]
pub struct Versions {
    store: Arc<dyn Store>,
    blog: Blog,
}

fn post_pk(post: &str) -> PartitionKey {
    PartitionKey::single(post)
}

fn short(mut post: Value) -> Value {
    if let Some(Value::String(content)) = post.get_mut("content")
        && let Some((cut, _)) = content.char_indices().nth(SHORT_CONTENT_CHARS)
    {
        content.truncate(cut);
    }
    post
}

fn text<'a>(item: &'a Value, field: &str) -> &'a str {
    item.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// A run that answers one item (a command, or a read of one item): 1, or the call's error.
fn one<T, E: Into<anyhow::Error>>(result: Result<T, E>) -> anyhow::Result<(usize, Option<PostId>)> {
    result.map(|_| (1, None)).map_err(Into::into)
}

/// A run that answers a list: how many items it held, or the call's error.
fn count<E: Into<anyhow::Error>>(
    items: Result<usize, E>,
) -> anyhow::Result<(usize, Option<PostId>)> {
    items.map(|n| (n, None)).map_err(Into::into)
}

impl Versions {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            blog: Blog::new(Arc::clone(&store)),
            store,
        }
    }

    /// Runs `op` of `version` on `target`; returns the number of items in the answer
    /// (or 1 for a command), and the id of a created post (C2).
    pub async fn run(
        &self,
        version: Version,
        op: Op,
        target: &Target,
    ) -> anyhow::Result<(usize, Option<PostId>)> {
        match (version, op) {
            // The same in every model (the case study measured them alike).
            (_, Op::C1) => {
                let name = Username::parse(&format!("renamed {}", target.new_user))?;
                let user = target.new_user.clone();
                one(self.blog.put_user(&user, user.clone(), name).await)
            }
            (_, Op::Q1) => one(self.blog.get_user(&target.user).await),

            (Version::V1, Op::C2) => self
                .v1_create_post(&target.user)
                .await
                .map(|id| (1, Some(id))),
            (Version::V1, Op::Q2) => one(self.v1_get_post(&target.post).await),
            (Version::V1, Op::Q3) => count(self.v1_user_posts(&target.user).await),
            (Version::V1, Op::C3) => one(self
                .v1_add_child(&target.user, &target.post, "comment")
                .await),
            (Version::V1, Op::Q4) => count(self.v1_children(&target.post, "comment").await),
            (Version::V1, Op::C4) => {
                one(self.v1_add_child(&target.user, &target.post, "like").await)
            }
            (Version::V1, Op::Q5) => count(self.v1_children(&target.post, "like").await),
            (Version::V1, Op::Q6) => count(self.v1_feed().await),

            (Version::V2, Op::Q3) => count(self.v2_user_posts(&target.user).await),
            (Version::V2, Op::Q6) => count(self.v2_feed().await),

            // V2's other operations and all of V3 are the product's code path.
            (_, Op::C2) => {
                let title = Title::parse("benchmark post")?;
                let content = PostContent::parse(&"benchmark content ".repeat(40))?;
                let post = self.blog.create_post(&target.user, title, content).await?;
                Ok((1, Some(post.post_id)))
            }
            (_, Op::Q2) => one(self.blog.get_post(&target.post).await),
            (_, Op::Q3) => count(
                self.blog
                    .user_posts::<Post>(&target.user, ListRequest::first(PageSize::DEFAULT))
                    .await
                    .map(|page| page.items.len()),
            ),
            (_, Op::C3) => {
                let content = CommentContent::parse("a benchmark comment")?;
                one(self
                    .blog
                    .add_comment(&target.user, &target.post, content)
                    .await)
            }
            (_, Op::Q4) => count(
                self.blog
                    .comments::<Comment>(&target.post, None, ListRequest::first(PageSize::DEFAULT))
                    .await
                    .map(|page| page.items.len()),
            ),
            (_, Op::C4) => one(self.blog.like_post(&target.user, &target.post).await),
            (_, Op::Q5) => count(
                self.blog
                    .likes::<Like>(&target.post, None, ListRequest::first(PageSize::DEFAULT))
                    .await
                    .map(|page| page.items.len()),
            ),
            (_, Op::Q6) => Ok((self.blog.feed(PageSize::MAX).await?.len(), None)),
        }
    }

    // ---- V1: normalised ------------------------------------------------------------------

    async fn v1_read(&self, container: Container, pk: &str, id: &str) -> anyhow::Result<Value> {
        self.store
            .read_item(container, &PartitionKey::single(pk), id)
            .await?
            .map(|doc| doc.item)
            .with_context(|| format!("no item {id} in {}", container.name()))
    }

    async fn v1_username(&self, user: &str) -> anyhow::Result<String> {
        let item = self.v1_read(Container::Users, user, user).await?;
        Ok(text(&item, "username").to_owned())
    }

    /// Counts the post's children of one type by reading them (no aggregates in `Store`).
    async fn v1_count(&self, post: &str, item_type: &'static str) -> anyhow::Result<usize> {
        let query = Query::in_partition(post_pk(post)).of_type(item_type);
        let mut count = 0;
        let mut continuation = None;
        loop {
            let page = self
                .store
                .query(
                    Container::Posts,
                    &query,
                    PageRequest {
                        max_items: 1_000,
                        continuation: continuation.take(),
                    },
                )
                .await?;
            count += page.items.len();
            match page.continuation {
                Some(next) => continuation = Some(next),
                None => return Ok(count),
            }
        }
    }

    /// A post as V1 answers it: the post plus its author's name and its counts, each from
    /// its own request. `username` is passed when the caller already read it.
    async fn v1_complete(&self, mut post: Value, username: Option<&str>) -> anyhow::Result<Value> {
        let post_id = text(&post, "postId").to_owned();
        let username = match username {
            Some(name) => name.to_owned(),
            None => self.v1_username(text(&post, "userId")).await?,
        };
        let comments = self.v1_count(&post_id, "comment").await?;
        let likes = self.v1_count(&post_id, "like").await?;
        post["userUsername"] = Value::from(username);
        post["commentCount"] = Value::from(comments);
        post["likeCount"] = Value::from(likes);
        Ok(post)
    }

    async fn v1_create_post(&self, author: &UserId) -> anyhow::Result<PostId> {
        // The author must exist; V1 stores no username on the post, so that is all it reads.
        self.v1_read(Container::Users, author.as_str(), author.as_str())
            .await?;
        let id = PostId::generate();
        let item = json!({
            "id": id, "type": "post", "postId": id, "userId": author,
            "title": "benchmark post", "content": "benchmark content ".repeat(40),
            "creationDate": Timestamp::now(),
        });
        self.store
            .create_item(Container::Posts, &post_pk(id.as_str()), item)
            .await?;
        Ok(id)
    }

    async fn v1_get_post(&self, post: &PostId) -> anyhow::Result<Value> {
        let item = self
            .v1_read(Container::Posts, post.as_str(), post.as_str())
            .await?;
        self.v1_complete(item, None).await
    }

    /// Q3: every partition of `posts` may hold a post of the user: fan out, then complete
    /// each post (the author's name once, the counts per post).
    async fn v1_user_posts(&self, user: &UserId) -> anyhow::Result<usize> {
        let found = self.posts_of_user_everywhere(user).await?;
        let username = self.v1_username(user.as_str()).await?;
        let mut posts = Vec::with_capacity(found.len());
        for post in found {
            posts.push(short(self.v1_complete(post, Some(&username)).await?));
        }
        Ok(posts.len())
    }

    async fn v1_add_child(&self, actor: &UserId, post: &PostId, kind: &str) -> anyhow::Result<()> {
        self.v1_read(Container::Users, actor.as_str(), actor.as_str())
            .await?;
        self.v1_read(Container::Posts, post.as_str(), post.as_str())
            .await?;
        let now = Timestamp::now();
        let item = if kind == "like" {
            let id = LikeId::for_liker(actor);
            json!({"id": id, "type": "like", "postId": post, "userId": actor, "creationDate": now})
        } else {
            let id = CommentId::generate();
            json!({"id": id, "type": "comment", "postId": post, "userId": actor,
                   "content": "a benchmark comment", "creationDate": now})
        };
        match self
            .store
            .create_item(Container::Posts, &post_pk(post.as_str()), item)
            .await
        {
            Ok(_) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Q4/Q5: one page of the children, then each distinct author's name.
    async fn v1_children(&self, post: &PostId, kind: &'static str) -> anyhow::Result<usize> {
        let query = Query::in_partition(post_pk(post.as_str()))
            .of_type(kind)
            .order_by("creationDate", SortOrder::Ascending);
        let page = self
            .store
            .query(
                Container::Posts,
                &query,
                PageRequest::first(PageSize::DEFAULT.get()),
            )
            .await?;
        let mut names: HashMap<String, String> = HashMap::new();
        let mut items = Vec::with_capacity(page.items.len());
        for mut item in page.items {
            let user = text(&item, "userId").to_owned();
            if !names.contains_key(&user) {
                let name = self.v1_username(&user).await?;
                names.insert(user.clone(), name);
            }
            item["userUsername"] = Value::from(names[&user].as_str());
            items.push(item);
        }
        Ok(items.len())
    }

    /// Q6: the 100 most recent posts of every partition, each then completed.
    async fn v1_feed(&self) -> anyhow::Result<usize> {
        let page = self.v2_recent_posts().await?;
        let mut names: HashMap<String, String> = HashMap::new();
        let mut posts = Vec::with_capacity(page.len());
        for post in page {
            let user = text(&post, "userId").to_owned();
            if !names.contains_key(&user) {
                let name = self.v1_username(&user).await?;
                names.insert(user.clone(), name);
            }
            let name = names[&user].clone();
            posts.push(short(self.v1_complete(post, Some(&name)).await?));
        }
        Ok(posts.len())
    }

    // ---- V2: denormalised, no copies -----------------------------------------------------

    async fn v2_user_posts(&self, user: &UserId) -> anyhow::Result<usize> {
        let found = self.posts_of_user_everywhere(user).await?;
        Ok(found.into_iter().map(short).count())
    }

    /// V1 and V2 have no per-user copies: a user's newest posts are a query across every
    /// partition of `posts`.
    async fn posts_of_user_everywhere(&self, user: &UserId) -> anyhow::Result<Vec<Value>> {
        let query = Query::cross_partition().of_type("post").filter(
            "userId",
            cosmos_blog::store::FilterOp::Eq,
            user.as_str(),
        );
        self.newest_posts_everywhere(query, PageSize::DEFAULT).await
    }

    /// V1 and V2 have no feed container: the newest posts of every partition of `posts`.
    async fn v2_recent_posts(&self) -> anyhow::Result<Vec<Value>> {
        let query = Query::cross_partition().of_type("post");
        self.newest_posts_everywhere(query, PageSize::MAX).await
    }

    async fn newest_posts_everywhere(
        &self,
        query: Query,
        limit: PageSize,
    ) -> anyhow::Result<Vec<Value>> {
        let query = query.order_by("creationDate", SortOrder::Descending);
        let page = self
            .store
            .query(Container::Posts, &query, PageRequest::first(limit.get()))
            .await?;
        Ok(page.items)
    }

    async fn v2_feed(&self) -> anyhow::Result<usize> {
        Ok(self.v2_recent_posts().await?.into_iter().map(short).count())
    }
}
