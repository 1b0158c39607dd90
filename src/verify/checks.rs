//! The invariant checks themselves, each over one item and what it is compared with (its
//! source, its author, its children, the feed), written once and used twice: the full scan
//! of `verify` ([`super::scan`]) feeds them from what it gathered over the whole store, and
//! the delayed re-check ([`super::changes`]) from a few targeted reads around each change.
//! Each returns the violation it finds together with the targeted repair for it
//! ([`Repair`]), or `None` for a violation that no write can undo without a person.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::repair::{CopyIn, Repair};
use super::{Violation, ViolationKind};
use crate::blog::{FEED_SIZE, SCHEDULE_TYPE};
use crate::copies::SCHEDULE_DIRECTORY_ID;
use crate::domain::{Comment, Like, LikeId, Post, TenantId, Timestamp};
use crate::store::Container;

/// What the checks need of a post in `posts`: never its content, only a hash of its short form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PostSummary {
    pub author: String,
    pub created: Timestamp,
    /// When it was published; `None` while it is not: then it belongs in no feed.
    pub published: Option<Timestamp>,
    pub comment_count: u64,
    pub like_count: u64,
    /// Hash of the canonical JSON of [`Post::short`]: a copy must hash the same.
    pub short_hash: u64,
}

impl PostSummary {
    pub fn of(post: &Post) -> Self {
        Self {
            author: post.user_id.to_string(),
            created: post.creation_date,
            published: post.published_date(),
            comment_count: post.comment_count,
            like_count: post.like_count,
            short_hash: serde_json::to_value(post.short())
                .map(|short| canonical_hash(&short))
                .unwrap_or_default(),
        }
    }
}

/// The author fields of a post, comment or like in `posts`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Authored<'a> {
    /// `post`, `comment` or `like`.
    pub kind: &'static str,
    pub post_id: &'a str,
    pub id: &'a str,
    pub user_id: &'a str,
    /// The `userUsername` the item carries.
    pub username: &'a str,
    pub created: Timestamp,
}

/// The author fields of the items that have them, which all name them alike: `$post_id` is
/// the field that names the item's post (a post's own id).
macro_rules! authored_from {
    ($($item:ident by $post_id:ident),*) => {$(
        impl<'a> From<&'a $item> for Authored<'a> {
            fn from(item: &'a $item) -> Self {
                Self {
                    kind: $item::TYPE,
                    post_id: item.$post_id.as_str(),
                    id: item.id.as_str(),
                    user_id: item.user_id.as_str(),
                    username: &item.user_username,
                    created: item.creation_date,
                }
            }
        }
    )*};
}

authored_from!(Post by id, Comment by post_id, Like by post_id);

/// What the store holds of an item's author: their current username (`None`: no user item),
/// and when their account was erased, if it was.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AuthorState<'a> {
    pub username: Option<&'a str>,
    pub erased_at: Option<Timestamp>,
}

/// A violation as a check finds it, in no tenant: recording it in the report names its tenant.
pub(super) fn violation(
    kind: ViolationKind,
    container: Container,
    partition: &str,
    id: &str,
    detail: String,
    repair: Option<Repair>,
) -> Violation {
    Violation {
        kind,
        container,
        partition: partition.to_owned(),
        id: id.to_owned(),
        detail,
        tenant: None,
        repair,
    }
}

/// An item that does not read as its type: nothing to repair without a person.
pub(crate) fn unreadable(
    container: Container,
    partition: &str,
    id: &str,
    why: String,
) -> Violation {
    violation(
        ViolationKind::UnreadableItem,
        container,
        partition,
        id,
        why,
        None,
    )
}

/// A post, comment or like against its author: written before the author's erasure (the
/// erasure is finished), by no user (nothing to do), or with another username than the
/// author's (the username is set).
pub(crate) fn author(item: &Authored<'_>, author: &AuthorState<'_>) -> Option<Violation> {
    let Authored {
        kind,
        post_id,
        id,
        user_id,
        username,
        created,
    } = *item;
    if author.erased_at.is_some_and(|erased| created <= erased) {
        return Some(violation(
            ViolationKind::LeftAfterDelete,
            Container::Posts,
            post_id,
            id,
            format!("{kind} by user {user_id:?}, written before their account was erased"),
            Some(Repair::Erase {
                user_id: user_id.to_owned(),
            }),
        ));
    }
    match author.username {
        None => Some(violation(
            ViolationKind::UnknownAuthor,
            Container::Posts,
            post_id,
            id,
            format!("{kind} by user {user_id:?}, who has no user item"),
            None,
        )),
        Some(current) if current != username => Some(violation(
            ViolationKind::StaleUsername,
            Container::Posts,
            post_id,
            id,
            format!("{kind} carries username {username:?}; user {user_id:?} is {current:?}"),
            Some(Repair::Username {
                post_id: post_id.to_owned(),
                id: id.to_owned(),
                user_id: user_id.to_owned(),
            }),
        )),
        Some(_) => None,
    }
}

