//! The pages that write, and their forms: a post (C2: write, edit, delete), a comment (C3,
//! delete), a like (C4, unlike); the account and the development sign-in are
//! [`super::account`]'s, on the helpers here. Each form works without JavaScript: it posts, the server
//! answers `303 See Other` to the page that shows the result, and invalid input comes back
//! on the form with the reason beside its field, a 4xx status and the text kept; nothing
//! is stored then. Every form carries the CSRF token ([`super::guard`]). A form refused for
//! its token, or because its sender is signed out, comes back with what was typed in it.
//!
//! A reader who is not signed in and opens a page that needs it is sent to this auth
//! mode's sign-in, and from there back to the page (`return`, a path of this site only).

use askama::Template;
use axum::extract::rejection::FormRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::context::{BlogPage, Identity, Layout, PageContext, encode};
use super::guard;
use super::pages::{PostReading, canonical_post_href, likes_text, post_href, post_page_of};
use crate::domain::{
    CommentContent, Post, PostContent, PostId, Publication, Tags, Title, UserId, ValidationError,
};
use crate::error::Error;
use crate::http::paths::{CommentPath, PostPath};
use crate::problem::Problem;

/// What a form handler answers when it does not go on: a problem (shown as an error page)
/// or a form shown again.
pub struct Refusal(Box<Response>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        *self.0
    }
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Self(Box::new(error.into_response()))
    }
}

impl From<Problem> for Refusal {
    fn from(problem: Problem) -> Self {
        Self(Box::new(problem.into_response()))
    }
}

pub(super) type FormResult = Result<Response, Refusal>;

/// `axum::Form` with problem documents for its refusals.
pub struct FormBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for FormBody<T> {
    type Rejection = Problem;

    async fn from_request(request: Request, state: &S) -> Result<Self, Problem> {
        match axum::Form::<T>::from_request(request, state).await {
            Ok(axum::Form(value)) => Ok(Self(value)),
            Err(FormRejection::InvalidFormContentType(_)) => Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "send the form as application/x-www-form-urlencoded",
            )),
            Err(FormRejection::BytesRejection(e))
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                Err(crate::http::body_too_large())
            }
            Err(other) => Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-form",
                other.body_text(),
            )),
        }
    }
}

/// A form with only its token (a button).
#[derive(Deserialize)]
pub struct Button {
    #[serde(default)]
    csrf: String,
}

/// Whether a form's token is the one its page carried, signed with this site's key.
pub(super) fn token_holds(context: &PageContext, posted_token: &str) -> bool {
    guard::token_matches(context.headers(), posted_token, context.site())
}

/// Refuses a form whose token is not the one its page carried.
pub(super) fn checked_token(context: &PageContext, posted_token: &str) -> Result<(), Refusal> {
    if token_holds(context, posted_token) {
        Ok(())
    } else {
        Err(guard::forged_form().into())
    }
}

/// Why a form that carries text was not taken before its text was even read: said above
/// the form, which comes back with the text in it.
pub(super) enum Unsent {
    /// Its token did not hold (a cookie lost, or a form open since before a new key).
    Token,
    /// Nobody is signed in (any more).
    SignedOut,
}

impl Unsent {
    /// The form's writer, or why the form is not taken.
    pub(super) fn check(context: &PageContext, posted_token: &str) -> Result<UserId, Self> {
        if !token_holds(context, posted_token) {
            return Err(Self::Token);
        }
        context.viewer.clone().ok_or(Self::SignedOut)
    }

    pub(super) fn status(&self) -> StatusCode {
        match self {
            Self::Token => StatusCode::FORBIDDEN,
            Self::SignedOut => StatusCode::UNAUTHORIZED,
        }
    }

    pub(super) fn message(&self) -> &'static str {
        match self {
            Self::Token => {
                "This form could not be checked (it may have been open since before the site \
                 changed). Nothing was saved: what you wrote is below; send it again."
            }
            Self::SignedOut => {
                "You are not signed in, so nothing was saved. What you wrote is below: copy \
                 it, sign in, and send it again."
            }
        }
    }
}

/// The signed-in reader, after the form's token is checked.
fn writer(context: &PageContext, posted_token: &str) -> Result<UserId, Refusal> {
    checked_token(context, posted_token)?;
    button_writer(context)
}

