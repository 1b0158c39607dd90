//! The items of the V3 model (users, posts, comments, likes), exactly as stored. Serialising one gives the stored
//! JSON; deserialising ignores Cosmos DB system properties (`_rid`, `_etag`, ...), which is
//! how responses come to carry none of them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    CommentContent, CommentId, LikeId, PostContent, PostId, PostStatus, Publication, Tag, Tags,
    Timestamp, Title, UserId, Username,
};

/// Lists of posts (a user's posts, the feed) carry the content cut to this many characters.
pub const SHORT_CONTENT_CHARS: usize = 200;

/// A `type` discriminator that serialises as one fixed string and refuses any other on the
/// way in, so a `Post` can never be read from a comment.
macro_rules! kind_tag {
    ($name:ident, $tag:literal) => {
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;

        impl $name {
            pub(crate) const TAG: &'static str = $tag;
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($tag)
            }
        }

        /// Inlined where used: a one-value enum that tells the kinds of item apart.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$tag]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let tag = String::deserialize(d)?;
                if tag == $tag {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(format!(
                        "expected type {:?}, found {tag:?}",
                        $tag
                    )))
                }
            }
        }
    };
}

/// An item kind with its `type` tag, so a read can tell "absent" from "another kind of item
/// under this id" (a tombstone where a post was, a like asked for as a comment).
pub trait Typed {
    const TYPE: &'static str;
}

/// Whether a stored item is a `T`, by its `type` tag.
pub fn is_a<T: Typed>(item: &serde_json::Value) -> bool {
    item.get("type").and_then(serde_json::Value::as_str) == Some(T::TYPE)
}

/// Whether an item, as its stored JSON text, is a `T`, by its `type` tag alone: the other
/// fields are skipped, not parsed into anything.
pub fn is_stored_a<T: Typed>(item: &serde_json::value::RawValue) -> bool {
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<Tag<'_>>(item.get())
        .is_ok_and(|tag| tag.kind.as_deref() == Some(T::TYPE))
}

/// Makes `$item` a [`Typed`] kind whose tag is its `$kind`'s, and names that tag `$item::TYPE`
/// too, so a query can say `Post::TYPE` without the trait in scope.
macro_rules! typed {
    ($item:ident, $kind:ident) => {
        impl Typed for $item {
            const TYPE: &'static str = $kind::TAG;
        }

        impl $item {
            pub(crate) const TYPE: &'static str = $kind::TAG;
        }
    };
}
pub(super) use typed;

kind_tag!(UserKind, "user");
kind_tag!(PostKind, "post");
kind_tag!(CommentKind, "comment");
kind_tag!(LikeKind, "like");
kind_tag!(TombstoneKind, "tombstone");
kind_tag!(MonthKind, "month");

/// A user item (C1, Q1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub id: UserId,
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: UserKind,
    /// Equal to `id`: the partition key of `users`.
    pub user_id: UserId,
    /// 1–64 characters, trimmed.
    #[schema(min_length = 1, max_length = 64, example = "Ada")]
    pub username: String,
}

typed!(User, UserKind);

impl User {
    pub fn new(user_id: UserId, username: Username) -> Self {
        Self {
            id: user_id.clone(),
            kind: UserKind,
            user_id,
            username: username.into_inner(),
        }
    }
}

/// A post in `posts` (full content), or its short copy in `users` and `feed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Post {
    pub id: PostId,
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: PostKind,
    /// Equal to `id`: the partition key of `posts`.
    pub post_id: PostId,
    /// The author's id.
    pub user_id: UserId,
    /// The author's current username (kept up to date through the change feed).
    #[schema(min_length = 1, max_length = 64, example = "Ada")]
    pub user_username: String,
    /// 1–300 characters, trimmed.
    #[schema(min_length = 1, max_length = 300, example = "Hello")]
    pub title: String,
    /// The full content (1–100,000 characters) when one post is read or written; cut to its
    /// first 200 characters in lists (a user's posts, the feed).
    #[schema(min_length = 1, max_length = 100_000, example = "My first post")]
    pub content: String,
    #[schema(minimum = 0)]
    pub comment_count: u64,
    #[schema(minimum = 0)]
    pub like_count: u64,
    pub creation_date: Timestamp,
    /// `published` (the default: an item stored before posts had a status is published),
    /// `draft` or `scheduled`. Only a published post is seen by anyone but its author.
    #[serde(default)]
    #[schema(required = true)]
    pub status: PostStatus,
    /// When the title or content last changed; absent until the post is first edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub modified_date: Option<Timestamp>,
    /// When a `scheduled` post publishes itself; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub publish_at: Option<Timestamp>,
    /// When the post was last published (its `creationDate` for a post published when it was
    /// written); lists and feeds order by it. Absent while the post is not published, and on
    /// items stored before posts had a status, whose publication is their creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub published_date: Option<Timestamp>,
    /// Up to 10 tags, normalised (trimmed, lower-case, inner white space as `-`), each once;
    /// absent when the post has none. `GET /api/tags/{tag}/posts` lists a tag's posts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Tag>, max_items = 10, example = json!(["rust", "cosmos-db"]))]
    pub tags: Vec<String>,
}

