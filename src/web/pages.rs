//! The pages that read: the front page (Q6 from the feed cache), a post with its comments
//! (Q2 and Q4's page side by side), a post's likes (Q5), an author's posts (Q3), and the
//! error page. Each makes the store requests of the API queries it shows, no more.

use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::context::{BlogPage, FeedLink, Layout, PageContext, encode};
use super::excerpt::{DESCRIPTION_CHARS, LIST_EXCERPT_CHARS, excerpt, excerpt_of_short};
use super::markdown;
use super::meta::{self, OpenGraph, Posting};
use super::page_caches::FrontList;
use crate::blog::{Blog, ListRequest, Listing, PageSize};
use crate::domain::{Comment, Like, Post, PostId, Publication, Slug, Timestamp, UserId};
use crate::error::{Error, Result};
use crate::http::feed_cache::FeedItems;
use crate::http::paths::{PostPath, SluggedPostPath, UserPath};
use crate::http::tenants::CurrentScope;
use crate::images::{ImageId, ImageItem};
use crate::words::count;

/// How many of the feed's posts the front page shows (the feed holds 100; the page stays
/// light on a phone).
pub const FRONT_PAGE_POSTS: usize = 30;

/// Items per page of every list: comments, likes, an author's posts, a tag's or a month's.
const PAGE_SIZE: PageSize = PageSize::DEFAULT;

/// A post as a list or a page shows it; every text is escaped by the template.
pub struct PostView {
    /// The post page's canonical address, `/posts/{postId}/{slug}`.
    pub href: String,
    /// `/posts/{postId}`: where the post's own forms and pages (likes, edit) are.
    pub path: String,
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
    /// Its tags, each with the address of the tag's page.
    pub tags: Vec<(String, String)>,
    /// What an unpublished post says of itself (only its author sees it): a draft, or
    /// scheduled for a time.
    pub status_note: Option<String>,
}