/// `done`'s answer to a write, except that a caller without a user item yet is sent to
/// choose a username first, and then to `return_to`.
fn unless_unregistered<T>(
    context: &PageContext,
    written: Result<T, Error>,
    return_to: &str,
    done: impl FnOnce(T) -> Response,
) -> FormResult {
    match written {
        Ok(value) => Ok(done(value)),
        Err(Error::UnregisteredCaller(_)) => Ok(choose_username_first(context, return_to)),
        Err(other) => Err(other.into()),
    }
}

/// The signed-in reader of a page that needs one; a reader who is not signed in is sent to
/// sign in and back here (where the pages only read, an error page says so). Developer
/// wording (headers, modes) stays in the API's problem documents.
pub(super) fn signed_in(context: &PageContext) -> Result<UserId, Refusal> {
    if let Some(viewer) = &context.viewer {
        return Ok(viewer.clone());
    }
    let refusal = match context.sign_in_href() {
        Some(sign_in) => Redirect::to(&sign_in).into_response(),
        None => read_only().into_response(),
    };
    Err(Refusal(Box::new(refusal)))
}

/// What a page that writes answers where the pages only read (`jwt`).
fn read_only() -> Problem {
    Problem::new(
        StatusCode::FORBIDDEN,
        "read-only-pages",
        "This blog's pages only read: posts, comments and likes are written through its API.",
    )
}

/// The signed-in sender of a button's form (nothing typed to keep): a signed-out one gets an
/// error page in the reader's words.
pub(super) fn button_writer(context: &PageContext) -> Result<UserId, Refusal> {
    context.viewer.clone().ok_or_else(|| {
        let problem = match context.identity {
            Identity::ReadOnly => read_only(),
            Identity::Development | Identity::EasyAuth => Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "You are not signed in, so nothing was changed: sign in and try again.",
            ),
        };
        Refusal::from(problem)
    })
}

/// A path of this site to go back to; anything else (another site, a scheme, a path a
/// browser would read as another site's once it drops tabs and line breaks) is `home`.
pub fn local_path(candidate: Option<&str>, home: &str) -> String {
    match candidate {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path
                    .chars()
                    .any(|c| c == '\\' || c.is_control() || c.is_whitespace()) =>
        {
            path.to_owned()
        }
        _ => home.to_owned(),
    }
}

pub(super) fn home(context: &PageContext) -> String {
    format!("{}/", context.base)
}

/// The account page, where a caller without a user item chooses a username first, then
/// comes back to `return_to`.
fn choose_username_first(context: &PageContext, return_to: &str) -> Response {
    Redirect::to(&format!(
        "{}/account?return={}",
        context.base,
        encode(return_to)
    ))
    .into_response()
}

// ---- posts --------------------------------------------------------------------------------

#[derive(Template)]
#[template(path = "write.html")]
pub(super) struct WritePage {
    l: Layout,
    heading: &'static str,
    action: String,
    title: String,
    content: String,
    tags: String,
    publish_at: String,
    alt: String,
    title_error: Option<String>,
    content_error: Option<String>,
    /// A refused tag, status or publication time.
    publication_error: Option<String>,
    pub(super) problem: Option<String>,
    /// Where the form's image upload goes (`super::uploads`).
    upload_action: String,
    /// The content shows images of other sites, which readers see as links.
    foreign_images: bool,
}

#[derive(Deserialize, Default)]
pub struct PostForm {
    #[serde(default)]
    pub(super) csrf: String,
    #[serde(default)]
    pub(super) title: String,
    #[serde(default)]
    pub(super) content: String,
    /// The tags, separated by commas.
    #[serde(default)]
    pub(super) tags: String,
    /// The button pressed: `draft` (Save draft), `published` (Publish) or `scheduled`
    /// (Schedule); none keeps an edited post's publication as it is.
    #[serde(default)]
    intent: String,
    /// The `datetime-local` field, read as UTC (its label says so): `2026-12-01T09:30`.
    #[serde(default, rename = "publishAt")]
    pub(super) publish_at: String,
    /// The alt text of the image to upload (its part of the form), kept when the form comes
    /// back.
    #[serde(default)]
    pub(super) alt: String,
}

/// A post's form, parsed: what C2 takes.
type ParsedPost = (Title, PostContent, Tags, Option<Publication>);

