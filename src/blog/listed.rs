//! What a read hands over for each item, of a list or alone: the item parsed into its type
//! (the pages and the Atom feeds render it), or the JSON the API sends for it, copied from
//! the stored text where that text is already in that form ([`WireJson`]). A page of wire
//! items is written out as the API's answer as it is read, and its items are then slices of
//! that answer: a kept page holds its items' text once, not twice.

use std::marker::PhantomData;

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::list_cache::ListPage;
use crate::domain::{Comment, Like, Post, PostStatus, Typed, User, UserId, WireForm, is_stored_a};
use crate::error::{Error, Result};
use crate::store::Page;

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

    /// A page of items as a list's read hands it over.
    fn listing(page: Page<Self>) -> ListPage<Self> {
        ListPage::new(page)
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
    json: Bytes,
    kind: PhantomData<T>,
}

impl<T> WireJson<T> {
    pub fn as_bytes(&self) -> &[u8] {
        &self.json
    }

    pub fn into_bytes(self) -> Bytes {
        self.json
    }

    fn from_wire_form(json: String) -> Self {
        Self {
            json: Bytes::from(json),
            kind: PhantomData,
        }
    }
}

/// The start of a page's JSON, before its first item.
const PAGE_START: &[u8] = b"{\"items\":[";

/// The JSON of a page of a list whose items are already serialised:
/// `{"items": [...], "continuation": "<token>" | null}`.
pub fn page_json<'a>(
    items: impl Iterator<Item = &'a [u8]> + Clone,
    continuation: Option<&str>,
) -> Vec<u8> {
    let continuation = serde_json::Value::from(continuation).to_string();
    let length = items.clone().map(|item| item.len() + 1).sum::<usize>() + continuation.len();
    let mut body = Vec::with_capacity(length + 32);
    body.extend_from_slice(PAGE_START);
    for (position, item) in items.enumerate() {
        if position > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"],\"continuation\":");
    body.extend_from_slice(continuation.as_bytes());
    body.push(b'}');
    body
}

/// The page's answer, written once, with each item then a slice of it.
fn written_page<T>(mut page: Page<WireJson<T>>) -> ListPage<WireJson<T>> {
    let items = page.items.iter().map(WireJson::as_bytes);
    let body = Bytes::from(page_json(items, page.continuation.as_deref()));
    let mut at = PAGE_START.len();
    for item in &mut page.items {
        let end = at + item.json.len();
        item.json = body.slice(at..end);
        // The comma between items.
        at = end + 1;
    }
    ListPage::written(page, body)
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

    fn listing(page: Page<Self>) -> ListPage<Self> {
        written_page(page)
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
    fn audience(&self) -> Result<Audience>;

    fn is_seen_by(&self, viewer: Option<&UserId>) -> Result<bool> {
        Ok(self.audience()?.includes(viewer))
    }
}

impl Seen for Post {
    fn audience(&self) -> Result<Audience> {
        Ok(Audience::of_post(self))
    }
}

impl Seen for WireJson<Post> {
    fn audience(&self) -> Result<Audience> {
        Audience::of_json(&self.json)
    }
}

/// Who may see a post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audience {
    Everyone,
    /// A draft or a scheduled post: its author's alone.
    Author(String),
}

impl Audience {
    fn of_post(post: &Post) -> Self {
        if post.is_published() {
            Self::Everyone
        } else {
            Self::Author(post.user_id.as_str().to_owned())
        }
    }

    /// Reads the two fields from a post's JSON (the content is skipped, not copied).
    fn of_json(json: &[u8]) -> Result<Self> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Visibility<'a> {
            #[serde(default)]
            status: PostStatus,
            #[serde(borrow)]
            user_id: std::borrow::Cow<'a, str>,
        }
        let post: Visibility<'_> = serde_json::from_slice(json)?;
        Ok(if post.status == PostStatus::Published {
            Self::Everyone
        } else {
            Self::Author(post.user_id.into_owned())
        })
    }

    fn includes(&self, viewer: Option<&UserId>) -> bool {
        match self {
            Self::Everyone => true,
            Self::Author(author) => viewer.is_some_and(|viewer| viewer.as_str() == author),
        }
    }
}

