//! The routes of the views the change feed keeps: a tag's posts (Q8), a month's posts (Q9)
//! and the archive's months with their counts. Each answer is one request to one logical
//! partition.

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::description::ReadFailures;
use super::pages::{PostPage, WirePage};
use crate::domain::{ArchiveMonth, Post};
use crate::error::Result;
use crate::http::extract::{List, ListParams};
use crate::http::paths::{MonthPath, TagPath};
use crate::http::tenants::CurrentBlog;

/// The archive's months: `{"items": [...], "continuation": null}`, like the feed.
#[derive(Serialize, ToSchema)]
pub(super) struct ArchiveMonths {
    /// The months that have published posts, newest first.
    items: Vec<ArchiveMonth>,
    /// Always `null`: every month is in one answer.
    #[schema(value_type = Option<String>)]
    continuation: Option<String>,
}

/// List a tag's posts (Q8)
///
/// The published posts that carry the tag, newest first by publication, in short form, a
/// page at a time. The tag is normalised as posts' tags are (`Rust` lists `rust`); a tag no
/// post carries lists nothing.
#[utoipa::path(
    get, path = "/tags/{tag}/posts", operation_id = "ListTagPosts", tag = "views",
    params(TagPath, ListParams),
    responses(
        (status = 200, description = "A page of the tag's posts.", body = PostPage),
        ReadFailures,
    )
)]
pub(super) async fn tag_posts(
    CurrentBlog(blog): CurrentBlog,
    TagPath(tag): TagPath,
    list: List,
) -> Result<WirePage<Post>> {
    let page = blog.tag_posts(&tag, list.request()).await?;
    Ok(WirePage(page))
}

/// List a month's posts (Q9)
///
/// The posts published in the month (UTC), newest first, in short form, a page at a time.
#[utoipa::path(
    get, path = "/archive/{year}/{month}/posts", operation_id = "ListMonthPosts", tag = "views",
    params(MonthPath, ListParams),
    responses(
        (status = 200, description = "A page of the month's posts.", body = PostPage),
        ReadFailures,
    )
)]
pub(super) async fn month_posts(
    CurrentBlog(blog): CurrentBlog,
    MonthPath(month): MonthPath,
    list: List,
) -> Result<WirePage<Post>> {
    let page = blog.month_posts(&month, list.request()).await?;
    Ok(WirePage(page))
}

/// The archive's months
///
/// Every month that has published posts, newest first, with its count: one read.
#[utoipa::path(
    get, path = "/archive", operation_id = "GetArchive", tag = "views",
    responses(
        (status = 200, description = "The months and their counts.", body = ArchiveMonths),
        ReadFailures,
    )
)]
pub(super) async fn archive(CurrentBlog(blog): CurrentBlog) -> Result<Json<ArchiveMonths>> {
    let months = blog.archive_months().await?;
    Ok(Json(ArchiveMonths {
        items: months.iter().map(ArchiveMonth::from).collect(),
        continuation: None,
    }))
}
