//! The Atom feeds (RFC 4287): the front page's (`/feed.atom`, the feed cache like Q6) and
//! each author's (`/users/{userId}/feed.atom`, one Q3 request). An entry is a post: its
//! id, title, author, dates, its short form as the summary and a link to its page.
//!
//! Links are absolute, from the site's public address ([`super::site`]), never from the
//! request's host. Ids never change (RFC 4287 §4.2.6): an entry's is a `urn:uuid:` made from
//! the post's id (the id itself when it is a UUID, in `single`), a feed's one made from what
//! it lists, so neither moves with the host name, the public address or a title.

use atom_syndication::{
    Entry, EntryBuilder, Feed, FeedBuilder, FixedDateTime, LinkBuilder, PersonBuilder, Text,
};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::context::PageBase;
use super::excerpt::{LIST_EXCERPT_CHARS, excerpt_of_short};
use super::page_caches::FeedChange;
use super::pages::{canonical_post_href, tag_href, user_href};
use super::site::Site;
use crate::blog::{Blog, ListRequest, PageSize};
use crate::domain::{Post, Tag, TenantId, Timestamp, UserId};
use crate::error::{Error, Result};
use crate::http::AppState;
use crate::http::paths::{TagPath, UserPath};
use crate::http::tenants::CurrentScope;

/// Entries per feed: the latest posts, as many as a page of the API's lists.
pub const FEED_ENTRIES: PageSize = PageSize::DEFAULT;

pub const CONTENT_TYPE: &str = "application/atom+xml; charset=utf-8";

/// A feed's format: how one [`FeedList`] is written out and what type it is served as. The
/// handlers below serve each format at the same stems (`/feed.atom` with [`Atom`],
/// `/feed.json` with [`super::json_feed::JsonFeed`]).
pub trait FeedFormat {
    const CONTENT_TYPE: &'static str;

    /// The feed of `list`, which last changed at `updated` ([`Feeds::changed_at`]).
    fn body(feeds: &Feeds, list: &FeedList, updated: Timestamp) -> Result<String>;
}

/// Atom (RFC 4287).
pub struct Atom;

impl FeedFormat for Atom {
    const CONTENT_TYPE: &'static str = CONTENT_TYPE;

    fn body(feeds: &Feeds, list: &FeedList, updated: Timestamp) -> Result<String> {
        Ok(feeds.atom(list, updated).to_string())
    }
}

/// `/feed.{atom,json}`: the front page's latest posts, from the feed cache (Q6).
pub async fn front_feed<F: FeedFormat>(feeds: Feeds) -> Result<Response> {
    let list = feeds.front().await?;
    answer::<F>(&feeds, &list)
}

/// `/users/{userId}/feed.{atom,json}`: the author's latest posts, from one Q3 page.
pub async fn author_feed<F: FeedFormat>(feeds: Feeds, UserPath(id): UserPath) -> Result<Response> {
    let list = feeds.author(&id).await?;
    answer::<F>(&feeds, &list)
}

/// `/tags/{tag}/feed.{atom,json}`: the tag's newest published posts, from one Q8 page.
pub async fn tag_feed<F: FeedFormat>(feeds: Feeds, TagPath(tag): TagPath) -> Result<Response> {
    let list = feeds.tag(&tag).await?;
    answer::<F>(&feeds, &list)
}

/// What one feed lists and says of itself, in whichever format it is served: its posts,
/// newest first, its title, its id, and its paths (a path from the site's root).
pub struct FeedList {
    pub posts: Vec<Post>,
    pub title: String,
    pub id: String,
    /// The feed's path without its extension (`/feed`, `/users/ada/feed`): the Atom feed is
    /// at `{stem}.atom`, the JSON Feed at `{stem}.json`.
    pub stem: String,
    /// The page that shows the same posts.
    pub page: String,
}

/// The namespace of the feeds' and entries' `urn:uuid:` ids (a UUID drawn once for them):
/// with what an id names, it gives the same UUID on every server, forever.
const ID_NAMESPACE: Uuid = Uuid::from_u128(0x6c1e_4a4b_8f3d_4e0a_9d3b_2b7a_51c0_e6f1);