typed!(Post, PostKind);

impl Post {
    /// A new published post of `author`, with the id the caller chose for it: generated
    /// ([`PostId::generate`]) or derived from an idempotency key.
    pub fn new(post_id: PostId, author: &User, title: Title, content: PostContent) -> Self {
        Self::with_publication(post_id, author, title, content, Publication::Publish)
    }

    /// [`Post::new`], published, kept as a draft or scheduled as `publication` asks.
    pub fn with_publication(
        post_id: PostId,
        author: &User,
        title: Title,
        content: PostContent,
        publication: Publication,
    ) -> Self {
        let mut post = Self {
            id: post_id.clone(),
            kind: PostKind,
            post_id,
            user_id: author.user_id.clone(),
            user_username: author.username.clone(),
            title: title.into_inner(),
            content: content.into_inner(),
            comment_count: 0,
            like_count: 0,
            creation_date: Timestamp::now(),
            status: PostStatus::Published,
            modified_date: None,
            publish_at: None,
            published_date: None,
            tags: Vec::new(),
        };
        let created = post.creation_date;
        post.set_publication(publication, created);
        post
    }

    /// The same post carrying `tags` (in place of any it had).
    pub fn tagged(self, tags: &Tags) -> Self {
        Self {
            tags: tags.iter().map(|tag| tag.as_str().to_owned()).collect(),
            ..self
        }
    }

    /// Whether everyone may see the post: the one test of every list, feed and view.
    pub fn is_published(&self) -> bool {
        self.status == PostStatus::Published
    }

    /// When the post was published, the date lists and feeds order it by; `None` while it is
    /// unpublished. An item stored before posts had a status was published when created.
    pub fn published_date(&self) -> Option<Timestamp> {
        self.is_published()
            .then(|| self.published_date.unwrap_or(self.creation_date))
    }

    /// The post's publication as a writer would ask for it again.
    pub fn publication(&self) -> Publication {
        match (self.status, self.publish_at) {
            (PostStatus::Published, _) => Publication::Publish,
            (PostStatus::Scheduled, Some(at)) => Publication::Schedule(at),
            // A schedule without its date cannot publish itself: it stays with its author.
            (PostStatus::Draft | PostStatus::Scheduled, _) => Publication::Draft,
        }
    }

    /// Publishes, unpublishes or schedules the post as `publication` says, at `now`. A post
    /// that is published already keeps its `publishedDate`; one that becomes published gets
    /// `now`; one that leaves publication loses it.
    pub fn set_publication(&mut self, publication: Publication, now: Timestamp) {
        let published = self.published_date();
        self.status = publication.status();
        self.publish_at = publication.publish_at();
        self.published_date = match publication {
            Publication::Publish => Some(published.unwrap_or(now)),
            Publication::Draft | Publication::Schedule(_) => None,
        };
    }

    /// When the post last changed as readers see it: its last edit or its publication,
    /// whichever came later (a draft written long ago, or a scheduled post, is new to its
    /// readers when it is published), else its creation. Never before its publication.
    pub fn updated(&self) -> Timestamp {
        let written = self.modified_date.unwrap_or(self.creation_date);
        self.published_date()
            .map_or(written, |published| written.max(published))
    }

    /// The copy that lists show: the same item with its content cut to
    /// [`SHORT_CONTENT_CHARS`] characters (never inside a character), and its
    /// `publishedDate` written out when it is published (lists order by it, and an item
    /// stored before posts had a status leaves it implicit).
    pub fn short(&self) -> Post {
        let content = match self.content.char_indices().nth(SHORT_CONTENT_CHARS) {
            Some((cut, _)) => self.content[..cut].to_owned(),
            None => self.content.clone(),
        };
        Post {
            content,
            published_date: self.published_date(),
            ..self.clone()
        }
    }

    /// The date lists of posts sort by: when it was published, or for a post not published,
    /// when it was written.
    pub fn list_date(&self) -> Timestamp {
        self.published_date().unwrap_or(self.creation_date)
    }
}

/// A comment, stored in its post's partition of `posts` (C3, Q4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub id: CommentId,
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: CommentKind,
    /// The post commented on.
    pub post_id: PostId,
    /// The author's id.
    pub user_id: UserId,
    /// The author's current username.
    #[schema(min_length = 1, max_length = 64, example = "Bob")]
    pub user_username: String,
    /// 1–10,000 characters.
    #[schema(min_length = 1, max_length = 10_000, example = "Welcome!")]
    pub content: String,
    pub creation_date: Timestamp,
}

typed!(Comment, CommentKind);

impl Comment {
    /// A new comment, with the id the caller chose for it (see [`Post::new`]).
    pub fn new(id: CommentId, post_id: PostId, author: &User, content: CommentContent) -> Self {
        Self {
            id,
            kind: CommentKind,
            post_id,
            user_id: author.user_id.clone(),
            user_username: author.username.clone(),
            content: content.into_inner(),
            creation_date: Timestamp::now(),
        }
    }
}

