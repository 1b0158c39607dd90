//! The cost of deletes, in store requests: each delete through the blog (what
//! the API request costs) and the change-feed work it sets off (what the handlers then cost),
//! measured through a [`MeteredStore`](testkit::metered::MeteredStore) on items made for it in the harness's store.

use std::sync::Arc;

use crate::markdown::{section, table_head};
use cosmos_blog::blog::Blog;
use cosmos_blog::copies::{on_post_changed, on_user_changed};
use cosmos_blog::domain::{
    CommentContent, CommentId, PostContent, PostId, Title, Tombstone, UserId, Username,
};
use cosmos_blog::store::{Container, PartitionKey, Store};
use testkit::metered::{Metrics, meter};

/// Mean cost of one delete: the request, then the change-feed work.
#[derive(Debug, Clone)]
pub struct DeleteCost {
    pub op: &'static str,
    pub samples: usize,
    pub requests: f64,
    pub partitions: f64,
    pub items_written: f64,
    pub change_feed_requests: f64,
    pub change_feed_written: f64,
    pub fan_out: bool,
}

#[derive(Default)]
struct Sum {
    samples: usize,
    api: Metrics,
    change_feed: Metrics,
}

impl Sum {
    fn add(&mut self, api: Metrics, change_feed: Metrics) {
        self.samples += 1;
        self.api += &api;
        self.change_feed += &change_feed;
    }

    fn cost(self, op: &'static str) -> DeleteCost {
        let n = self.samples.max(1) as f64;
        DeleteCost {
            op,
            samples: self.samples,
            requests: self.api.requests as f64 / n,
            partitions: self.api.partitions as f64 / n,
            items_written: self.api.items_written as f64 / n,
            change_feed_requests: self.change_feed.requests as f64 / n,
            change_feed_written: self.change_feed.items_written as f64 / n,
            fan_out: self.change_feed.fan_out_queries > 0,
        }
    }
}

fn id<T>(parse: fn(&str) -> Result<T, cosmos_blog::domain::ValidationError>, raw: &str) -> T {
    parse(raw).expect("valid id")
}

/// Runs each delete `samples` times. Every sample makes its own author, fan, two posts with
/// three comments and two likes each, then deletes: a like, a comment, a post, an account.
pub async fn profile(store: &Arc<dyn Store>, samples: usize) -> anyhow::Result<Vec<DeleteCost>> {
    let metered = meter(Arc::clone(store));
    let metered_store: Arc<dyn Store> = Arc::new(metered.clone());
    let blog = Blog::new(Arc::clone(&metered_store));
    let (mut unlike, mut comment, mut post, mut account) = (
        Sum::default(),
        Sum::default(),
        Sum::default(),
        Sum::default(),
    );
    for i in 0..samples.max(1) {
        let author = id(UserId::parse, &format!("delete-author-{i:04}"));
        let fan = id(UserId::parse, &format!("delete-fan-{i:04}"));
        for user in [&author, &fan] {
            blog.put_user(user, user.clone(), Username::parse(user.as_str())?)
                .await?;
        }
        let mut posts = Vec::new();
        let mut comments: Vec<CommentId> = Vec::new();
        for n in 0..2 {
            let made = blog
                .create_post(
                    &author,
                    Title::parse(&format!("to delete {n}"))?,
                    PostContent::parse("x")?,
                )
                .await?;
            for _ in 0..3 {
                let c = blog
                    .add_comment(&fan, &made.post_id, CommentContent::parse("c")?)
                    .await?;
                comments.push(c.id);
            }
            blog.like_post(&fan, &made.post_id).await?;
            blog.like_post(&author, &made.post_id).await?;
            posts.push(made.post_id);
        }
        let fans_post = blog
            .create_post(&fan, Title::parse("mine")?, PostContent::parse("x")?)
            .await?;

        metered.take();
        blog.unlike(&author, &posts[0]).await?;
        unlike.add(metered.take(), Metrics::default());

        blog.delete_comment(&fan, &posts[0], &comments[0]).await?;
        comment.add(metered.take(), Metrics::default());

        blog.delete_post(&author, &posts[0]).await?;
        let api = metered.take();
        let tombstone = source(store, &posts[0]).await?;
        on_post_changed(&metered_store, &[tombstone]).await?;
        post.add(api, metered.take());

        blog.delete_user(&fan, &fan).await?;
        let api = metered.take();
        let marker = store
            .read_item(
                Container::Users,
                &PartitionKey::single(fan.as_str()),
                &Tombstone::erasure_id(&fan),
            )
            .await?
            .map(|d| d.item)
            .ok_or_else(|| anyhow::anyhow!("no erasure marker"))?;
        on_user_changed(&metered_store, &[marker]).await?;
        // The erasure turned the fan's post into a tombstone: its own clean-up is part of it.
        let tombstone = source(store, &fans_post.post_id).await?;
        on_post_changed(&metered_store, &[tombstone]).await?;
        account.add(api, metered.take());
    }
    Ok(vec![
        unlike.cost("unlike"),
        comment.cost("delete a comment"),
        post.cost("delete a post"),
        account.cost("delete an account"),
    ])
}

async fn source(store: &Arc<dyn Store>, post_id: &PostId) -> anyhow::Result<serde_json::Value> {
    store
        .read_item(
            Container::Posts,
            &PartitionKey::single(post_id.as_str()),
            post_id.as_str(),
        )
        .await?
        .map(|d| d.item)
        .ok_or_else(|| anyhow::anyhow!("post {post_id} is gone"))
}

/// The report's section.
pub fn markdown(out: &mut String, costs: &[DeleteCost]) {
    use std::fmt::Write as _;
    section(
        out,
        "Deletes (store requests)",
        "Each delete as the API runs it, then the change-feed work it sets off (copies, comments and likes removed, counts lowered, the feed refilled). Per sample: two posts with three comments and two likes each.",
    );
    table_head(
        out,
        "delete | samples | requests | partitions | items written | change-feed requests | change-feed items written",
    );
    for c in costs {
        let fan_out = if c.fan_out { " (cross-partition)" } else { "" };
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1}{fan_out} | {:.1} |",
            c.op,
            c.samples,
            c.requests,
            c.partitions,
            c.items_written,
            c.change_feed_requests,
            c.change_feed_written
        );
    }
}
