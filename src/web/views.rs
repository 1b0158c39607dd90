//! The pages of the views: a tag's posts (`/tags/{tag}`, with its Atom feed), the archive's
//! months (`/archive`) and a month's posts (`/archive/{yyyy}/{mm}`), and what search engines
//! read: `/sitemap.xml` (a sitemap index by month past the protocol's limits) and
//! `/robots.txt` naming it. Every read is one request to one logical partition; the sitemap
//! reads the archive's index and then each month's partition, never across partitions.

use askama::Template;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::context::{BlogPage, FeedLink, Layout, PageContext};
use super::markdown::escape_markup;
use super::pages::{Paging, PostView, canonical_post_href, next_href, tag_href};
use crate::domain::{Month, MonthCount, Post};
use crate::error::Result;
use crate::http::paths::{MonthPath, TagPath};
use crate::store::Page;
use crate::words::count;

/// The sitemaps.org protocol's limits on one file.
const MAX_SITEMAP_URLS: u64 = 50_000;
const MAX_SITEMAP_BYTES: usize = 50 * 1024 * 1024;
const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

#[derive(Template)]
#[template(path = "view_list.html")]
struct ViewListPage {
    l: Layout,
    heading: String,
    intro: String,
    feed: Option<String>,
    posts: Vec<PostView>,
    next: Option<String>,
}

/// One month of the archive's page.
struct MonthView {
    key: String,
    name: String,
    href: String,
    count_text: String,
}

#[derive(Template)]
#[template(path = "archive.html")]
struct ArchivePage {
    l: Layout,
    months: Vec<MonthView>,
}

fn month_name(month: &Month) -> String {
    let name = MONTH_NAMES[usize::from(month.month().clamp(1, 12)) - 1];
    format!("{name} {}", month.year())
}

fn month_href(base: &str, month: &Month) -> String {
    format!("{base}/archive/{}", month.path())
}

/// `/tags/{tag}`: the tag's published posts (Q8), newest first, paged.
pub async fn tag_page(
    BlogPage(context, blog): BlogPage,
    TagPath(tag): TagPath,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    let href = tag_href(&context.base, tag.as_str());
    let posts = blog.tag_posts::<Post>(&tag, paging.request()).await?;
    let heading = (
        format!("#{tag}"),
        format!("Posts tagged {tag}, newest first."),
    );
    let feed = format!("Posts tagged {tag}");
    Ok(view_list_page(
        &context,
        &href,
        heading,
        Some(&feed),
        &posts,
    ))
}

/// A view's page of posts (a tag's, a month's) at `href`: its heading and intro, which are
/// also the page's title and description, and the title of its feeds if it has them
/// (`{href}/feed.atom` and `.json`).
fn view_list_page(
    context: &PageContext,
    href: &str,
    (heading, intro): (String, String),
    feed_title: Option<&str>,
    posts: &Page<Post>,
) -> Response {
    let mut l = context.layout(heading.clone(), intro.clone());
    let feed = feed_title.map(|title| {
        l.feeds
            .extend(FeedLink::both(title, &format!("{href}/feed")));
        format!("{href}/feed.atom")
    });
    l.canonical = context.absolute(href);
    let page = ViewListPage {
        l,
        heading,
        intro,
        feed,
        posts: views_of(&posts.items, &context.base),
        next: next_href(href, posts.continuation.as_deref()),
    };
    context.respond(StatusCode::OK, &page)
}

/// `/archive`: the months that have posts, newest first, with their counts (one read).
pub async fn archive_page(BlogPage(context, blog): BlogPage) -> Result<Response> {
    let months = blog.archive_months().await?;
    let href = format!("{}/archive", context.base);
    let mut l = context.layout(
        "Archive",
        "Every month of this blog, with its number of posts.",
    );
    l.canonical = context.absolute(&href);
    let months = months
        .iter()
        .filter_map(|counted| {
            let month = Month::from_key(&counted.of)?;
            Some(MonthView {
                key: month.key(),
                name: month_name(&month),
                href: month_href(&context.base, &month),
                count_text: count(counted.post_count, "post", "posts"),
            })
        })
        .collect();
    Ok(context.respond(StatusCode::OK, &ArchivePage { l, months }))
}

