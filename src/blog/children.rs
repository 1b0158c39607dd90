//! Q4 and Q5: a post's comments and likes, oldest first, one query of the post's partition.
//!
//! The first page's query also takes the post itself, which sorts before its comments and
//! likes (they come after it): in the same request it tells a post with none yet from no
//! post at all, and whether the reader may see them. A draft's or a scheduled post's are its
//! author's alone; anyone else is told that there is no such post, as Q2 tells them. Such a
//! page is never kept for others (only a published post's pages are kept). A later page is
//! reached only through the token of a first page, which outlives the post's publication: its
//! post is read beside it (one point read of the same partition, when the page is not kept).

use std::sync::Arc;

use super::storage::{listed_page, post_partition};
use super::{Blog, ListRead, ListRequest, Listed, Listing, Seen, WireJson};
use crate::domain::{Comment, Like, Post, PostId, Tombstone, UserId, is_stored_a};
use crate::error::{Error, Result};
use crate::store::{Container, Query, SortOrder};

impl Blog {
    /// Q4: comments of a post, oldest first, as `viewer` (the caller, if any) may see them.
    pub async fn comments<T: Listed<Item = Comment>>(
        &self,
        post_id: &PostId,
        viewer: Option<&UserId>,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let list = ("comments", Comment::TYPE);
        self.children(post_id, viewer, list, page).await
    }

    /// Q5: likes of a post, oldest first, as `viewer` (the caller, if any) may see them.
    pub async fn likes<T: Listed<Item = Like>>(
        &self,
        post_id: &PostId,
        viewer: Option<&UserId>,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let list = ("likes", Like::TYPE);
        self.children(post_id, viewer, list, page).await
    }

    /// One query of the post's partition for its comments or likes (`item_type`), oldest
    /// first, and for the post's tombstone, which sorts before them (it keeps the post's
    /// date): a deleted post answers 404 at once, in the same request. The query takes the
    /// post too, on the first page, which is one item longer for it.
    async fn children<T: Listed>(
        &self,
        post_id: &PostId,
        viewer: Option<&UserId>,
        (list, item_type): (&str, &'static str),
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let first = page.is_first();
        // Every page's query is the same (a continuation token holds to its query); the post
        // sorts first, so only the first page holds it.
        let query = Query::in_partition(post_partition(post_id))
            .of_types(&[item_type, Tombstone::TYPE, Post::TYPE])
            .order_by("creationDate", SortOrder::Ascending);
        let list = format!("{list}:{post_id}");
        let extra = u32::from(first);
        let mut read = match self
            .list_page::<T>(Container::Posts, &query, &list, (page, extra))
            .await?
        {
            ListRead::Kept(page) => return Ok(page),
            ListRead::Read(read) => read,
        };
        let missing = || Error::not_found("post", post_id.as_str());
        let items = &mut read.page.items;
        if items.iter().any(|item| is_stored_a::<Tombstone>(item)) {
            return Err(missing());
        }
        let post = match items.iter().position(|item| is_stored_a::<Post>(item)) {
            Some(at) => Some(WireJson::<Post>::from_stored(&items.remove(at))?),
            None if first => None,
            // A later page does not reach back to the post: whether it is still there and
            // still published (a token outlives both) is read on its own, for a page just read
            // only. A kept later page was kept with its post published, and is handed over only
            // while nothing in the partition, the post included, has changed since.
            None => {
                self.read_as::<WireJson<Post>>(
                    Container::Posts,
                    &post_partition(post_id),
                    post_id.as_str(),
                )
                .await?
            }
        };
        items.retain(|item| !is_stored_a::<Post>(item));
        let Some(post) = post else {
            return Err(missing());
        };
        if post.is_seen_by(None)? {
            self.keep(read, listed_page::<T>)
        } else if post.is_seen_by(viewer)? {
            // The author's view of their own draft: never kept, so never shown to another.
            Ok(Arc::new(listed_page::<T>(read.page)?))
        } else {
            Err(missing())
        }
    }
}