/// A like's id must be the one derived from its liker (one like per user per post). Two
/// likes of one user cannot be merged without a person deciding which one counts.
pub(crate) fn like_id(like: &Like) -> Option<Violation> {
    let expected = LikeId::for_liker(&like.user_id);
    (like.id != expected).then(|| {
        violation(
            ViolationKind::LikeIdMismatch,
            Container::Posts,
            like.post_id.as_str(),
            like.id.as_str(),
            format!(
                "the like of {} should have id {expected}",
                like.user_id.as_str()
            ),
            None,
        )
    })
}

/// A post's counts against its comments and likes: recounted when they differ.
pub(crate) fn counts(
    post_id: &str,
    post: &PostSummary,
    comments: u64,
    likes: u64,
) -> Option<Violation> {
    (post.comment_count != comments || post.like_count != likes).then(|| {
        violation(
            ViolationKind::CountMismatch,
            Container::Posts,
            post_id,
            post_id,
            format!(
                "commentCount {} but {comments} comments, likeCount {} but {likes} likes",
                post.comment_count, post.like_count
            ),
            Some(Repair::Recount {
                post_id: post_id.to_owned(),
            }),
        )
    })
}

/// Comments and likes in the partition of a post that is not there: those of a deleted post
/// (its delete is finished), or orphans (removed). `example` names one of them.
pub(crate) fn children_without_post(
    post_id: &str,
    deleted: bool,
    comments: u64,
    likes: u64,
    example: &str,
) -> Option<Violation> {
    if comments == 0 && likes == 0 {
        return None;
    }
    Some(if deleted {
        violation(
            ViolationKind::LeftAfterDelete,
            Container::Posts,
            post_id,
            example,
            format!("{comments} comments and {likes} likes of deleted post {post_id} are left"),
            Some(Repair::ClearDeletedPost {
                post_id: post_id.to_owned(),
            }),
        )
    } else {
        violation(
            ViolationKind::OrphanItem,
            Container::Posts,
            post_id,
            example,
            format!(
                "{comments} comments and {likes} likes of post {post_id}, which does not exist"
            ),
            Some(Repair::DeleteOrphans {
                post_id: post_id.to_owned(),
            }),
        )
    })
}

/// A post that lacks a copy its handler makes: `OnPostChanged` on the post makes it again.
fn lacks_a_copy(kind: ViolationKind, post_id: &str, detail: String) -> Violation {
    let recopy = Repair::Recopy {
        post_id: post_id.to_owned(),
    };
    violation(
        kind,
        Container::Posts,
        post_id,
        post_id,
        detail,
        Some(recopy),
    )
}

/// A live post with no copy in its author's partition of `users`: copied again.
pub(crate) fn missing_user_copy(post_id: &str, author: &str) -> Violation {
    let detail = format!("no copy in users/{author}");
    lacks_a_copy(ViolationKind::MissingUserCopy, post_id, detail)
}

/// A post copy in the `partition` (a user id) of `users` against its source post (`None`: no
/// live post): removed when it has no source or sits in another user's partition, copied
/// again when it differs from the source's short form.
pub(crate) fn user_copy(
    partition: &str,
    id: &str,
    copy_hash: u64,
    source: Option<&PostSummary>,
) -> Option<Violation> {
    let remove = || {
        Some(Repair::DeleteCopy {
            copy_in: CopyIn::Users,
            partition: partition.to_owned(),
            id: id.to_owned(),
        })
    };
    let (kind, detail, repair) = match source {
        None => (
            ViolationKind::OrphanUserCopy,
            format!("post {id} does not exist"),
            remove(),
        ),
        Some(source) if source.author != partition => (
            ViolationKind::MisplacedUserCopy,
            format!("post {id} is by {:?}, not by {partition:?}", source.author),
            remove(),
        ),
        Some(source) if source.short_hash == copy_hash => return None,
        Some(_) => (
            ViolationKind::UserCopyDiffers,
            format!("differs from the short form of post {id}"),
            Some(Repair::Recopy {
                post_id: id.to_owned(),
            }),
        ),
    };
    Some(violation(
        kind,
        Container::Users,
        partition,
        id,
        detail,
        repair,
    ))
}