impl PostView {
    pub fn of(post: &Post, base: &str) -> Self {
        // Lists and feeds order by publication: a draft published late shows that day.
        let (date, day) = time_element(post.list_date());
        Self {
            href: canonical_post_href(base, post),
            path: post_href(base, &post.id),
            title: post.title.clone(),
            author: post.user_username.clone(),
            author_href: user_href(base, &post.user_id),
            date,
            day,
            edited: post.modified_date.map(time_element),
            short: excerpt_of_short(&post.short().content, LIST_EXCERPT_CHARS),
            comments_text: count(post.comment_count, "comment", "comments"),
            likes_text: likes_text(post.like_count),
            tags: post
                .tags
                .iter()
                .map(|tag| (tag.clone(), tag_href(base, tag)))
                .collect(),
            status_note: status_note(post),
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

/// `/posts/{postId}`: the post's own path, under which its forms and sub-pages are; as a
/// page it answers `301` to the canonical one.
pub fn post_href(base: &str, post_id: &PostId) -> String {
    format!("{base}/posts/{}", encode(post_id.as_str()))
}

/// How an unpublished post is marked wherever its author sees it.
fn status_note(post: &Post) -> Option<String> {
    match post.publication() {
        Publication::Publish => None,
        Publication::Draft => Some("Draft: only you can see it.".to_owned()),
        Publication::Schedule(at) => Some(format!(
            "Scheduled for {} UTC: only you can see it until then.",
            at.to_string()
                .chars()
                .take(16)
                .collect::<String>()
                .replace('T', " ")
        )),
    }
}

/// The words after `/posts/{postId}/` that are the post's own pages and forms: a title whose
/// slug is one of them gets `-post` after it, so that its page never hides one.
const POST_SUB_ROUTES: [&str; 6] = ["likes", "like", "unlike", "comments", "edit", "delete"];

/// The readable part of a post's address, from its current title.
pub fn post_slug(title: &str) -> String {
    let slug = Slug::of_title(title);
    if POST_SUB_ROUTES.contains(&slug.as_str()) {
        format!("{slug}-post")
    } else {
        slug.as_str().to_owned()
    }
}

/// The canonical address of a post's page: `/posts/{postId}/{slug}`. Every link the site
/// prints to a post (lists, feeds, head metadata) is this one.
pub fn canonical_post_href(base: &str, post: &Post) -> String {
    format!("{}/{}", post_href(base, &post.id), post_slug(&post.title))
}

/// The page of a tag's posts.
pub fn tag_href(base: &str, tag: &str) -> String {
    format!("{base}/tags/{}", encode(tag))
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
    pub(super) fn token(&self) -> Option<&str> {
        self.continuation.as_deref().filter(|t| !t.is_empty())
    }

    /// The page of [`PAGE_SIZE`] items this link asks for.
    pub(super) fn request(&self) -> ListRequest<'_> {
        ListRequest::new(PAGE_SIZE, self.token())
    }
}

pub(super) fn next_href(path: &str, continuation: Option<&str>) -> Option<String> {
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

/// `/`: the newest posts, from the feed cache like `GET /api/feed`.
pub async fn front_page(
    context: PageContext,
    CurrentScope(scope): CurrentScope,
) -> Result<Response> {
    let feed = scope.feed.items(&scope.blog).await?;
    let kept = &context.site().caches.front_lists;
    let list = match kept.get(&context.base) {
        Some(list) if Arc::ptr_eq(&list.feed, &feed) => list,
        _ => {
            let list = Arc::new(front_list(feed, &context.base)?);
            kept.insert(context.base.clone(), Arc::clone(&list));
            list
        }
    };
    let l = context.layout("Latest posts", context.site().description.clone());
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
    pub images: HashMap<ImageId, ImageItem>,
}

impl PostReading {
    pub async fn read(
        blog: &Blog,
        viewer: Option<&UserId>,
        post_id: &PostId,
        continuation: Option<&str>,
    ) -> Result<Self> {
        let (post, rest) = Self::read_apart(blog, viewer, post_id, continuation).await;
        let post = post?;
        let (comments, liked) = rest?;
        let images = own_images(blog, &post).await?;
        Ok(Self {
            post,
            comments,
            liked,
            images,
        })
    }

    /// The same reads, side by side, with the post's outcome apart from the others'.
    pub async fn read_apart(
        blog: &Blog,
        viewer: Option<&UserId>,
        post_id: &PostId,
        continuation: Option<&str>,
    ) -> (Result<Post>, Result<(Listing<Comment>, bool)>) {
        let liked = async {
            match viewer {
                Some(viewer) => blog.has_liked(viewer, post_id).await,
                None => Ok(false),
            }
        };
        let (post, comments, liked) = tokio::join!(
            blog.get_post_seen_by::<Post>(post_id, viewer),
            blog.comments(post_id, viewer, ListRequest::new(PAGE_SIZE, continuation)),
            liked
        );
        let rest = match (comments, liked) {
            (Ok(comments), Ok(liked)) => Ok((comments, liked)),
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        (post, rest)
    }
}

/// The blog's own images `post` shows that are there: point reads of the author's partition,
/// one per image, side by side (none for a post without images).
async fn own_images(blog: &Blog, post: &Post) -> Result<HashMap<ImageId, ImageItem>> {
    let ids = markdown::image_ids(&post.content);
    let found =
        futures::future::try_join_all(ids.iter().map(|id| blog.image(&post.user_id, id))).await?;
    Ok(found
        .into_iter()
        .flatten()
        .map(|item| (item.id.clone(), item))
        .collect())
}

/// `/posts/{postId}/{slug}`: the post and a page of its comments ([`PostReading`]). A slug
/// that is not the title's (an older title's, a mistyped one) answers `301` to the canonical
/// address, its query kept.
pub async fn post_page(
    BlogPage(context, blog): BlogPage,
    SluggedPostPath(post_id, slug): SluggedPostPath,
    Query(paging): Query<CommentPaging>,
) -> Result<Response> {
    let continuation = paging.comments.as_deref().filter(|t| !t.is_empty());
    let (post, rest) =
        PostReading::read_apart(&blog, context.viewer.as_ref(), &post_id, continuation).await;
    // A wrong slug moves whatever else the address holds (an old link's stale continuation).
    let post = post?;
    if slug != post_slug(&post.title) {
        return Ok(moved_to_canonical(&context, &post));
    }
    let (comments, liked) = rest?;
    let images = own_images(&blog, &post).await?;
    let reading = PostReading {
        post,
        comments,
        liked,
        images,
    };
    let page = post_page_of(&context, reading, None);
    Ok(context.respond(StatusCode::OK, &page))
}

/// `/posts/{postId}`: `301` to the post's canonical address (one read of the post, Q2).
pub async fn post_without_slug(
    BlogPage(context, blog): BlogPage,
    PostPath(post_id): PostPath,
) -> Result<Response> {
    let post = blog
        .get_post_seen_by::<Post>(&post_id, context.viewer.as_ref())
        .await?;
    Ok(moved_to_canonical(&context, &post))
}

/// `301 Moved Permanently` to `post`'s canonical page, with the query the request had
/// (`?comments=`, `?done=`); browsers keep the fragment themselves.
fn moved_to_canonical(context: &PageContext, post: &Post) -> Response {
    let query = context
        .here
        .split_once('?')
        .map(|(_, query)| format!("?{query}"))
        .unwrap_or_default();
    let location = format!("{}{query}", canonical_post_href(&context.base, post));
    match axum::http::HeaderValue::from_str(&location) {
        Ok(location) => (
            StatusCode::MOVED_PERMANENTLY,
            [(axum::http::header::LOCATION, location)],
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
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
        .map(|c| comment_view(c, base, &view.path, context.viewer.as_ref(), is_author))
        .collect();
    let description = excerpt(&post.content, DESCRIPTION_CHARS);
    let mut l = context.layout(post.title.clone(), description.clone());
    let url = context.absolute(&view.href);
    l.canonical = url.clone();
    let og = OpenGraph {
        title: post.title.clone(),
        description,
        url,
        site_name: context.site().title.clone(),
        published_time: view.date.clone(),
        modified_time: time_element(post.updated()).0,
        tags: post.tags.clone(),
    };
    l.json_ld = Some(meta::json_ld(&Posting {
        og: &og,
        author: &post.user_username,
        author_url: &context.absolute(&view.author_href),
    }));
    l.og = Some(og);
    let (comment_text, comment_error) =
        comment.map_or((String::new(), None), |(t, e)| (t, Some(e)));
    PostPage {
        l,
        likes_href: format!("{}/likes", view.path),
        later: comments
            .continuation
            .as_deref()
            .map(|token| format!("{}?comments={}#comments", view.href, encode(token))),
        content_html: context.site().caches.posts.post_html(
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
    BlogPage(context, blog): BlogPage,
    PostPath(post_id): PostPath,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    let (post, likes) = tokio::join!(
        blog.get_post_seen_by::<Post>(&post_id, context.viewer.as_ref()),
        blog.likes(&post_id, context.viewer.as_ref(), paging.request())
    );
    let (post, likes) = (post?, likes?);
    let likes_path = format!("{}/likes", post_href(&context.base, &post_id));
    let post_href = canonical_post_href(&context.base, &post);
    let l = context.layout(
        format!("Likes of {}", post.title),
        format!("Who liked “{}”.", post.title),
    );
    let page = LikesPage {
        l,
        title: post.title.clone(),
        likes: likes
            .items
            .iter()
            .map(|like| like_view(like, &context.base))
            .collect(),
        next: next_href(&likes_path, likes.continuation.as_deref()),
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
    /// The author's own drafts and scheduled posts, when they read their own page.
    drafts: Vec<PostView>,
    posts: Vec<PostView>,
    next: Option<String>,
}

/// `/users/{userId}`: the author's posts (Q3), newest first, and their username, which every
/// post carries; an author without posts costs the user's read (Q1) that Q3 makes anyway.
pub async fn author_page(
    BlogPage(context, blog): BlogPage,
    UserPath(user_id): UserPath,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    let own = context.viewer.as_ref() == Some(&user_id) && paging.token().is_none();
    let drafts = async {
        match own {
            true => blog
                .user_drafts::<Post>(&user_id, ListRequest::first(PAGE_SIZE))
                .await
                .map(Some),
            false => Ok(None),
        }
    };
    let (posts, drafts) = tokio::join!(blog.user_posts::<Post>(&user_id, paging.request()), drafts);
    let (posts, drafts) = (posts?, drafts?);
    let username = match posts.items.first() {
        Some(post) => post.user_username.clone(),
        None => blog.get_user(&user_id).await?.username,
    };
    let href = user_href(&context.base, &user_id);
    let feed = format!("{href}/feed.atom");
    let mut l = context.layout(username.clone(), format!("Posts by {username}."));
    l.feeds.extend(FeedLink::both(
        &format!("Posts by {username}"),
        &format!("{href}/feed"),
    ));
    let page = AuthorPage {
        l,
        username,
        feed,
        drafts: drafts.map_or_else(Vec::new, |drafts| {
            drafts
                .items
                .iter()
                .map(|p| PostView::of(p, &context.base))
                .collect()
        }),
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
        l: context.layout(heading, detail.clone()),
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