/// A like, stored in its post's partition of `posts` (C4, Q5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Like {
    pub id: LikeId,
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: LikeKind,
    /// The post liked.
    pub post_id: PostId,
    /// The liker's id.
    pub user_id: UserId,
    /// The liker's current username.
    #[schema(min_length = 1, max_length = 64, example = "Ada")]
    pub user_username: String,
    pub creation_date: Timestamp,
}

typed!(Like, LikeKind);

impl Like {
    pub fn new(post_id: PostId, liker: &User) -> Self {
        Self {
            id: LikeId::for_liker(&liker.user_id),
            kind: LikeKind,
            post_id,
            user_id: liker.user_id.clone(),
            user_username: liker.username.clone(),
            creation_date: Timestamp::now(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user() -> User {
        User::new(
            UserId::parse("u1").unwrap(),
            Username::parse("ada").unwrap(),
        )
    }

    fn post_with(content: &str) -> Post {
        Post::new(
            PostId::generate(),
            &user(),
            Title::parse("t").unwrap(),
            PostContent::parse(content).unwrap(),
        )
    }

    #[test]
    fn short_form_cuts_at_200_characters_not_bytes() {
        let long = "é".repeat(250);
        let short = post_with(&long).short();
        assert_eq!(short.content.chars().count(), SHORT_CONTENT_CHARS);
        assert_eq!(short.content, "é".repeat(200));
        let emoji = "👍".repeat(201);
        assert_eq!(post_with(&emoji).short().content, "👍".repeat(200));
        assert_eq!(post_with("tiny").short().content, "tiny");
    }

    #[test]
    fn user_item_has_the_specified_shape() {
        let value = serde_json::to_value(user()).unwrap();
        assert_eq!(
            value,
            json!({"id": "u1", "type": "user", "userId": "u1", "username": "ada"})
        );
    }

    /// The item's full list of fields is checked on the API's answer, which is this item, on
    /// every backend.
    #[test]
    fn a_post_item_is_typed_and_its_id_is_its_post_id() {
        let post = post_with("body");
        let value = serde_json::to_value(&post).unwrap();
        assert_eq!(value["type"], "post");
        assert_eq!(value["id"], value["postId"]);
    }

    #[test]
    fn a_post_published_when_written_was_published_at_its_creation() {
        let post = post_with("body");
        assert!(post.is_published());
        assert_eq!(post.published_date(), Some(post.creation_date));
        let value = serde_json::to_value(&post).unwrap();
        assert_eq!(value["status"], "published");
        assert_eq!(value["publishedDate"], value["creationDate"]);
    }

    #[test]
    fn publication_moves_between_draft_schedule_and_published() {
        let at = |raw| Timestamp::parse(raw).unwrap();
        let mut post = Post::with_publication(
            PostId::generate(),
            &user(),
            Title::parse("t").unwrap(),
            PostContent::parse("b").unwrap(),
            Publication::Draft,
        );
        assert!(!post.is_published());
        assert_eq!(post.published_date(), None);
        let value = serde_json::to_value(&post).unwrap();
        assert_eq!(value["status"], "draft");
        assert!(value.get("publishedDate").is_none() && value.get("publishAt").is_none());

        let later = at("2030-01-01T00:00:00Z");
        post.set_publication(Publication::Schedule(later), at("2029-01-01T00:00:00Z"));
        assert_eq!(
            (post.status, post.publish_at),
            (PostStatus::Scheduled, Some(later))
        );
        assert_eq!(post.published_date(), None);

        // Published at its time: the date is the schedule's, however late the timer runs.
        post.set_publication(Publication::Publish, later);
        assert_eq!(post.published_date(), Some(later));
        assert_eq!(post.publish_at, None);
        // Published again: the date stays.
        post.set_publication(Publication::Publish, at("2031-01-01T00:00:00Z"));
        assert_eq!(post.published_date(), Some(later));
        // Back to draft, then out again: a new date.
        post.set_publication(Publication::Draft, at("2031-01-01T00:00:00Z"));
        assert_eq!(post.published_date, None);
        post.set_publication(Publication::Publish, at("2032-01-01T00:00:00Z"));
        assert_eq!(post.published_date(), Some(at("2032-01-01T00:00:00Z")));
    }

    #[test]
    fn a_post_stored_before_posts_had_a_status_is_published_at_its_creation() {
        let mut value = serde_json::to_value(post_with("x")).unwrap();
        let fields = value.as_object_mut().unwrap();
        fields.remove("status");
        fields.remove("publishedDate");
        let post: Post = serde_json::from_value(value).unwrap();
        assert!(post.is_published());
        assert_eq!(post.published_date(), Some(post.creation_date));
    }

    #[test]
    fn reading_ignores_system_properties_and_checks_the_type() {
        let mut value = serde_json::to_value(post_with("x")).unwrap();
        value["_rid"] = json!("abc");
        value["_etag"] = json!("\"1\"");
        let post: Post = serde_json::from_value(value.clone()).unwrap();
        assert!(
            !serde_json::to_value(&post)
                .unwrap()
                .as_object()
                .unwrap()
                .contains_key("_rid")
        );
        value["type"] = json!("comment");
        assert!(serde_json::from_value::<Post>(value).is_err());
    }
}
