//! The pages that read: the front page (Q6 from the feed cache), a post with its comments
//! (Q2 and Q4's page side by side), a post's likes (Q5), an author's posts (Q3), and the
//! error page. Each makes the store requests of the API queries it shows, no more.

use std::sync::{Arc, LazyLock};

use askama::Template;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use quick_cache::sync::Cache;
use serde::Deserialize;

use super::context::{Layout, OpenGraph, PageContext, encode};
use super::markdown;
use crate::api::extract::PathParam;
use crate::api::feed_cache::FeedItems;
use crate::api::tenants::{CurrentBlog, CurrentScope};
use crate::blog::{Blog, Listing, PageSize};
use crate::domain::{Comment, Like, Post, PostId, Timestamp, UserId};
use crate::error::{Error, Result};
use crate::words::count;

/// How many of the feed's posts the front page shows (the feed holds 100; the page stays
/// light on a phone).
pub const FRONT_PAGE_POSTS: usize = 30;

/// Comments, likes and an author's posts per page.
const PAGE_SIZE: PageSize = PageSize::DEFAULT;

/// A post as a list or a page shows it; every text is escaped by the template.
pub struct PostView {
    pub href: String,
    pub title: String,
    pub author: String,
    pub author_href: String,
    /// ISO 8601, for `<time datetime>`.
    pub date: String,
    /// The day, for people.
    pub day: String,
    /// When it was last edited, if it was: `<time datetime>`'s and the day.
    pub edited: Option<(String, String)>,
    pub short: String,
    /// "3 comments", "1 like".
    pub comments_text: String,
    pub likes_text: String,
}

impl PostView {
    pub fn of(post: &Post, base: &str) -> Self {
        let (date, day) = time_element(post.creation_date);
        Self {
            href: post_href(base, &post.id),
            title: post.title.clone(),
            author: post.user_username.clone(),
            author_href: user_href(base, &post.user_id),
            date,
            day,
            edited: post.modified_date.map(time_element),
            short: post.short().content,
            comments_text: count(post.comment_count, "comment", "comments"),
            likes_text: likes_text(post.like_count),
        }
    }
}

/// "1 like", "2 likes": the post page's count, which its script replaces in place.
pub fn likes_text(likes: u64) -> String {
    count(likes, "like", "likes")
}

/// A date as `<time>` shows it: its `datetime` (HTML's valid global date and time string,
/// which allows at most three fractional digits: the stored seven are cut, never rounded up
/// past the stored time) and the day, for people.
pub fn time_element(at: Timestamp) -> (String, String) {
    let stored = at.to_string();
    let datetime = match stored.split_once('.') {
        Some((seconds, fraction)) => {
            let digits: String = fraction
                .chars()
                .take_while(char::is_ascii_digit)
                .take(3)
                .collect();
            format!("{seconds}.{digits}Z")
        }
        None => stored.clone(),
    };
    let day = stored.get(..10).unwrap_or(&stored).to_owned();
    (datetime, day)
}

pub fn post_href(base: &str, post_id: &PostId) -> String {
    format!("{base}/posts/{}", encode(post_id.as_str()))
}

pub fn user_href(base: &str, user_id: &UserId) -> String {
    format!("{base}/users/{}", encode(user_id.as_str()))
}

/// `?continuation=` of a list page.
#[derive(Deserialize)]
pub struct Paging {
    #[serde(default)]
    continuation: Option<String>,
}

impl Paging {
    fn token(&self) -> Option<&str> {
        self.continuation.as_deref().filter(|t| !t.is_empty())
    }
}

fn next_href(path: &str, continuation: Option<&str>) -> Option<String> {
    continuation.map(|token| format!("{path}?continuation={}", encode(token)))
}

#[derive(Template)]
#[template(path = "front.html")]
struct FrontPage {
    l: Layout,
    list: Arc<FrontList>,
}

#[derive(Template)]
#[template(path = "post_list.html")]
struct PostList<'a> {
    posts: &'a [PostView],
}

/// The front page's list of posts as HTML, and the feed it was made from.
struct FrontList {
    feed: FeedItems,
    html: Arc<str>,
    empty: bool,
}

/// How many blogs' front-page lists are kept (one in `single`; in `multi`, the busiest
/// tenants').
const FRONT_LISTS_KEPT: usize = 256;

/// The front page's list of each blog, by its base path. The list is the same for every
/// reader until the feed cache holds new items, so it is parsed and rendered once per feed
/// rather than on every request; an entry serves only the very feed it was made from.
static FRONT_LISTS: LazyLock<Cache<String, Arc<FrontList>>> =
    LazyLock::new(|| Cache::new(FRONT_LISTS_KEPT));

