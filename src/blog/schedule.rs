//! The schedule: which posts publish themselves, and when. One entry per scheduled post, all
//! in one known logical partition of `feed` (`/type` = `schedule`, beside the feed's own
//! `post` partition), so that the publisher finds what is due with one query of one
//! partition, never a query across partitions. The change feed keeps the entries (like the
//! other copies: idempotent, verified); the publisher only reads them and publishes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::storage::{from_item, post_partition, to_item};
use super::{Attempt, Blog, until_not_stale};
use crate::domain::{Post, PostId, PostStatus, Publication, Timestamp, UserId};
use crate::error::{Error, Result};
use crate::store::{Container, PageRequest, PartitionKey, Query, SortOrder, StoreError};

/// The `type` of a schedule entry, and the `feed` partition that holds them all.
pub const SCHEDULE_TYPE: &str = "schedule";

/// How many due posts one pass of the publisher takes at most; the next pass takes the rest.
pub const PUBLISH_BATCH: u32 = 100;

/// The partition of `feed` that holds the schedule.
pub fn schedule_partition() -> PartitionKey {
    PartitionKey::single(SCHEDULE_TYPE)
}

/// The schedule's entries, soonest first.
pub fn schedule_query() -> Query {
    Query::in_partition(schedule_partition())
        .of_type(SCHEDULE_TYPE)
        .order_by("publishAt", SortOrder::Ascending)
}

/// One scheduled post: its id (the entry's id), author and when it publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleEntry {
    pub id: PostId,
    #[serde(rename = "type")]
    pub kind: String,
    pub post_id: PostId,
    pub user_id: UserId,
    pub publish_at: Timestamp,
}

impl ScheduleEntry {
    /// The entry `post` needs in the schedule: one while it is scheduled, none otherwise.
    pub fn of(post: &Post) -> Option<Self> {
        let publish_at = post
            .publish_at
            .filter(|_| post.status == PostStatus::Scheduled)?;
        Some(Self {
            id: post.id.clone(),
            kind: SCHEDULE_TYPE.to_owned(),
            post_id: post.post_id.clone(),
            user_id: post.user_id.clone(),
            publish_at,
        })
    }

    pub fn to_item(&self) -> Result<Value> {
        to_item(self)
    }
}

/// What one pass of the publisher did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// Posts published by this pass.
    pub published: usize,
    /// Due entries whose post was published, unscheduled, rescheduled or deleted already
    /// (by another instance, or by its author): nothing to do, the change feed removes them.
    pub already_done: usize,
}

impl Blog {
    /// Publishes every post of the schedule whose time has come by `now`: one query of the
    /// schedule's partition, then per due post a read and a replace with If-Match. Safe to run
    /// twice, or on several instances at once: a post is published only while it is still
    /// scheduled for that time, and its `publishedDate` is the time it was scheduled for, so
    /// whichever instance wins writes the same post and the others find it done.
    pub async fn publish_due(&self, now: Timestamp) -> Result<Published> {
        let page = self
            .store()
            .query(
                Container::Feed,
                &schedule_query(),
                PageRequest::first(PUBLISH_BATCH),
            )
            .await?;
        let mut done = Published::default();
        for item in page.items {
            let Ok(entry) = from_item::<ScheduleEntry>(item) else {
                continue;
            };
            if entry.publish_at > now {
                break;
            }
            if self
                .publish_scheduled(&entry.post_id, entry.publish_at)
                .await?
            {
                done.published += 1;
            } else {
                done.already_done += 1;
            }
        }
        Ok(done)
    }

    /// Publishes the post if it is still scheduled for `at`; answers whether this call did.
    async fn publish_scheduled(&self, post_id: &PostId, at: Timestamp) -> Result<bool> {
        let pk = post_partition(post_id);
        until_not_stale(|| async {
            let Some((mut post, etag)) = self
                .read::<Post>(Container::Posts, &pk, post_id.as_str())
                .await?
            else {
                return Ok(false);
            };
            if post.publication() != Publication::Schedule(at) {
                return Ok(false);
            }
            post.set_publication(Publication::Publish, at);
            match self
                .store()
                .replace_item(Container::Posts, &pk, to_item(&post)?, Some(&etag))
                .await
            {
                Ok(_) => Ok(true),
                Err(StoreError::PreconditionFailed) => Err(Attempt::Stale),
                Err(StoreError::NotFound) => Ok(false),
                Err(e) => Err(Error::from(e).into()),
            }
        })
        .await
    }
}
