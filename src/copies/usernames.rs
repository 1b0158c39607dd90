//! The rename race: every changed post, comment and like gets its author's current
//! username, read after the item was written (see [`correct_usernames`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::{StreamExt, stream};
use serde::Deserialize;
use serde_json::Value;

use super::shared::{HANDLER_CONCURRENCY, Report, settle};
use super::users::rename_item;
use crate::store::{
    Container, ETag, Store, StoreError, StoreResult, read_text_field, strip_system_properties,
};

/// The author fields of a changed post, comment or like.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Authored {
    id: String,
    post_id: String,
    user_id: String,
    user_username: String,
}

/// Gives every changed post, comment and like its author's current username.
///
/// This closes the rename race that `OnUserChanged` alone leaves open: the API reads the
/// author's user, then writes the item; if the user is renamed in between and the rename's
/// fan-out query runs before the item is visible, nothing else would ever correct it. Here
/// every item's own change reads the author's username *after* the item was written, so:
///
/// - if that read sees the rename, the item is corrected here;
/// - if it does not, the rename commits after the read, hence after the item was written, and
///   the rename's fan-out query (which runs after the rename) sees the item and corrects it.
///
/// Either way the last writer of an item has read the final username, whatever order the two
/// handlers run in: the standalone pump runs them as independent tasks, and Azure Functions
/// as independent triggers, so nothing here relies on one running before the other. A
/// correction is itself a change of `posts`; it comes back through the feed and then writes
/// nothing. (On Cosmos DB this needs reads that see every write committed before them, as the
/// account's Strong or Bounded Staleness consistency gives, or Session consistency when both
/// triggers share one client; with weaker reads the argument holds once replicas catch up.)
///
/// Cost per batch: one point read of `users` per distinct author of the batch's items (a
/// batch of 100 likes of one hot post by 100 users: 100 reads; by one user: one), plus, only
/// for an item that carries another name, one replace (and a re-read if it changed since).
/// An item whose author no longer exists is left alone.
pub(super) async fn correct_usernames(
    store: &Arc<dyn Store>,
    documents: &[Value],
) -> StoreResult<Report> {
    let mut report = Report::default();
    let items = authored_items(documents);
    let authors: Vec<String> = items
        .iter()
        .map(|(authored, _)| authored.user_id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let read: Vec<(String, StoreResult<Option<String>>)> = stream::iter(authors)
        .map(|user_id| async move {
            let username = current_username(store, &user_id).await;
            (user_id, username)
        })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    let mut usernames: HashMap<String, String> = HashMap::new();
    for (user_id, result) in read {
        match result {
            Ok(Some(username)) => {
                usernames.insert(user_id, username);
            }
            // No such user: its items are left as they are.
            Ok(None) => {}
            Err(e) => settle(Err(e), format!("user {user_id} read"), &mut report)?,
        }
    }
    // Owned, so that the stream below has no borrow of the batch to carry.
    let corrections: Vec<(Authored, Value, String)> = items
        .into_iter()
        .filter_map(|(authored, document)| {
            let username = usernames.get(&authored.user_id)?;
            (&authored.user_username != username).then(|| {
                let username = username.clone();
                (authored, document.clone(), username)
            })
        })
        .collect();
    let corrected: Vec<_> = stream::iter(corrections)
        .map(|(authored, document, username)| async move {
            let result = correct_username(store, document, &username).await;
            (authored, result)
        })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    for (authored, result) in corrected {
        let what = format!("username of {} in post {}", authored.id, authored.post_id);
        settle(result, what, &mut report)?;
    }
    Ok(report)
}

/// The posts, comments and likes of a batch with their author fields, the last version of
/// each item only. Other documents (no author fields) are not this step's concern.
fn authored_items(documents: &[Value]) -> Vec<(Authored, &Value)> {
    let mut latest: HashMap<(String, String), (Authored, &Value)> = HashMap::new();
    for document in documents {
        let item_type = document.get("type").and_then(Value::as_str);
        if !matches!(item_type, Some("post" | "comment" | "like")) {
            continue;
        }
        if let Ok(authored) = Authored::deserialize(document) {
            let key = (authored.post_id.clone(), authored.id.clone());
            latest.insert(key, (authored, document));
        }
    }
    latest.into_values().collect()
}

pub(crate) async fn current_username(
    store: &Arc<dyn Store>,
    user_id: &str,
) -> StoreResult<Option<String>> {
    read_text_field(&**store, Container::Users, user_id, "username").await
}

/// Replaces the delivered version of the item with `username`, on the condition that it is
/// still the current one (its `_etag`); if it is not (a like or comment bumped the counts
/// since), re-reads and retries like the fan-out does, so no concurrent write is lost.
async fn correct_username(
    store: &Arc<dyn Store>,
    document: Value,
    username: &str,
) -> StoreResult<usize> {
    let pk = Container::Posts.partition_key_of(&document)?;
    let etag = document
        .get("_etag")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(etag) = etag {
        let mut item = document.clone();
        strip_system_properties(&mut item);
        item["userUsername"] = Value::from(username);
        match store
            .replace_item(Container::Posts, &pk, item, Some(&ETag(etag)))
            .await
        {
            Ok(_) => return Ok(1),
            Err(StoreError::NotFound) => return Ok(0),
            Err(StoreError::PreconditionFailed) => {}
            Err(e) => return Err(e),
        }
    }
    rename_item(&**store, document, username).await
}
