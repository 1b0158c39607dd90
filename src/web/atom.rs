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

use super::context::PageBase;
use super::pages::{post_href, tag_href, user_href};
use super::site::Site;
use crate::api::extract::PathParam;
use crate::api::tenants::{CurrentBlog, CurrentScope};
use crate::blog::PageSize;
use crate::domain::{Post, Tag, TenantId, Timestamp, UserId};
use crate::error::{Error, Result};

/// Entries per feed: the latest posts, as many as a page of the API's lists.
const FEED_ENTRIES: PageSize = PageSize::DEFAULT;

pub const CONTENT_TYPE: &str = "application/atom+xml; charset=utf-8";

/// `/feed.atom`.
pub async fn front_feed(
    site: Option<axum::Extension<std::sync::Arc<Site>>>,
    base: Option<axum::Extension<PageBase>>,
    tenant: Option<axum::Extension<TenantId>>,
    CurrentScope(scope): CurrentScope,
) -> Result<Response> {
    let site = site_of(site)?;
    let base = base.map(|b| b.0.0).unwrap_or_default();
    let tenant = tenant.map(|t| t.0);
    let items = scope.feed.items(&scope.blog).await?;
    let posts = items
        .iter()
        .take(FEED_ENTRIES.get() as usize)
        .map(|item| serde_json::from_str::<Post>(item))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let about = Feeds {
        site: &site,
        base: &base,
        tenant: tenant.as_ref(),
    };
    let feed = about.feed_of(
        &posts,
        "Cosmos Blog: latest posts",
        about.id(&["feed"]),
        &format!("{base}/feed.atom"),
        &format!("{base}/"),
    );
    Ok(answer(&feed, &posts))
}

/// `/users/{userId}/feed.atom`: the author's latest posts, from one Q3 page.
pub async fn author_feed(
    site: Option<axum::Extension<std::sync::Arc<Site>>>,
    base: Option<axum::Extension<PageBase>>,
    tenant: Option<axum::Extension<TenantId>>,
    CurrentBlog(blog): CurrentBlog,
    PathParam(user_id): PathParam,
) -> Result<Response> {
    let site = site_of(site)?;
    let base = base.map(|b| b.0.0).unwrap_or_default();
    let tenant = tenant.map(|t| t.0);
    let user_id = UserId::parse(&user_id)?;
    let page = blog
        .user_posts::<Post>(&user_id, FEED_ENTRIES, None)
        .await?;
    let posts = &page.items;
    let author_page = user_href(&base, &user_id);
    let title = match posts.first() {
        Some(post) => format!("Cosmos Blog: posts by {}", post.user_username),
        None => "Cosmos Blog: posts by this author".to_owned(),
    };
    let about = Feeds {
        site: &site,
        base: &base,
        tenant: tenant.as_ref(),
    };
    let feed = about.feed_of(
        posts,
        &title,
        about.id(&["author", user_id.as_str()]),
        &format!("{author_page}/feed.atom"),
        &author_page,
    );
    Ok(answer(&feed, posts))
}

/// `/tags/{tag}/feed.atom`: the tag's newest published posts (Q8).
pub async fn tag_feed(
    site: Option<axum::Extension<std::sync::Arc<Site>>>,
    base: Option<axum::Extension<PageBase>>,
    tenant: Option<axum::Extension<TenantId>>,
    CurrentBlog(blog): CurrentBlog,
    PathParam(tag): PathParam,
) -> Result<Response> {
    let site = site_of(site)?;
    let base = base.map(|b| b.0.0).unwrap_or_default();
    let tenant = tenant.map(|t| t.0);
    let tag = Tag::parse(&tag)?;
    let page = blog.tag_posts::<Post>(&tag, FEED_ENTRIES, None).await?;
    let posts = &page.items;
    let tag_page = tag_href(&base, tag.as_str());
    let about = Feeds {
        site: &site,
        base: &base,
        tenant: tenant.as_ref(),
    };
    let feed = about.feed_of(
        posts,
        &format!("Cosmos Blog: posts tagged {tag}"),
        about.id(&["tag", tag.as_str()]),
        &format!("{tag_page}/feed.atom"),
        &tag_page,
    );
    Ok(answer(&feed, posts))
}

