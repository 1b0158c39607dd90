//! What a read hands over for each item, of a list or alone: the item parsed into its type
//! (the pages and the Atom feeds render it), or the JSON the API sends for it, copied from
//! the stored text where that text is already in that form ([`WireJson`]).

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::domain::{Comment, Like, Post, PostStatus, Typed, User, UserId, WireForm, is_stored_a};
use crate::error::{Error, Result};

/// A form a read can hand its items over in.
pub trait Listed: Sized + Clone + Send + Sync + 'static {
    /// The kind of item listed.
    type Item: Typed;

    /// The item stored as `stored`.
    fn from_stored(stored: &RawValue) -> Result<Self>;

    /// The item stored as `stored` if it is of the kind listed (its `type` tag), else none.
    fn from_stored_of_kind(stored: &RawValue) -> Result<Option<Self>> {
        if is_stored_a::<Self::Item>(stored) {
            Self::from_stored(stored).map(Some)
        } else {
            Ok(None)
        }
    }
}

macro_rules! listed_as_parsed {
    ($($type:ty),+) => {$(
        impl Listed for $type {
            type Item = $type;

            fn from_stored(stored: &RawValue) -> Result<Self> {
                serde_json::from_str(stored.get()).map_err(Error::from)
            }
        }
    )+};
}

listed_as_parsed!(User, Post, Comment, Like);

/// An item as the JSON the API sends for it: the same bytes as the parsed item serialised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireJson<T> {
    json: String,
    kind: PhantomData<T>,
}

impl<T> WireJson<T> {
    pub fn as_str(&self) -> &str {
        &self.json
    }

    pub fn into_string(self) -> String {
        self.json
    }

    fn from_wire_form(json: String) -> Self {
        Self {
            json,
            kind: PhantomData,
        }
    }
}

impl<T> Listed for WireJson<T>
where
    T: WireForm + DeserializeOwned + Serialize + Clone + Send + Sync + 'static,
{
    type Item = T;

    fn from_stored(stored: &RawValue) -> Result<Self> {
        let mut json = String::new();
        if T::copy_wire_form(stored.get(), &mut json) {
            return Ok(Self::from_wire_form(json));
        }
        Self::parsed(stored)
    }

    /// The copy checks the tag with every other field: an item it takes needs no look of its
    /// own at the tag (a second pass over a post's whole content).
    fn from_stored_of_kind(stored: &RawValue) -> Result<Option<Self>> {
        let mut json = String::new();
        if T::copy_wire_form(stored.get(), &mut json) {
            return Ok(Some(Self::from_wire_form(json)));
        }
        if !is_stored_a::<T>(stored) {
            return Ok(None);
        }
        Self::parsed(stored).map(Some)
    }
}

impl<T: Serialize + DeserializeOwned> WireJson<T> {
    /// The wire form of an item whose stored text the copy refused: parsed and serialised.
    fn parsed(stored: &RawValue) -> Result<Self> {
        let item: T = serde_json::from_str(stored.get())?;
        Ok(Self::from_wire_form(serde_json::to_string(&item)?))
    }
}

/// A form of a post that tells who may see it: everyone when it is published, its author
/// alone otherwise.
pub trait Seen {
    fn is_seen_by(&self, viewer: Option<&UserId>) -> Result<bool>;
}

impl Seen for Post {
    fn is_seen_by(&self, viewer: Option<&UserId>) -> Result<bool> {
        Ok(self.is_published() || viewer == Some(&self.user_id))
    }
}

impl Seen for WireJson<Post> {
    /// Reads the two fields from the JSON (the content is skipped, not copied).
    fn is_seen_by(&self, viewer: Option<&UserId>) -> Result<bool> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Visibility<'a> {
            #[serde(default)]
            status: PostStatus,
            #[serde(borrow)]
            user_id: std::borrow::Cow<'a, str>,
        }
        let post: Visibility<'_> = serde_json::from_str(&self.json)?;
        Ok(post.status == PostStatus::Published
            || viewer.is_some_and(|viewer| viewer.as_str() == post.user_id))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(value: &serde_json::Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(value).expect("serialises")
    }

    fn post(content: &str) -> serde_json::Value {
        json!({
            "id": "3f2b8c1e-7d4a-4e9b-9c21-5a6f0e8d4b17", "type": "post",
            "postId": "3f2b8c1e-7d4a-4e9b-9c21-5a6f0e8d4b17", "userId": "ada",
            "userUsername": "Ada", "title": "Hello", "content": content,
            "commentCount": 2, "likeCount": 0, "creationDate": "2026-11-26T10:00:00.0000000Z"
        })
    }

    /// Both forms take a post, copied or (for a text the copy refuses) parsed, and give the
    /// same JSON; both take an item of another kind at the post's id for none.
    #[test]
    fn an_item_is_taken_only_of_its_own_kind_in_either_form() {
        for item in [post("plain"), post("a \"quoted\" line\nbreak")] {
            let raw = stored(&item);
            let parsed = Post::from_stored_of_kind(&raw)
                .expect("post")
                .expect("a post");
            let wire = WireJson::<Post>::from_stored_of_kind(&raw)
                .expect("post")
                .expect("a post");
            assert_eq!(wire.as_str(), serde_json::to_string(&parsed).expect("json"));
        }
        // An escape serde_json writes otherwise: the copy refuses it, the post is parsed.
        let escaped = RawValue::from_string(post("x").to_string().replace("\"x\"", "\"\\u0078\""))
            .expect("json");
        let wire = WireJson::<Post>::from_stored_of_kind(&escaped)
            .expect("post")
            .expect("a post");
        assert!(
            wire.as_str().contains("\"content\":\"x\""),
            "{}",
            wire.as_str()
        );

        let mut tombstone = post("gone");
        tombstone["type"] = json!("tombstone");
        let raw = stored(&tombstone);
        assert!(
            Post::from_stored_of_kind(&raw)
                .expect("no failure")
                .is_none()
        );
        assert!(
            WireJson::<Post>::from_stored_of_kind(&raw)
                .expect("no failure")
                .is_none()
        );
    }
}