impl PostForm {
    /// The form's fields, checked as C2 checks its body (the same parsers).
    fn parse(&self) -> Result<ParsedPost, ValidationError> {
        let tags: Vec<&str> = self
            .tags
            .split(',')
            .map(str::trim)
            .filter(|tag| !tag.is_empty())
            .collect();
        let intent = Some(self.intent.as_str()).filter(|i| !i.is_empty());
        let publish_at = (intent == Some("scheduled")).then(|| utc_of_local(&self.publish_at));
        Ok((
            Title::parse(&self.title)?,
            PostContent::parse(&self.content)?,
            Tags::parse(&tags)?,
            Publication::parse(intent, publish_at.as_deref())?,
        ))
    }

    /// The form filled with `post` as it is, for its edit page.
    fn of(post: Post) -> Self {
        let publish_at = match post.publication() {
            Publication::Schedule(at) => at.to_string().chars().take(16).collect(),
            _ => String::new(),
        };
        Self {
            tags: post.tags.join(", "),
            title: post.title,
            content: post.content,
            publish_at,
            ..Self::default()
        }
    }
}

/// A `datetime-local` value (`2026-12-01T09:30`, seconds optional) as an ISO-8601 UTC date;
/// anything else as it was typed, for `publishAt`'s own refusal to name.
fn utc_of_local(local: &str) -> String {
    let local = local.trim();
    match local.len() {
        16 => format!("{local}:00Z"),
        19 => format!("{local}Z"),
        _ => local.to_owned(),
    }
}

pub(super) fn write_page(
    context: &PageContext,
    editing: Option<&PostId>,
    form: &PostForm,
    refused: Option<ValidationError>,
) -> WritePage {
    let (heading, action) = match editing {
        Some(post_id) => (
            "Edit the post",
            format!("{}/edit", post_href(&context.base, post_id)),
        ),
        None => ("Write a post", format!("{}/write", context.base)),
    };
    let upload_action = format!("{action}/image");
    let error_of = |field: &str| {
        refused
            .as_ref()
            .filter(|e| e.field == field)
            .map(|e| format!("The {field} {}.", e.reason))
    };
    WritePage {
        l: context.layout(heading, "Write a post in Markdown."),
        heading,
        action,
        title: form.title.clone(),
        content: form.content.clone(),
        tags: form.tags.clone(),
        publish_at: form.publish_at.clone(),
        alt: form.alt.clone(),
        title_error: error_of("title"),
        content_error: error_of("content"),
        publication_error: ["tags", "status", "publishAt"]
            .into_iter()
            .find_map(error_of),
        problem: None,
        upload_action,
        foreign_images: super::markdown::shows_foreign_images(&form.content),
    }
}

/// `GET /write`.
pub async fn write_page_get(BlogPage(context, blog): BlogPage) -> FormResult {
    let caller = signed_in(&context)?;
    match blog.get_user(&caller).await {
        Err(Error::NotFound { .. }) => return Ok(choose_username_first(&context, &context.here)),
        other => other?,
    };
    let empty = PostForm::default();
    Ok(context.respond(StatusCode::OK, &write_page(&context, None, &empty, None)))
}

/// The most bytes the write and edit forms may send (their text, or the text and the image's
/// part of the upload form): more than the API takes, so that a post too long comes back on
/// its form with the reason beside its content rather than as a bare refusal.
pub const MAX_PAGE_FORM_BYTES: usize = 4 * crate::http::MAX_BODY_BYTES;

/// The post's form again, with what was typed and why it was not taken (`problem`'s detail,
/// said above the form, with its status and any `Retry-After`).
pub(super) fn post_form_again(
    context: &PageContext,
    editing: Option<&PostId>,
    form: &PostForm,
    problem: &Problem,
) -> Response {
    let mut page = write_page(context, editing, form, None);
    page.problem = Some(problem.detail.clone());
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = context.respond(status, &page);
    if let Some(seconds) = problem.retry_after_seconds {
        response
            .headers_mut()
            .insert(axum::http::header::RETRY_AFTER, seconds.into());
    }
    response
}

/// The post's form again, with what was typed and why it was not sent.
fn unsent_post_form(
    context: &PageContext,
    editing: Option<&PostId>,
    form: &PostForm,
    unsent: &Unsent,
) -> Response {
    let problem = Problem::new(unsent.status(), "form-not-taken", unsent.message());
    post_form_again(context, editing, form, &problem)
}

/// The post's form again, with what was typed and why the store did not take it (the post
/// gone, another author's, the store busy or unreachable).
fn unwritten_post_form(
    context: &PageContext,
    editing: Option<&PostId>,
    form: &PostForm,
    error: &Error,
) -> Response {
    let problem = Problem::logged(error);
    let problem = Problem {
        detail: format!(
            "Nothing was saved: {}. What you wrote is below.",
            problem.detail
        ),
        ..problem
    };
    post_form_again(context, editing, form, &problem)
}