fn date(at: Timestamp) -> FixedDateTime {
    FixedDateTime::parse_from_rfc3339(&at.to_string()).unwrap_or_default()
}

/// A blog's feeds: the blog (its operations and its feed cache), where the site is, the blog's
/// base path and its tenant (from the request's extensions, which the router sets).
pub struct Feeds {
    pub site: Arc<Site>,
    pub base: String,
    pub tenant: Option<TenantId>,
    scope: CurrentScope,
}

impl FromRequestParts<AppState> for Feeds {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let site = Site::of(&parts.extensions).ok_or_else(|| {
            Error::Internal("a feed was served without the site's settings".into()).into_response()
        })?;
        let scope = CurrentScope::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let tenant = parts.extensions.get::<TenantId>().cloned();
        Ok(Self {
            site,
            base: PageBase::of(tenant.as_ref()).0,
            tenant,
            scope,
        })
    }
}

impl Feeds {
    /// The front page's feed: the feed cache's newest posts, like Q6.
    pub async fn front(&self) -> Result<FeedList> {
        let CurrentScope(scope) = &self.scope;
        let items = scope.feed.items(&scope.blog).await?;
        let posts = items
            .iter()
            .take(FEED_ENTRIES.get() as usize)
            .map(|item| serde_json::from_str::<Post>(item))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(FeedList {
            posts,
            title: format!("{}: latest posts", self.site.title),
            id: self.id(&["feed"]),
            stem: format!("{}/feed", self.base),
            page: format!("{}/", self.base),
        })
    }

    /// An author's feed: one Q3 page.
    pub async fn author(&self, user_id: &UserId) -> Result<FeedList> {
        let page = self
            .blog()
            .user_posts::<Post>(user_id, ListRequest::first(FEED_ENTRIES))
            .await?;
        let author_page = user_href(&self.base, user_id);
        let title = match page.items.first() {
            Some(post) => format!("{}: posts by {}", self.site.title, post.user_username),
            None => format!("{}: posts by this author", self.site.title),
        };
        Ok(FeedList {
            posts: page.items.clone(),
            title,
            id: self.id(&["author", user_id.as_str()]),
            stem: format!("{author_page}/feed"),
            page: author_page,
        })
    }

    /// A tag's feed: one Q8 page.
    pub async fn tag(&self, tag: &Tag) -> Result<FeedList> {
        let page = self
            .blog()
            .tag_posts::<Post>(tag, ListRequest::first(FEED_ENTRIES))
            .await?;
        let tag_page = tag_href(&self.base, tag.as_str());
        Ok(FeedList {
            posts: page.items.clone(),
            title: format!("{}: posts tagged {tag}", self.site.title),
            id: self.id(&["tag", tag.as_str()]),
            stem: format!("{tag_page}/feed"),
            page: tag_page,
        })
    }

    fn blog(&self) -> &Blog {
        &self.scope.0.blog
    }

    pub fn url(&self, path: &str) -> String {
        self.site.public_url.join(path)
    }

    /// The id of what `parts` name in this blog: a `urn:uuid:` that no host, address or
    /// title changes.
    pub fn id(&self, parts: &[&str]) -> String {
        let tenant = self.tenant.as_ref().map_or("", |t| t.as_str());
        let name = std::iter::once(tenant)
            .chain(parts.iter().copied())
            .collect::<Vec<_>>()
            .join("\n");
        Uuid::new_v5(&ID_NAMESPACE, name.as_bytes())
            .urn()
            .to_string()
    }

    /// A post's id: the post's own UUID where it is one and the blog is the only one; else
    /// one made from the tenant and the post's id (a post imported into two tenants keeps
    /// two ids).
    pub fn entry_id(&self, post: &Post) -> String {
        match (&self.tenant, Uuid::parse_str(post.id.as_str())) {
            (None, Ok(uuid)) => uuid.urn().to_string(),
            _ => self.id(&["post", post.id.as_str()]),
        }
    }

