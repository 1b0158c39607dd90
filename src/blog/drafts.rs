//! What an unpublished post changes in the reads: a draft or scheduled post is its author's
//! alone (anyone else is told there is no such post), and its author lists their drafts and
//! scheduled posts from the copies in their own partition of `users`.

use serde_json::Value;

use super::storage::user_partition;
use super::{Addressed, Blog, ListRequest, Listed, Listing, Seen};
use crate::domain::{Post, PostId, PostStatus, UserId};
use crate::error::{Error, Result};
use crate::store::{FilterOp, Query, SortOrder};

impl Blog {
    /// Q2 as `viewer` (the caller, if any) may see it: an unpublished post is its author's
    /// alone, and anyone else is told that there is no such post, as for one that never was.
    pub async fn get_post_seen_by<T: Listed<Item = Post> + Seen>(
        &self,
        post_id: &PostId,
        viewer: Option<&UserId>,
    ) -> Result<T> {
        let read = self.get_post_as::<Addressed<T>>(post_id).await?;
        if read.is_seen_by(viewer)? {
            Ok(read.post)
        } else {
            Err(Error::not_found("post", post_id.as_str()))
        }
    }

    /// The user's drafts and scheduled posts in short form, newest first, from the copies in
    /// the user's own partition of `users` (where the change feed keeps every post's copy,
    /// published or not). Who may ask is the API's to check: their author alone.
    pub async fn user_drafts<T: Listed<Item = Post>>(
        &self,
        user_id: &UserId,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let unpublished = [PostStatus::Draft, PostStatus::Scheduled].map(PostStatus::as_str);
        let query = Query::in_partition(user_partition(user_id))
            .of_type(Post::TYPE)
            .filter("status", FilterOp::In, Value::from(unpublished.to_vec()))
            .order_by("creationDate", SortOrder::Descending);
        let list = format!("drafts:{user_id}");
        self.user_page(user_id, &query, &list, page).await
    }
}
