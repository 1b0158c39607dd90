//! What a delete leaves behind. Cosmos DB's latest-version change feed does not deliver
//! deletes, so a plain delete of a post would leave its copies in `users` and `feed` for ever.
//! Instead a deleted post, or an erased account, becomes a *tombstone*: an item of type
//! `tombstone` that the change-feed handlers see and act on (removing copies, comments, likes,
//! a user's content), and that the store purges by itself after its time-to-live.
//!
//! A tombstone has its own `type`, so every query for posts or users leaves tombstones out
//! without a filter of its own, and a tombstone can never be read as a post or a user.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::items::{TombstoneKind, Typed, typed};
use super::{Post, PostId, Timestamp, UserId};

/// How long a tombstone stays before the store purges it: the retention window. It must
/// outlast every retry of a change-feed trigger (the Functions retry policy gives up after
/// about 25 minutes) and an embedded pump that was stopped for a while; after it, `rebuild`
/// still removes any copy left behind.
pub const TOMBSTONE_TTL_SECONDS: u32 = 7 * 24 * 60 * 60;

/// What was deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Deleted {
    /// A post: the tombstone takes the post's place (same id, same partition).
    Post,
    /// A whole account: the user item is deleted and this marker, in the user's partition
    /// of `users`, asks for everything they wrote up to `deletedAt` to be erased.
    User,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tombstone {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: TombstoneKind,
    pub of: Deleted,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_id: Option<PostId>,
    pub user_id: UserId,
    /// A post tombstone keeps the post's creation date, which sorts it before every comment
    /// and like of the post: the first page of Q4 or Q5 meets it, and answers 404, in the
    /// same single query (see `Blog::children`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_date: Option<Timestamp>,
    pub deleted_at: Timestamp,
    /// Seconds until the store purges the tombstone (Cosmos DB's per-item time-to-live).
    pub ttl: u32,
}

/// Namespace of the ids of account tombstones (a fixed random UUID).
const ERASURE_NAMESPACE: Uuid = Uuid::from_u128(0x2b7e_91c4_5d0a_4f36_a1e8_7c3f_09d2_6e15);

typed!(Tombstone, TombstoneKind);

impl Tombstone {
    /// Replaces `post` in `posts`.
    pub(crate) fn of_post(post: &Post) -> Self {
        Self {
            id: post.post_id.to_string(),
            kind: TombstoneKind,
            of: Deleted::Post,
            post_id: Some(post.post_id.clone()),
            user_id: post.user_id.clone(),
            creation_date: Some(post.creation_date),
            deleted_at: Timestamp::now(),
            ttl: TOMBSTONE_TTL_SECONDS,
        }
    }

    /// Marks the erasure of `user_id`'s account, in their partition of `users`.
    pub(crate) fn of_user(user_id: UserId) -> Self {
        Self {
            id: Self::erasure_id(&user_id),
            kind: TombstoneKind,
            of: Deleted::User,
            post_id: None,
            user_id,
            creation_date: None,
            deleted_at: Timestamp::now(),
            ttl: TOMBSTONE_TTL_SECONDS,
        }
    }

    /// The id of a user's erasure marker: one per user (erasing again replaces it, with a
    /// later `deletedAt` that covers both), and never equal to a user id or a post id of the
    /// same partition (the user item's id is the user id itself; post ids are random UUIDs).
    pub fn erasure_id(user_id: &UserId) -> String {
        format!(
            "erasure-{}",
            Uuid::new_v5(&ERASURE_NAMESPACE, user_id.as_str().as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::domain::{PostContent, Title, User, Username};
    use serde_json::json;

    fn a_post() -> Post {
        let author = User::new(
            UserId::parse("ada").unwrap(),
            Username::parse("Ada").unwrap(),
        );
        Post::new(
            PostId::generate(),
            &author,
            Title::parse("t").unwrap(),
            PostContent::parse("secret").unwrap(),
        )
    }

    #[test]
    fn a_post_tombstone_keeps_the_post_id_partition_and_date_and_nothing_of_its_content() {
        let post = a_post();
        let value = serde_json::to_value(Tombstone::of_post(&post)).unwrap();
        let keys: BTreeSet<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let expected = [
            "creationDate",
            "deletedAt",
            "id",
            "of",
            "postId",
            "ttl",
            "type",
            "userId",
        ];
        assert_eq!(keys, BTreeSet::from(expected));
        assert_eq!(value["id"], post.post_id.as_str());
        assert_eq!(value["creationDate"], post.creation_date.to_string());
        assert_eq!(value["type"], "tombstone");
        assert_eq!(value["of"], "post");
        assert_eq!(value["ttl"], json!(TOMBSTONE_TTL_SECONDS));
    }

    #[test]
    fn an_erasure_marker_has_an_id_of_its_own_per_user() {
        let ada = UserId::parse("ada").unwrap();
        let marker = Tombstone::of_user(ada.clone());
        assert_eq!(marker.id, Tombstone::erasure_id(&ada));
        assert_ne!(marker.id, "ada");
        assert_ne!(
            marker.id,
            Tombstone::erasure_id(&UserId::parse("bob").unwrap())
        );
        let value = serde_json::to_value(&marker).unwrap();
        assert_eq!(value["of"], "user");
        assert!(value.get("postId").is_none());
        assert!(value.get("creationDate").is_none());
    }

    #[test]
    fn a_tombstone_is_never_read_as_a_post() {
        let value = serde_json::to_value(Tombstone::of_post(&a_post())).unwrap();
        assert!(serde_json::from_value::<Post>(value.clone()).is_err());
        assert!(serde_json::from_value::<Tombstone>(value).is_ok());
    }
}