    /// When `list` last changed as this server has seen it: the first time it served the list
    /// as it is now (a digest of its posts tells), and never before its newest post's
    /// `updated`. So the date moves with every change a reader would see: a post published
    /// (however long ago it was written), edited, deleted or unpublished, an author renamed;
    /// and an empty feed is dated too. A server that has not served the list before (just
    /// started, or another instance) dates it from then: a reader's conditional GET is then
    /// answered in full once, never `304` for a list it has not seen.
    pub fn changed_at(&self, list: &FeedList) -> Timestamp {
        let digest = digest_of(list);
        let changes = &self.site.caches.feed_changes;
        if let Some(seen) = changes.get(&list.id).filter(|seen| seen.digest == digest) {
            return seen.at;
        }
        let now = Timestamp::now();
        let at = list
            .posts
            .iter()
            .map(Post::updated)
            .fold(now, Timestamp::max);
        changes.insert(list.id.clone(), FeedChange { digest, at });
        at
    }

    /// `list` as an Atom feed, last changed at `updated`.
    fn atom(&self, list: &FeedList, updated: Timestamp) -> Feed {
        FeedBuilder::default()
            .id(list.id.clone())
            .title(Text::plain(list.title.clone()))
            .subtitle(Some(Text::plain(self.site.description.clone())))
            .updated(date(updated))
            .links(vec![
                LinkBuilder::default()
                    .href(self.url(&format!("{}.atom", list.stem)))
                    .rel("self")
                    .mime_type(Some("application/atom+xml".to_owned()))
                    .build(),
                LinkBuilder::default()
                    .href(self.url(&list.page))
                    .rel("alternate")
                    .mime_type(Some("text/html".to_owned()))
                    .build(),
            ])
            .entries(
                list.posts
                    .iter()
                    .map(|post| self.entry(post))
                    .collect::<Vec<_>>(),
            )
            .build()
    }

    fn entry(&self, post: &Post) -> Entry {
        let link = self.url(&canonical_post_href(&self.base, post));
        let author = PersonBuilder::default()
            .name(post.user_username.clone())
            .uri(Some(self.url(&user_href(&self.base, &post.user_id))))
            .build();
        EntryBuilder::default()
            .id(self.entry_id(post))
            .title(Text::plain(post.title.clone()))
            .authors(vec![author])
            .published(Some(date(post.list_date())))
            // An edit moves it (readers show the post again), and it is never before the
            // post's publication.
            .updated(date(post.updated()))
            .summary(Some(Text::plain(excerpt_of_short(
                &post.short().content,
                LIST_EXCERPT_CHARS,
            ))))
            .links(vec![
                LinkBuilder::default()
                    .href(link)
                    .rel("alternate")
                    .mime_type(Some("text/html".to_owned()))
                    .build(),
            ])
            .build()
    }
}

/// The feed as the response, in its format, with its `Last-Modified` (when it last changed,
/// [`Feeds::changed_at`]); the pages' conditional layer adds the `ETag` and answers
/// `If-None-Match` and `If-Modified-Since`.
fn answer<F: FeedFormat>(feeds: &Feeds, list: &FeedList) -> Result<Response> {
    let updated = feeds.changed_at(list);
    let mut response = (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(F::CONTENT_TYPE),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        F::body(feeds, list, updated)?,
    )
        .into_response();
    if let Some(value) = last_modified(updated) {
        response.headers_mut().insert(header::LAST_MODIFIED, value);
    }
    Ok(response)
}

/// `at` as a `Last-Modified`: an HTTP date, to the second.
fn last_modified(at: Timestamp) -> Option<HeaderValue> {
    HeaderValue::from_str(&date(at).to_rfc2822().replace("+0000", "GMT")).ok()
}

/// A digest of what `list` shows: its title and its posts as the store holds their copies
/// (every field a feed may show, and their dates).
fn digest_of(list: &FeedList) -> [u8; 32] {
    let mut context = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    context.update(list.title.as_bytes());
    for post in &list.posts {
        // Serialising a post cannot fail (strings, numbers and dates); one that did would
        // count as empty, and the list's other posts still tell it apart.
        context.update(&[0]);
        context.update(&serde_json::to_vec(post).unwrap_or_default());
    }
    let mut digest = [0u8; 32];
    digest.copy_from_slice(context.finish().as_ref());
    digest
}
