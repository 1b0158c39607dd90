//! The Atom feeds (RFC 4287): the front page's (`/feed.atom`, the feed cache like Q6) and
//! each author's (`/users/{userId}/feed.atom`, one Q3 request). An entry is a post: its
//! id, title, author, dates, its short form as the summary and a link to its page. Links
//! are absolute when the request says which host it was sent to, as feed readers want.

use atom_syndication::{
    Entry, EntryBuilder, Feed, FeedBuilder, FixedDateTime, LinkBuilder, PersonBuilder, Text,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::context::{PageBase, site_root};
use super::pages::{post_href, user_href};
use crate::api::extract::PathParam;
use crate::api::tenants::{CurrentBlog, CurrentScope};
use crate::blog::PageSize;
use crate::domain::{Post, UserId};
use crate::error::Result;

/// Entries per feed: the latest posts, as many as a page of the API's lists.
const FEED_ENTRIES: PageSize = PageSize::DEFAULT;

pub const CONTENT_TYPE: &str = "application/atom+xml; charset=utf-8";

/// `/feed.atom`.
pub async fn front_feed(
    headers: HeaderMap,
    base: Option<axum::Extension<PageBase>>,
    CurrentScope(scope): CurrentScope,
) -> Result<Response> {
    let base = base.map(|b| b.0.0).unwrap_or_default();
    let items = scope.feed.items(&scope.blog).await?;
    let posts = items
        .iter()
        .take(FEED_ENTRIES.get() as usize)
        .map(|item| serde_json::from_str::<Post>(item))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let site = site_root(&headers);
    let feed = feed_of(
        &posts,
        &site,
        &base,
        "Cosmos Blog: latest posts",
        &format!("{base}/feed.atom"),
        &format!("{base}/"),
    );
    Ok(answer(&feed, &posts))
}

/// `/users/{userId}/feed.atom`: the author's latest posts, from one Q3 page.
pub async fn author_feed(
    headers: HeaderMap,
    base: Option<axum::Extension<PageBase>>,
    CurrentBlog(blog): CurrentBlog,
    PathParam(user_id): PathParam,
) -> Result<Response> {
    let base = base.map(|b| b.0.0).unwrap_or_default();
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
    let feed = feed_of(
        posts,
        &site_root(&headers),
        &base,
        &title,
        &format!("{author_page}/feed.atom"),
        &author_page,
    );
    Ok(answer(&feed, posts))
}

fn date(post: &Post) -> FixedDateTime {
    FixedDateTime::parse_from_rfc3339(&post.creation_date.to_string()).unwrap_or_default()
}

fn feed_of(posts: &[Post], site: &str, base: &str, title: &str, itself: &str, page: &str) -> Feed {
    let updated = posts.iter().map(date).max().unwrap_or_default();
    FeedBuilder::default()
        .id(format!("{site}{itself}"))
        .title(Text::plain(title))
        .updated(updated)
        .links(vec![
            LinkBuilder::default()
                .href(format!("{site}{itself}"))
                .rel("self")
                .mime_type(Some("application/atom+xml".to_owned()))
                .build(),
            LinkBuilder::default()
                .href(format!("{site}{page}"))
                .rel("alternate")
                .mime_type(Some("text/html".to_owned()))
                .build(),
        ])
        .entries(
            posts
                .iter()
                .map(|post| entry(post, site, base))
                .collect::<Vec<_>>(),
        )
        .build()
}

fn entry(post: &Post, site: &str, base: &str) -> Entry {
    let link = format!("{site}{}", post_href(base, &post.id));
    let author = PersonBuilder::default()
        .name(post.user_username.clone())
        .uri(Some(format!("{site}{}", user_href(base, &post.user_id))))
        .build();
    EntryBuilder::default()
        // The post's page is its permanent address; the id must not change when the title does.
        .id(link.clone())
        .title(Text::plain(post.title.clone()))
        .authors(vec![author])
        .published(Some(date(post)))
        .updated(date(post))
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

/// The feed as the response, with its `Last-Modified` (the newest entry's date); the
/// pages' conditional layer adds its `ETag` and answers `If-None-Match`.
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
    if let Some(newest) = posts.iter().map(date).max()
        && let Ok(value) = HeaderValue::from_str(&newest.to_rfc2822().replace("+0000", "GMT"))
    {
        response.headers_mut().insert(header::LAST_MODIFIED, value);
    }
    response
}