/// `/`: the newest posts, from the feed cache like `GET /api/feed`.
pub async fn front_page(
    context: PageContext,
    CurrentScope(scope): CurrentScope,
) -> Result<Response> {
    let feed = scope.feed.items(&scope.blog).await?;
    let list = match FRONT_LISTS.get(&context.base) {
        Some(list) if Arc::ptr_eq(&list.feed, &feed) => list,
        _ => {
            let list = Arc::new(front_list(feed, &context.base)?);
            FRONT_LISTS.insert(context.base.clone(), Arc::clone(&list));
            list
        }
    };
    let mut l = context.layout(
        "Cosmos Blog: latest posts",
        "The newest posts on this blog, with their authors, comments and likes.",
    );
    l.canonical = Some(context.absolute(&format!("{}/", context.base)));
    let page = FrontPage { l, list };
    Ok(context.respond(StatusCode::OK, &page))
}

fn front_list(feed: FeedItems, base: &str) -> Result<FrontList> {
    let posts = feed
        .iter()
        .take(FRONT_PAGE_POSTS)
        .map(|item| serde_json::from_str::<Post>(item).map(|p| PostView::of(&p, base)))
        .collect::<Result<Vec<_>, _>>()?;
    let html = PostList { posts: &posts }
        .render()
        .map_err(|e| Error::Internal(format!("the front page's list did not render: {e}")))?;
    Ok(FrontList {
        feed,
        html: html.into(),
        empty: posts.is_empty(),
    })
}

pub struct CommentView {
    pub id: String,
    pub author: String,
    pub author_href: String,
    pub date: String,
    pub day: String,
    pub text: String,
    pub deletable: bool,
    pub delete_href: String,
}

#[derive(Template)]
#[template(path = "post.html")]
pub struct PostPage {
    pub l: Layout,
    pub post: PostView,
    pub content_html: Arc<str>,
    pub likes_href: String,
    pub is_author: bool,
    /// Whether the signed-in reader likes the post: they are offered Unlike, else Like.
    pub liked: bool,
    pub comments: Vec<CommentView>,
    pub later: Option<String>,
    pub comment_text: String,
    pub comment_error: Option<String>,
}

/// `?comments=` of a post page: the continuation of its comments.
#[derive(Deserialize)]
pub struct CommentPaging {
    #[serde(default)]
    comments: Option<String>,
}

/// What a post page shows, read side by side, all in the post's partition: the post (Q2),
/// a page of its comments (Q4) and, for a signed-in reader, whether they like it (a point
/// read of their like), which decides between Like and Unlike.
pub struct PostReading {
    pub post: Post,
    pub comments: Listing<Comment>,
    pub liked: bool,
    /// The blog's own images the post shows that are there (point reads of the author's
    /// partition, one per image).
    pub images: std::collections::HashMap<crate::images::ImageId, crate::images::ImageItem>,
}

impl PostReading {
    pub async fn read(
        blog: &Blog,
        viewer: Option<&UserId>,
        post_id: &PostId,
        continuation: Option<&str>,
    ) -> Result<Self> {
        let liked = async {
            match viewer {
                Some(viewer) => blog.has_liked(viewer, post_id).await,
                None => Ok(false),
            }
        };
        let (post, comments, liked) = tokio::join!(
            blog.get_post(post_id),
            blog.comments(post_id, PAGE_SIZE, continuation),
            liked
        );
        let post = post?;
        let ids = markdown::image_ids(&post.content);
        let images =
            futures::future::try_join_all(ids.iter().map(|id| blog.image(&post.user_id, id)))
                .await?
                .into_iter()
                .flatten()
                .map(|item| (item.id.clone(), item))
                .collect();
        Ok(Self {
            post,
            comments: comments?,
            liked: liked?,
            images,
        })
    }
}

/// `/posts/{postId}`: the post and a page of its comments ([`PostReading`]).
pub async fn post_page(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
    Query(paging): Query<CommentPaging>,
) -> Result<Response> {
    let post_id = PostId::parse(&post_id)?;
    let continuation = paging.comments.as_deref().filter(|t| !t.is_empty());
    let reading = PostReading::read(&blog, context.viewer.as_ref(), &post_id, continuation).await?;
    let page = post_page_of(&context, reading, None);
    Ok(context.respond(StatusCode::OK, &page))
}

/// The post page; `comment`: a refused comment's text and why, shown beside the form.
pub fn post_page_of(
    context: &PageContext,
    reading: PostReading,
    comment: Option<(String, String)>,
) -> PostPage {
    let PostReading {
        post,
        comments,
        liked,
        images,
    } = reading;
    let base = &context.base;
    let view = PostView::of(&post, base);
    let is_author = context.viewer.as_ref() == Some(&post.user_id);
    let comment_views = comments
        .items
        .iter()
        .map(|c| comment_view(c, base, &view.href, context.viewer.as_ref(), is_author))
        .collect();
    let description = post.short().content;
    let mut l = context.layout(format!("{} · Cosmos Blog", post.title), description.clone());
    let url = context.absolute(&view.href);
    l.canonical = Some(url.clone());
    l.og = Some(OpenGraph {
        title: post.title.clone(),
        description,
        url,
    });
    let (comment_text, comment_error) =
        comment.map_or((String::new(), None), |(t, e)| (t, Some(e)));
    PostPage {
        l,
        likes_href: format!("{}/likes", view.href),
        later: comments
            .continuation
            .as_deref()
            .map(|token| format!("{}?comments={}#comments", view.href, encode(token))),
        content_html: markdown::post_html_with(
            post.id.as_str(),
            &post.content,
            &markdown::PostImages {
                base: base.clone(),
                found: images,
            },
        ),
        post: view,
        is_author,
        liked,
        comments: comment_views,
        comment_text,
        comment_error,
    }
}