/// `POST /write`: C2, then the new post's page.
pub async fn create_post(
    BlogPage(context, blog): BlogPage,
    FormBody(form): FormBody<PostForm>,
) -> FormResult {
    let caller = match Unsent::check(&context, &form.csrf) {
        Ok(caller) => caller,
        Err(unsent) => return Ok(unsent_post_form(&context, None, &form, &unsent)),
    };
    let (title, content, tags, publication) = match form.parse() {
        Ok(parsed) => parsed,
        Err(refused) => return Ok(refused_post_form(&context, None, &form, refused)),
    };
    let publication = publication.unwrap_or(Publication::Publish);
    let written = blog
        .create_tagged_post(&caller, (title, content, &tags), publication, None)
        .await;
    match written {
        Err(Error::Validation(refused)) => Ok(refused_post_form(&context, None, &form, refused)),
        Err(error) if !matches!(error, Error::UnregisteredCaller(_)) => {
            Ok(unwritten_post_form(&context, None, &form, &error))
        }
        written => unless_unregistered(&context, written, &context.here, |post| {
            Redirect::to(&canonical_post_href(&context.base, &post)).into_response()
        }),
    }
}

/// The post's form again, with what was typed and the field C2 refused beside it.
fn refused_post_form(
    context: &PageContext,
    editing: Option<&PostId>,
    form: &PostForm,
    refused: ValidationError,
) -> Response {
    let page = write_page(context, editing, form, Some(refused));
    context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page)
}

/// `GET /posts/{postId}/edit`: the author's form, filled with the post.
pub async fn edit_post_page(
    BlogPage(context, blog): BlogPage,
    PostPath(post_id): PostPath,
) -> FormResult {
    let caller = signed_in(&context)?;
    let post = blog
        .get_post_seen_by::<Post>(&post_id, Some(&caller))
        .await?;
    if post.user_id != caller {
        return Err(Error::Forbidden("only the author may edit a post").into());
    }
    let page = write_page(&context, Some(&post_id), &PostForm::of(post), None);
    Ok(context.respond(StatusCode::OK, &page))
}

/// `POST /posts/{postId}/edit`: C2's edit, then the post's page.
pub async fn edit_post(
    BlogPage(context, blog): BlogPage,
    PostPath(post_id): PostPath,
    FormBody(form): FormBody<PostForm>,
) -> FormResult {
    let caller = match Unsent::check(&context, &form.csrf) {
        Ok(caller) => caller,
        Err(unsent) => return Ok(unsent_post_form(&context, Some(&post_id), &form, &unsent)),
    };
    let (title, content, tags, publication) = match form.parse() {
        Ok(parsed) => parsed,
        Err(refused) => return Ok(refused_post_form(&context, Some(&post_id), &form, refused)),
    };
    let edited = blog
        .edit_tagged_post(
            &caller,
            &post_id,
            (title, content, Some(&tags)),
            publication,
        )
        .await;
    match edited {
        Ok(edited) => {
            Ok(Redirect::to(&canonical_post_href(&context.base, &edited)).into_response())
        }
        Err(Error::Validation(refused)) => {
            Ok(refused_post_form(&context, Some(&post_id), &form, refused))
        }
        Err(error) => Ok(unwritten_post_form(&context, Some(&post_id), &form, &error)),
    }
}

/// `POST /posts/{postId}/delete`: the author deletes the post, then the front page.
pub async fn delete_post(
    BlogPage(context, blog): BlogPage,
    PostPath(post_id): PostPath,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let caller = writer(&context, &form.csrf)?;
    blog.delete_post(&caller, &post_id).await?;
    Ok(Redirect::to(&format!("{}?done=post-deleted", home(&context))).into_response())
}

// ---- comments and likes -------------------------------------------------------------------

#[derive(Deserialize)]
pub struct CommentForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    content: String,
}

