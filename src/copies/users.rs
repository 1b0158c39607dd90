//! `OnUserChanged`: a user's changes reach the copies of their name in `posts`, and an
//! erased account's marker clears up after it.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;

use super::deletes::erase_user;
use super::shared::{Report, current_version, documents_of, settle, tombstones_of};
use crate::domain::{Comment, Deleted, Like, Post, User, is_a};
use crate::store::{Container, FilterOp, Pages, Query, Store, StoreResult, rewrite_item};

/// Writes of the username fan-out in flight at once: enough to hide latency, few enough not
/// to trip the store's rate limit on one user's burst.
const FAN_OUT_CONCURRENCY: usize = 8;

/// Gives every post, comment and like of each changed user its current username.
pub async fn on_user_changed(store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
    let mut report = Report::default();
    let users = documents_of::<User>(documents, User::TYPE, |u| u.id.to_string(), &mut report);
    for delivered in users {
        let user = match current_version(store, Container::Users, delivered).await {
            // A user item is never replaced by a tombstone (an erasure deletes it and leaves
            // a marker under another id), so this does not happen; nothing to rename.
            Ok(None) => continue,
            Ok(Some(user)) => user,
            Err(e) => {
                settle(Err(e), "user read".to_owned(), &mut report)?;
                continue;
            }
        };
        let result = rename_everywhere(store, &user).await;
        settle(result, format!("user {}", user.id), &mut report)?;
    }
    for marker in tombstones_of(documents, Deleted::User, &mut report) {
        let result = erase_user(store, &marker).await;
        settle(
            result,
            format!("erasure of user {}", marker.user_id),
            &mut report,
        )?;
    }
    Ok(report)
}

async fn rename_everywhere(store: &Arc<dyn Store>, user: &User) -> StoreResult<usize> {
    // Only the items that still carry another name: a repeated batch finds none.
    let query = Query::cross_partition()
        .filter("userId", FilterOp::Eq, user.user_id.as_str())
        .filter("userUsername", FilterOp::Ne, user.username.as_str());
    let mut written = 0;
    let mut pages = Pages::new(&**store, Container::Posts, &query, 100);
    while let Some(items) = pages.next().await? {
        written += stream::iter(items)
            .map(|item| rename_item(&**store, item, &user.username))
            .buffer_unordered(FAN_OUT_CONCURRENCY)
            .try_fold(0, |sum, n| async move { Ok(sum + n) })
            .await?;
    }
    Ok(written)
}

/// Sets `userUsername` on one item of `posts`, re-reading on a race with a like or comment
/// (which rewrites the post's counts) so neither write is lost.
pub(crate) async fn rename_item(
    store: &dyn Store,
    item: Value,
    username: &str,
) -> StoreResult<usize> {
    let pk = Container::Posts.partition_key_of(&item)?;
    let Some(id) = item.get("id").and_then(Value::as_str) else {
        return Ok(0);
    };
    let renamed = rewrite_item(store, Container::Posts, &pk, id, |mut current| async move {
        // A tombstone (the post was deleted since) has no author fields to correct.
        let authored =
            is_a::<Post>(&current) || is_a::<Comment>(&current) || is_a::<Like>(&current);
        if !authored || current.get("userUsername").and_then(Value::as_str) == Some(username) {
            return Ok(None);
        }
        current["userUsername"] = Value::from(username);
        Ok(Some((current, ())))
    })
    .await?;
    Ok(usize::from(renamed.is_some()))
}