fn comment_view(
    comment: &Comment,
    base: &str,
    post_href: &str,
    viewer: Option<&UserId>,
    viewer_is_post_author: bool,
) -> CommentView {
    let (date, day) = time_element(comment.creation_date);
    CommentView {
        id: comment.id.as_str().to_owned(),
        author: comment.user_username.clone(),
        author_href: user_href(base, &comment.user_id),
        day,
        date,
        text: comment.content.clone(),
        deletable: viewer_is_post_author || viewer == Some(&comment.user_id),
        delete_href: format!(
            "{post_href}/comments/{}/delete",
            encode(comment.id.as_str())
        ),
    }
}

pub struct LikeView {
    pub author: String,
    pub author_href: String,
    pub date: String,
    pub day: String,
}

#[derive(Template)]
#[template(path = "likes.html")]
struct LikesPage {
    l: Layout,
    title: String,
    post_href: String,
    likes: Vec<LikeView>,
    next: Option<String>,
}

/// `/posts/{postId}/likes`: a page of the post's likes (Q5). The post's title comes from
/// the post (Q2), read beside it.
pub async fn likes_page(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    let post_id = PostId::parse(&post_id)?;
    let (post, likes) = tokio::join!(
        blog.get_post(&post_id),
        blog.likes(&post_id, PAGE_SIZE, paging.token())
    );
    let (post, likes) = (post?, likes?);
    let post_href = post_href(&context.base, &post_id);
    let mut l = context.layout(
        format!("Likes of {} · Cosmos Blog", post.title),
        format!("Who liked “{}”.", post.title),
    );
    l.canonical = Some(context.absolute(&format!("{post_href}/likes")));
    let page = LikesPage {
        l,
        title: post.title.clone(),
        likes: likes
            .items
            .iter()
            .map(|like| like_view(like, &context.base))
            .collect(),
        next: next_href(&format!("{post_href}/likes"), likes.continuation.as_deref()),
        post_href,
    };
    Ok(context.respond(StatusCode::OK, &page))
}

fn like_view(like: &Like, base: &str) -> LikeView {
    let (date, day) = time_element(like.creation_date);
    LikeView {
        author: like.user_username.clone(),
        author_href: user_href(base, &like.user_id),
        day,
        date,
    }
}

#[derive(Template)]
#[template(path = "author.html")]
struct AuthorPage {
    l: Layout,
    username: String,
    feed: String,
    posts: Vec<PostView>,
    next: Option<String>,
}

/// `/users/{userId}`: the author's posts (Q3), newest first, and their username, which every
/// post carries; an author without posts costs the user's read (Q1) that Q3 makes anyway.
pub async fn author_page(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(user_id): PathParam,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    let user_id = UserId::parse(&user_id)?;
    let posts = blog
        .user_posts::<Post>(&user_id, PAGE_SIZE, paging.token())
        .await?;
    let username = match posts.items.first() {
        Some(post) => post.user_username.clone(),
        None => blog.get_user(&user_id).await?.username,
    };
    let href = user_href(&context.base, &user_id);
    let feed = format!("{href}/feed.atom");
    let mut l = context.layout(
        format!("{username} · Cosmos Blog"),
        format!("Posts by {username}."),
    );
    l.author_feed = Some(feed.clone());
    l.canonical = Some(context.absolute(&href));
    let page = AuthorPage {
        l,
        username,
        feed,
        posts: posts
            .items
            .iter()
            .map(|p| PostView::of(p, &context.base))
            .collect(),
        next: next_href(&href, posts.continuation.as_deref()),
    };
    Ok(context.respond(StatusCode::OK, &page))
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    l: Layout,
    heading: String,
    detail: String,
    status: u16,
    code: String,
}

/// The error page of a problem: its status, its code and its detail, in the layout.
pub fn error_page(
    context: &PageContext,
    status: StatusCode,
    code: String,
    detail: String,
) -> Response {
    let heading = match status {
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::UNAUTHORIZED => "Please sign in",
        StatusCode::FORBIDDEN => "Not allowed",
        s if s.is_server_error() => "Something went wrong",
        _ => "That did not work",
    };
    let page = ErrorPage {
        l: context.layout(format!("{heading} · Cosmos Blog"), detail.clone()),
        heading: heading.to_owned(),
        detail,
        status: status.as_u16(),
        code,
    };
    context.respond(status, &page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_element_holds_at_most_three_fractional_digits() {
        let at = Timestamp::parse("2026-11-27T01:41:07.2987290Z").unwrap();
        assert_eq!(
            time_element(at),
            (
                "2026-11-27T01:41:07.298Z".to_owned(),
                "2026-11-27".to_owned()
            )
        );
    }
}