/// `POST /posts/{postId}/comments`: C3, then the post's comments. A refused comment comes
/// back on the post page, beside the comment field.
pub async fn add_comment(
    BlogPage(mut context, blog): BlogPage,
    PostPath(post_id): PostPath,
    FormBody(form): FormBody<CommentForm>,
) -> FormResult {
    let href = post_href(&context.base, &post_id);
    // A refused comment comes back on the post's page, which sign-in returns to.
    context.here = href.clone();
    let refused = |status: StatusCode, reason: String| {
        refused_comment(&context, &blog, &post_id, &form.content, status, reason)
    };
    let caller = match Unsent::check(&context, &form.csrf) {
        Ok(caller) => caller,
        Err(unsent) => return refused(unsent.status(), unsent.message().to_owned()).await,
    };
    let content = match CommentContent::parse(&form.content) {
        Ok(content) => content,
        Err(invalid) => {
            let reason = format!("The comment {}.", invalid.reason);
            return refused(StatusCode::UNPROCESSABLE_ENTITY, reason).await;
        }
    };
    let written = blog.add_comment(&caller, &post_id, content).await;
    unless_unregistered(&context, written, &href, |comment| {
        Redirect::to(&format!("{href}#comment-{}", encode(comment.id.as_str()))).into_response()
    })
}

/// The post's page with a refused comment's text in its field and the reason beside it.
async fn refused_comment(
    context: &PageContext,
    blog: &crate::blog::Blog,
    post_id: &PostId,
    text: &str,
    status: StatusCode,
    reason: String,
) -> FormResult {
    let reading = PostReading::read(blog, context.viewer.as_ref(), post_id, None).await?;
    let page = post_page_of(context, reading, Some((text.to_owned(), reason)));
    Ok(context.respond(status, &page))
}

/// `POST /posts/{postId}/comments/{commentId}/delete`: by the comment's or the post's author.
pub async fn delete_comment(
    BlogPage(context, blog): BlogPage,
    CommentPath(post_id, comment_id): CommentPath,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let caller = writer(&context, &form.csrf)?;
    blog.delete_comment(&caller, &post_id, &comment_id).await?;
    let back = format!(
        "{}?done=comment-deleted#comments",
        post_href(&context.base, &post_id)
    );
    Ok(Redirect::to(&back).into_response())
}

/// `POST /posts/{postId}/like`: C4, then the post (or, for the page's script, the count).
pub async fn like(
    BlogPage(context, blog): BlogPage,
    PostPath(post_id): PostPath,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let caller = writer(&context, &form.csrf)?;
    match blog.like_post(&caller, &post_id).await {
        Ok(_) => after_like(&context, &blog, &post_id, true).await,
        Err(Error::UnregisteredCaller(_)) => Ok(choose_username_first(
            &context,
            &post_href(&context.base, &post_id),
        )),
        Err(other) => Err(other.into()),
    }
}

/// `POST /posts/{postId}/unlike`: the caller's like is removed.
pub async fn unlike(
    BlogPage(context, blog): BlogPage,
    PostPath(post_id): PostPath,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let caller = writer(&context, &form.csrf)?;
    match blog.unlike(&caller, &post_id).await {
        // Not liked (any more): nothing to remove, which is what was asked.
        Ok(()) | Err(Error::NotFound { kind: "like", .. }) => {
            after_like(&context, &blog, &post_id, false).await
        }
        Err(other) => Err(other.into()),
    }
}

/// Back to the post; the page's script, which asks for JSON, gets the post's new like count
/// and whether the reader now likes it (to offer the other button).
async fn after_like(
    context: &PageContext,
    blog: &crate::blog::Blog,
    post_id: &PostId,
    liked: bool,
) -> FormResult {
    if !context.asks_for_json() {
        return Ok(Redirect::to(&post_href(&context.base, post_id)).into_response());
    }
    let post = blog.get_post(post_id).await?;
    let answer = serde_json::json!({
        "likeCount": post.like_count,
        "likeText": likes_text(post.like_count),
        "liked": liked,
    });
    Ok(axum::Json(answer).into_response())
}

#[cfg(test)]
mod tests {
    use super::local_path;

    #[test]
    fn only_a_path_of_this_site_is_a_way_back() {
        for kept in ["/write", "/tenants/t/posts/p?comments=x#comments", "/"] {
            assert_eq!(local_path(Some(kept), "/home"), kept);
        }
        for refused in [
            "https://elsewhere.example/",
            "//elsewhere.example",
            "/\\elsewhere.example",
            "/\t/elsewhere.example",
            "/\n/elsewhere.example",
            " /write",
            "javascript:alert(1)",
            "",
        ] {
            assert_eq!(local_path(Some(refused), "/home"), "/home", "{refused:?}");
        }
        assert_eq!(local_path(None, "/home"), "/home");
    }
}