/// A feed item against its source post (`None`: no live post): removed (and the feed refilled)
/// when it has no source, copied again when it differs from the source's short form. Whether
/// the post belongs in the feed at all is [`missing_from_feed`]'s and [`old_post_in_feed`]'s.
pub(crate) fn feed_copy(
    id: &str,
    copy_hash: u64,
    source: Option<&PostSummary>,
) -> Option<Violation> {
    let (kind, detail, repair) = match source {
        None => (
            ViolationKind::OrphanFeedCopy,
            format!("post {id} does not exist"),
            Repair::DeleteCopy {
                copy_in: CopyIn::Feed,
                partition: Post::TYPE.to_owned(),
                id: id.to_owned(),
            },
        ),
        Some(source) if source.published.is_none() => (
            ViolationKind::UnpublishedInFeed,
            format!("post {id} is not published"),
            Repair::DeleteCopy {
                copy_in: CopyIn::Feed,
                partition: Post::TYPE.to_owned(),
                id: id.to_owned(),
            },
        ),
        Some(source) if source.short_hash == copy_hash => return None,
        Some(_) => (
            ViolationKind::FeedCopyDiffers,
            format!("differs from the short form of post {id}"),
            Repair::Recopy {
                post_id: id.to_owned(),
            },
        ),
    };
    Some(violation(
        kind,
        Container::Feed,
        Post::TYPE,
        id,
        detail,
        Some(repair),
    ))
}

/// A post that belongs in the feed and is not in it: copied again (which admits it to the
/// feed and trims what it pushes out).
pub(crate) fn missing_from_feed(post_id: &str, detail: String) -> Violation {
    lacks_a_copy(ViolationKind::MissingFromFeed, post_id, detail)
}

/// A post in the feed although more recent posts are left out: once those are copied in, the
/// feed's trim takes it out.
pub(crate) fn old_post_in_feed(id: &str, detail: String) -> Violation {
    violation(
        ViolationKind::OldPostInFeed,
        Container::Feed,
        Post::TYPE,
        id,
        detail,
        Some(Repair::Feed),
    )
}

/// Feed items past the feed's bound of [`FEED_SIZE`]: trimmed.
pub(crate) fn feed_over_bound(ids: &[String], held: usize) -> Vec<Violation> {
    ids.iter()
        .map(|id| {
            violation(
                ViolationKind::FeedOverBound,
                Container::Feed,
                Post::TYPE,
                id,
                format!("the feed holds {held} items, {FEED_SIZE} at most"),
                Some(Repair::Feed),
            )
        })
        .collect()
}

/// A hash of a JSON value that does not depend on the order of object fields, so that a copy
/// read back from the store compares with a short form built here.
pub(crate) fn canonical_hash(value: &Value) -> u64 {
    fn feed(value: &Value, state: &mut DefaultHasher) {
        match value {
            Value::Null => 0u8.hash(state),
            Value::Bool(b) => (1u8, b).hash(state),
            Value::Number(n) => (2u8, n.to_string()).hash(state),
            Value::String(s) => (3u8, s).hash(state),
            Value::Array(items) => {
                (4u8, items.len()).hash(state);
                items.iter().for_each(|item| feed(item, state));
            }
            Value::Object(fields) => {
                (5u8, fields.len()).hash(state);
                let mut names: Vec<&String> = fields.keys().collect();
                names.sort_unstable();
                for name in names {
                    name.hash(state);
                    feed(&fields[name], state);
                }
            }
        }
    }
    // `DefaultHasher::new` has fixed keys: the same value hashes the same within a process.
    let mut state = DefaultHasher::new();
    feed(value, &mut state);
    state.finish()
}

/// A scheduled post whose schedule entry is missing or differs: `OnPostChanged` on the post
/// writes it.
pub(crate) fn missing_schedule_entry(post_id: &str, detail: String) -> Violation {
    lacks_a_copy(ViolationKind::MissingScheduleEntry, post_id, detail)
}