fn site_of(site: Option<axum::Extension<std::sync::Arc<Site>>>) -> Result<std::sync::Arc<Site>> {
    site.map(|s| s.0)
        .ok_or_else(|| Error::Internal("a feed was served without the site's settings".into()))
}

/// The namespace of the feeds' and entries' `urn:uuid:` ids (a UUID drawn once for them):
/// with what an id names, it gives the same UUID on every server, forever.
const ID_NAMESPACE: Uuid = Uuid::from_u128(0x6c1e_4a4b_8f3d_4e0a_9d3b_2b7a_51c0_e6f1);

fn date(at: Timestamp) -> FixedDateTime {
    FixedDateTime::parse_from_rfc3339(&at.to_string()).unwrap_or_default()
}

/// A blog's feeds: where the site is, the blog's base path and its tenant.
struct Feeds<'a> {
    site: &'a Site,
    base: &'a str,
    tenant: Option<&'a TenantId>,
}

impl Feeds<'_> {
    fn url(&self, path: &str) -> String {
        self.site.public_url.join(path)
    }

    /// The id of what `parts` name in this blog: a `urn:uuid:` that no host, address or
    /// title changes.
    fn id(&self, parts: &[&str]) -> String {
        let tenant = self.tenant.map_or("", |t| t.as_str());
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
    fn entry_id(&self, post: &Post) -> String {
        match (self.tenant, Uuid::parse_str(post.id.as_str())) {
            (None, Ok(uuid)) => uuid.urn().to_string(),
            _ => self.id(&["post", post.id.as_str()]),
        }
    }

    fn feed_of(&self, posts: &[Post], title: &str, id: String, itself: &str, page: &str) -> Feed {
        let updated = posts
            .iter()
            .map(Post::updated)
            .max()
            .map(date)
            .unwrap_or_default();
        FeedBuilder::default()
            .id(id)
            .title(Text::plain(title))
            .updated(updated)
            .links(vec![
                LinkBuilder::default()
                    .href(self.url(itself))
                    .rel("self")
                    .mime_type(Some("application/atom+xml".to_owned()))
                    .build(),
                LinkBuilder::default()
                    .href(self.url(page))
                    .rel("alternate")
                    .mime_type(Some("text/html".to_owned()))
                    .build(),
            ])
            .entries(
                posts
                    .iter()
                    .map(|post| self.entry(post))
                    .collect::<Vec<_>>(),
            )
            .build()
    }

    fn entry(&self, post: &Post) -> Entry {
        let link = self.url(&post_href(self.base, &post.id));
        let author = PersonBuilder::default()
            .name(post.user_username.clone())
            .uri(Some(self.url(&user_href(self.base, &post.user_id))))
            .build();
        EntryBuilder::default()
            .id(self.entry_id(post))
            .title(Text::plain(post.title.clone()))
            .authors(vec![author])
            .published(Some(date(post.creation_date)))
            // An edit moves it: readers show the post again.
            .updated(date(post.updated()))
            .summary(Some(Text::plain(post.short().content)))
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

/// The feed as the response, with its `Last-Modified` (its newest entry's `updated`, to the
/// second, as HTTP dates go); the pages' conditional layer adds the `ETag` and answers
/// `If-None-Match` and `If-Modified-Since`.
fn answer(feed: &Feed, posts: &[Post]) -> Response {
    let mut response = (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        feed.to_string(),
    )
        .into_response();
    if let Some(newest) = posts.iter().map(Post::updated).max().map(date)
        && let Ok(value) = HeaderValue::from_str(&newest.to_rfc2822().replace("+0000", "GMT"))
    {
        response.headers_mut().insert(header::LAST_MODIFIED, value);
    }
    response
}