/// `/archive/{yyyy}/{mm}`: the month's posts (Q9), newest first, paged.
pub async fn month_page(
    BlogPage(context, blog): BlogPage,
    MonthPath(month): MonthPath,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    let href = month_href(&context.base, &month);
    let posts = blog.month_posts::<Post>(&month, paging.request()).await?;
    let name = month_name(&month);
    let intro = format!("Posts published in {name}, newest first.");
    Ok(view_list_page(&context, &href, (name, intro), None, &posts))
}

fn views_of(posts: &[Post], base: &str) -> Vec<PostView> {
    posts.iter().map(|p| PostView::of(p, base)).collect()
}

/// Text escaped for XML character data and attribute values.
fn xml_escape(text: &str) -> String {
    escape_markup(text, "&apos;")
}

fn xml(body: String) -> Response {
    (
        [(header::CONTENT_TYPE, "application/xml; charset=utf-8")],
        body,
    )
        .into_response()
}

/// A `<urlset>` of `posts`' canonical addresses with their `lastmod`, and the blog's front
/// page first when `front` is given.
fn url_set(context: &PageContext, front: Option<&str>, posts: &[Post]) -> String {
    let mut body = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    if let Some(front) = front {
        body.push_str(&format!("<url><loc>{}</loc></url>\n", xml_escape(front)));
    }
    for post in posts {
        let loc = context.absolute(&canonical_post_href(&context.base, post));
        body.push_str(&format!(
            "<url><loc>{}</loc><lastmod>{}</lastmod></url>\n",
            xml_escape(&loc),
            lastmod(post)
        ));
    }
    body.push_str("</urlset>\n");
    body
}

/// W3C Datetime to the second, as sitemaps.org asks.
fn lastmod(post: &Post) -> String {
    let at = post.updated().to_string();
    format!("{}Z", &at[..19])
}

/// `/sitemap.xml`: every published post's canonical address with its `lastmod`. Under the
/// protocol's limits, one file read from the months' partitions; past them, a sitemap index
/// of one sitemap per month (`/sitemaps/{yyyy}/{mm}`).
pub async fn sitemap(BlogPage(context, blog): BlogPage) -> Result<Response> {
    let months = blog.archive_months().await?;
    let total: u64 = months.iter().map(|m| m.post_count).sum();
    if total < MAX_SITEMAP_URLS {
        let mut posts = Vec::new();
        for counted in &months {
            if let Some(month) = Month::from_key(&counted.of) {
                posts.extend(blog.all_month_posts(&month).await?);
            }
        }
        let front = context.absolute(&format!("{}/", context.base));
        let body = url_set(&context, Some(&front), &posts);
        if body.len() <= MAX_SITEMAP_BYTES {
            return Ok(xml(body));
        }
    }
    Ok(xml(sitemap_index(&context, &months)))
}

/// A `<sitemapindex>` of one sitemap per month.
fn sitemap_index(context: &PageContext, months: &[MonthCount]) -> String {
    let mut body = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for month in months.iter().filter_map(|m| Month::from_key(&m.of)) {
        let loc = context.absolute(&format!("{}/sitemaps/{}", context.base, month.path()));
        body.push_str(&format!(
            "<sitemap><loc>{}</loc></sitemap>\n",
            xml_escape(&loc)
        ));
    }
    body.push_str("</sitemapindex>\n");
    body
}

/// `/sitemaps/{yyyy}/{mm}`: one month's posts, the unit of the sitemap index (at most the
/// protocol's 50,000 addresses: the newest of a month that has more).
pub async fn month_sitemap(
    BlogPage(context, blog): BlogPage,
    MonthPath(month): MonthPath,
) -> Result<Response> {
    let mut posts = blog.all_month_posts(&month).await?;
    posts.truncate(MAX_SITEMAP_URLS as usize);
    Ok(xml(url_set(&context, None, &posts)))
}

/// `/robots.txt`: everything may be crawled; the sitemap is named.
pub async fn robots(context: PageContext) -> Response {
    let sitemap = context.absolute(&format!("{}/sitemap.xml", context.base));
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("User-agent: *\nAllow: /\nSitemap: {sitemap}\n"),
    )
        .into_response()
}