/// What became of the post of a schedule entry that should not be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryPost {
    /// Live, but not scheduled: `OnPostChanged` on it takes the entry out.
    Live,
    /// A tombstone: its clean-up takes the entry out.
    Deleted,
    /// Nowhere: the entry goes alone.
    Missing,
}

/// A schedule entry whose post is not scheduled.
pub(crate) fn orphan_schedule_entry(id: &str, post: EntryPost) -> Violation {
    let post_id = id.to_owned();
    let (detail, repair) = match post {
        EntryPost::Live => ("the post is not scheduled", Repair::Recopy { post_id }),
        EntryPost::Deleted => ("the post was deleted", Repair::ClearDeletedPost { post_id }),
        EntryPost::Missing => (
            "no such post",
            Repair::DeleteCopy {
                copy_in: CopyIn::Schedule,
                partition: SCHEDULE_TYPE.to_owned(),
                id: post_id,
            },
        ),
    };
    violation(
        ViolationKind::OrphanScheduleEntry,
        Container::Feed,
        SCHEDULE_TYPE,
        id,
        detail.to_owned(),
        Some(repair),
    )
}

/// A tenant with schedule entries that the publisher's directory does not list.
pub(crate) fn tenant_not_in_schedule_directory(tenant: &TenantId) -> Violation {
    violation(
        ViolationKind::TenantNotInScheduleDirectory,
        Container::Leases,
        SCHEDULE_DIRECTORY_ID,
        tenant.as_str(),
        "its scheduled posts would never publish".to_owned(),
        Some(Repair::Enlist {
            tenant: tenant.as_str().to_owned(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_field_order_but_not_values() {
        let a = json!({"a": 1, "b": {"x": "y", "z": [1, 2]}});
        let b: Value = serde_json::from_str(r#"{"b": {"z": [1, 2], "x": "y"}, "a": 1}"#).unwrap();
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
        let c = json!({"a": 1, "b": {"x": "y", "z": [2, 1]}});
        assert_ne!(canonical_hash(&a), canonical_hash(&c));
        assert_ne!(
            canonical_hash(&json!({"a": "1"})),
            canonical_hash(&json!({"a": 1}))
        );
    }

    #[test]
    fn each_repairable_check_names_its_repair() {
        let date = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let stale = Authored {
            kind: "comment",
            post_id: "p",
            id: "c",
            user_id: "u",
            username: "Old",
            created: date,
        };
        let renamed = AuthorState {
            username: Some("New"),
            erased_at: None,
        };
        let found = author(&stale, &renamed).unwrap();
        assert_eq!(found.kind, ViolationKind::StaleUsername);
        assert_eq!(
            found.repair,
            Some(Repair::Username {
                post_id: "p".into(),
                id: "c".into(),
                user_id: "u".into(),
            })
        );
        let erased = AuthorState {
            username: Some("Old"),
            erased_at: Some(date),
        };
        assert_eq!(
            author(&stale, &erased).unwrap().repair,
            Some(Repair::Erase {
                user_id: "u".into()
            })
        );
        let unknown = author(&stale, &AuthorState::default()).unwrap();
        assert_eq!(
            (unknown.kind, unknown.repair),
            (ViolationKind::UnknownAuthor, None)
        );
        let current = AuthorState {
            username: Some("Old"),
            erased_at: None,
        };
        assert!(author(&stale, &current).is_none());

        let source = PostSummary {
            author: "u".into(),
            created: date,
            published: Some(date),
            comment_count: 1,
            like_count: 0,
            short_hash: 7,
        };
        assert!(counts("p", &source, 1, 0).is_none());
        assert_eq!(
            counts("p", &source, 2, 0).unwrap().repair,
            Some(Repair::Recount {
                post_id: "p".into()
            })
        );
        assert!(user_copy("u", "p", 7, Some(&source)).is_none());
        assert_eq!(
            user_copy("v", "p", 7, Some(&source)).unwrap().kind,
            ViolationKind::MisplacedUserCopy
        );
        assert_eq!(
            feed_copy("p", 8, Some(&source)).unwrap().repair,
            Some(Repair::Recopy {
                post_id: "p".into()
            })
        );
        assert_eq!(
            feed_copy("p", 7, None).unwrap().kind,
            ViolationKind::OrphanFeedCopy
        );
    }
}