/// A post in the form `T`, with who may see it, worked out once when the post is read: a kept
/// post is then checked for each reader without reading its text again.
#[derive(Debug, Clone)]
pub struct Addressed<T> {
    pub post: T,
    audience: Audience,
}

impl<T: Seen> Addressed<T> {
    fn new(post: T) -> Result<Self> {
        let audience = post.audience()?;
        Ok(Self { post, audience })
    }
}

impl<T> Seen for Addressed<T> {
    fn audience(&self) -> Result<Audience> {
        Ok(self.audience.clone())
    }

    fn is_seen_by(&self, viewer: Option<&UserId>) -> Result<bool> {
        Ok(self.audience.includes(viewer))
    }
}

impl<T: Listed<Item = Post> + Seen> Listed for Addressed<T> {
    type Item = Post;

    fn from_stored(stored: &RawValue) -> Result<Self> {
        Self::new(T::from_stored(stored)?)
    }

    fn from_stored_of_kind(stored: &RawValue) -> Result<Option<Self>> {
        T::from_stored_of_kind(stored)?.map(Self::new).transpose()
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

    /// A post's audience is the same read from the parsed post, from its wire form, and once
    /// with the post: everyone for a published post; for a draft, its author alone.
    #[test]
    fn a_post_is_seen_by_the_same_readers_in_every_form() {
        let ada = UserId::parse("ada").expect("id");
        let bob = UserId::parse("bob").expect("id");
        let published = post("out");
        let mut draft = post("not yet");
        draft["status"] = json!("draft");
        for (item, seen_by) in [
            (published, [true, true, true]),
            (draft, [false, true, false]),
        ] {
            let raw = stored(&item);
            let parsed = Post::from_stored(&raw).expect("post");
            let wire = WireJson::<Post>::from_stored(&raw).expect("post");
            let addressed = Addressed::<WireJson<Post>>::from_stored_of_kind(&raw)
                .expect("post")
                .expect("a post");
            assert_eq!(addressed.post, wire);
            for (viewer, expected) in [None, Some(&ada), Some(&bob)].into_iter().zip(seen_by) {
                for verdict in [
                    parsed.is_seen_by(viewer),
                    wire.is_seen_by(viewer),
                    addressed.is_seen_by(viewer),
                ] {
                    assert_eq!(verdict.expect("checked"), expected, "{item} by {viewer:?}");
                }
            }
        }
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
            let json = serde_json::to_string(&parsed).expect("json");
            assert_eq!(wire.as_bytes(), json.as_bytes());
        }
        // An escape serde_json writes otherwise: the copy refuses it, the post is parsed.
        let escaped = RawValue::from_string(post("x").to_string().replace("\"x\"", "\"\\u0078\""))
            .expect("json");
        let wire = WireJson::<Post>::from_stored_of_kind(&escaped)
            .expect("post")
            .expect("a post");
        let text = String::from_utf8(wire.into_bytes().to_vec()).expect("text");
        assert!(text.contains("\"content\":\"x\""), "{text}");

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

    /// A page of wire items is written out as it is listed: its answer is the page's JSON
    /// (no second writing), and each item is the same text as before, now within it.
    #[test]
    fn a_wire_page_is_written_once_and_its_items_are_slices_of_it() {
        let items: Vec<WireJson<Post>> = [post("one"), post("two, \"quoted\"")]
            .iter()
            .map(|item| WireJson::from_stored(&stored(item)).expect("post"))
            .collect();
        let texts: Vec<Vec<u8>> = items.iter().map(|item| item.as_bytes().to_vec()).collect();
        let page = WireJson::listing(Page {
            items,
            continuation: Some("next".to_owned()),
        });
        let body = page.body(|_| panic!("the page's answer is already written"));
        let answer: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(answer["continuation"], "next");
        assert_eq!(answer["items"][1]["content"], "two, \"quoted\"");
        let range = body.as_ptr_range();
        for (item, text) in page.items.iter().zip(&texts) {
            assert_eq!(item.as_bytes(), text.as_slice());
            assert!(
                range.contains(&item.as_bytes().as_ptr()),
                "a slice of the body"
            );
        }
    }
}
