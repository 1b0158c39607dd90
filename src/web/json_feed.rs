//! JSON Feed 1.1 (<https://jsonfeed.org/version/1.1>) beside each Atom feed: `/feed.json`,
//! `/users/{userId}/feed.json` and `/tags/{tag}/feed.json`. The same posts, ids and links as the Atom feed of the same
//! stem ([`super::atom::FeedList`]): a reader that follows both sees one post once. Any list of
//! posts becomes one through [`document`].

use serde::Serialize;

use super::atom::{FeedFormat, FeedList, Feeds};
use super::excerpt::{LIST_EXCERPT_CHARS, excerpt_of_short};
use super::pages::{canonical_post_href, user_href};
use crate::domain::{Post, Timestamp};
use crate::error::Result;

pub const CONTENT_TYPE: &str = "application/feed+json; charset=utf-8";

const VERSION: &str = "https://jsonfeed.org/version/1.1";

/// JSON Feed 1.1, served by the feed handlers of [`super::atom`].
pub struct JsonFeed;

impl FeedFormat for JsonFeed {
    const CONTENT_TYPE: &'static str = CONTENT_TYPE;

    /// JSON Feed has no date of the feed's own: `updated` is in its `Last-Modified` alone.
    fn body(feeds: &Feeds, list: &FeedList, _updated: Timestamp) -> Result<String> {
        Ok(serde_json::to_string(&document(feeds, list))?)
    }
}

/// A JSON Feed document (the fields this blog has to say).
#[derive(Serialize)]
pub struct Document {
    version: &'static str,
    title: String,
    home_page_url: String,
    feed_url: String,
    description: String,
    language: &'static str,
    items: Vec<Item>,
}

#[derive(Serialize)]
struct Item {
    id: String,
    url: String,
    title: String,
    /// The post's text, made plain and cut at a word (the lists' excerpt).
    content_text: String,
    summary: String,
    date_published: String,
    date_modified: String,
    authors: Vec<Author>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
}

#[derive(Serialize)]
struct Author {
    name: String,
    url: String,
}

/// `list` as a JSON Feed of `feeds`' blog: absolute links from the public address, the same
/// ids as the Atom feed's entries.
pub fn document(feeds: &Feeds, list: &FeedList) -> Document {
    Document {
        version: VERSION,
        title: list.title.clone(),
        home_page_url: feeds.url(&list.page),
        feed_url: feeds.url(&format!("{}.json", list.stem)),
        description: feeds.site.description.clone(),
        language: "en",
        items: list.posts.iter().map(|post| item(feeds, post)).collect(),
    }
}

fn item(feeds: &Feeds, post: &Post) -> Item {
    let text = excerpt_of_short(&post.short().content, LIST_EXCERPT_CHARS);
    Item {
        id: feeds.entry_id(post),
        url: feeds.url(&canonical_post_href(&feeds.base, post)),
        title: post.title.clone(),
        content_text: text.clone(),
        summary: text,
        date_published: post.list_date().to_string(),
        // Never before its publication (see `Post::updated`).
        date_modified: post.updated().to_string(),
        authors: vec![Author {
            name: post.user_username.clone(),
            url: feeds.url(&user_href(&feeds.base, &post.user_id)),
        }],
        tags: post.tags.clone(),
    }
}
