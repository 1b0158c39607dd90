//! The pages that write, and their forms: a post (C2: write, edit, delete), a comment (C3,
//! delete), a like (C4, unlike), the account (C1: choose or change the username; delete),
//! and the development sign-in. Each form works without JavaScript: it posts, the server
//! answers `303 See Other` to the page that shows the result, and invalid input comes back
//! on the form with the reason beside its field, a 4xx status and the text kept; nothing
//! is stored then. Every form carries the CSRF token ([`super::guard`]).

use askama::Template;
use axum::extract::rejection::FormRejection;
use axum::extract::{FromRequest, Query, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::context::{Identity, Layout, PageContext, encode};
use super::guard;
use super::pages::{PostReading, post_href, post_page_of};
use crate::api::extract::{PathPair, PathParam};
use crate::api::tenants::CurrentBlog;
use crate::auth::{AuthError, DEVELOPMENT_CALLER_COOKIE, HeaderSource};
use crate::domain::{
    CommentContent, CommentId, PostContent, PostId, Title, UserId, Username, ValidationError,
};
use crate::error::Error;
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

type FormResult = Result<Response, Refusal>;

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
                Err(crate::api::body_too_large())
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

/// Refuses a form whose token is not the one its page carried.
fn checked_token(context: &PageContext, posted_token: &str) -> Result<(), Refusal> {
    if guard::token_matches(context.headers(), posted_token) {
        Ok(())
    } else {
        Err(guard::forged_form().into())
    }
}

/// The signed-in reader, after the form's token is checked.
fn writer(context: &PageContext, posted_token: &str) -> Result<UserId, Refusal> {
    checked_token(context, posted_token)?;
    signed_in(context)
}

/// The signed-in reader and the post of the path, for a form about a post.
fn post_writer(
    context: &PageContext,
    posted_token: &str,
    post_id: &str,
) -> Result<(UserId, PostId), Refusal> {
    let caller = writer(context, posted_token)?;
    let post_id = PostId::parse(post_id).map_err(Error::from)?;
    Ok((caller, post_id))
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

fn signed_in(context: &PageContext) -> Result<UserId, Refusal> {
    context.viewer.clone().ok_or_else(|| {
        // The refusal names the way to sign in that this deployment has.
        let source = match context.identity {
            Identity::Development => HeaderSource::Client,
            Identity::EasyAuth | Identity::ReadOnly => HeaderSource::EasyAuth,
        };
        Refusal(Box::new(
            AuthError::MissingPrincipal(source).into_response(),
        ))
    })
}

/// A path of this site to go back to; anything else (another site, a scheme) is home.
fn local_path(candidate: Option<&str>, home: &str) -> String {
    match candidate {
        Some(path) if path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') => {
            path.to_owned()
        }
        _ => home.to_owned(),
    }
}

fn home(context: &PageContext) -> String {
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
struct WritePage {
    l: Layout,
    heading: &'static str,
    action: String,
    submit: &'static str,
    title: String,
    content: String,
    title_error: Option<String>,
    content_error: Option<String>,
    problem: Option<String>,
}

#[derive(Deserialize, Default)]
pub struct PostForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

impl PostForm {
    fn parse(&self) -> Result<(Title, PostContent), ValidationError> {
        Ok((
            Title::parse(&self.title)?,
            PostContent::parse(&self.content)?,
        ))
    }
}

fn write_page(
    context: &PageContext,
    editing: Option<&PostId>,
    form: &PostForm,
    refused: Option<ValidationError>,
) -> WritePage {
    let (heading, action, submit) = match editing {
        Some(post_id) => (
            "Edit the post",
            format!("{}/edit", post_href(&context.base, post_id)),
            "Save",
        ),
        None => ("Write a post", format!("{}/write", context.base), "Publish"),
    };
    let error_of = |field: &str| {
        refused
            .as_ref()
            .filter(|e| e.field == field)
            .map(|e| format!("The {field} {}.", e.reason))
    };
    WritePage {
        l: context.layout(
            format!("{heading} · Cosmos Blog"),
            "Write a post in Markdown.",
        ),
        heading,
        action,
        submit,
        title: form.title.clone(),
        content: form.content.clone(),
        title_error: error_of("title"),
        content_error: error_of("content"),
        problem: None,
    }
}

/// `GET /write`.
pub async fn write_page_get(context: PageContext, CurrentBlog(blog): CurrentBlog) -> FormResult {
    let caller = signed_in(&context)?;
    match blog.get_user(&caller).await {
        Err(Error::NotFound { .. }) => return Ok(choose_username_first(&context, &context.here)),
        other => other?,
    };
    let empty = PostForm::default();
    Ok(context.respond(StatusCode::OK, &write_page(&context, None, &empty, None)))
}

/// `POST /write`: C2, then the new post's page.
pub async fn create_post(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    FormBody(form): FormBody<PostForm>,
) -> FormResult {
    let caller = writer(&context, &form.csrf)?;
    let (title, content) = match form.parse() {
        Ok(parsed) => parsed,
        Err(refused) => {
            let page = write_page(&context, None, &form, Some(refused));
            return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let written = blog.create_post(&caller, title, content).await;
    unless_unregistered(&context, written, &context.here, |post| {
        Redirect::to(&post_href(&context.base, &post.id)).into_response()
    })
}

/// `GET /posts/{postId}/edit`: the author's form, filled with the post.
pub async fn edit_post_page(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
) -> FormResult {
    let caller = signed_in(&context)?;
    let post_id = PostId::parse(&post_id).map_err(Error::from)?;
    let post = blog.get_post(&post_id).await?;
    if post.user_id != caller {
        return Err(Error::Forbidden("only the author may edit a post").into());
    }
    let form = PostForm {
        title: post.title,
        content: post.content,
        ..PostForm::default()
    };
    let page = write_page(&context, Some(&post_id), &form, None);
    Ok(context.respond(StatusCode::OK, &page))
}

/// `POST /posts/{postId}/edit`: C2's edit, then the post's page.
pub async fn edit_post(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
    FormBody(form): FormBody<PostForm>,
) -> FormResult {
    let (caller, post_id) = post_writer(&context, &form.csrf, &post_id)?;
    let (title, content) = match form.parse() {
        Ok(parsed) => parsed,
        Err(refused) => {
            let page = write_page(&context, Some(&post_id), &form, Some(refused));
            return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    blog.edit_post(&caller, &post_id, title, content).await?;
    Ok(Redirect::to(&post_href(&context.base, &post_id)).into_response())
}

/// `POST /posts/{postId}/delete`: the author deletes the post, then the front page.
pub async fn delete_post(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let (caller, post_id) = post_writer(&context, &form.csrf, &post_id)?;
    blog.delete_post(&caller, &post_id).await?;
    Ok(Redirect::to(&home(&context)).into_response())
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
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
    FormBody(form): FormBody<CommentForm>,
) -> FormResult {
    let (caller, post_id) = post_writer(&context, &form.csrf, &post_id)?;
    let content = match CommentContent::parse(&form.content) {
        Ok(content) => content,
        Err(refused) => {
            let reading = PostReading::read(&blog, Some(&caller), &post_id, None).await?;
            let reason = format!("The comment {}.", refused.reason);
            let page = post_page_of(&context, reading, Some((form.content.clone(), reason)));
            return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let href = post_href(&context.base, &post_id);
    let written = blog.add_comment(&caller, &post_id, content).await;
    unless_unregistered(&context, written, &href, |comment| {
        Redirect::to(&format!("{href}#comment-{}", encode(comment.id.as_str()))).into_response()
    })
}

/// `POST /posts/{postId}/comments/{commentId}/delete`: by the comment's or the post's author.
pub async fn delete_comment(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathPair(post_id, comment_id): PathPair,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let (caller, post_id) = post_writer(&context, &form.csrf, &post_id)?;
    let comment_id = CommentId::parse(&comment_id).map_err(Error::from)?;
    blog.delete_comment(&caller, &post_id, &comment_id).await?;
    Ok(Redirect::to(&format!("{}#comments", post_href(&context.base, &post_id))).into_response())
}

/// `POST /posts/{postId}/like`: C4, then the post (or, for the page's script, the count).
pub async fn like(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let (caller, post_id) = post_writer(&context, &form.csrf, &post_id)?;
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
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    PathParam(post_id): PathParam,
    FormBody(form): FormBody<Button>,
) -> FormResult {
    let (caller, post_id) = post_writer(&context, &form.csrf, &post_id)?;
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
    let wants_json = context
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"));
    if !wants_json {
        return Ok(Redirect::to(&post_href(&context.base, post_id)).into_response());
    }
    let post = blog.get_post(post_id).await?;
    Ok(
        axum::Json(serde_json::json!({ "likeCount": post.like_count, "liked": liked }))
            .into_response(),
    )
}

// ---- the account --------------------------------------------------------------------------

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    l: Layout,
    user_id: String,
    registered: bool,
    username: String,
    username_error: Option<String>,
    note: Option<String>,
    return_to: String,
}

impl AccountPage {
    fn new(context: &PageContext, caller: &UserId, registered: bool, username: String) -> Self {
        Self {
            l: context.layout("Your account · Cosmos Blog", "Your username and account."),
            user_id: caller.as_str().to_owned(),
            registered,
            username,
            username_error: None,
            note: None,
            return_to: String::new(),
        }
    }
}

/// `?return=` of the account and sign-in pages: where to go once done.
#[derive(Deserialize)]
pub struct ReturnTo {
    #[serde(default, rename = "return")]
    return_to: Option<String>,
}

/// `GET /account`: the username (C1's form), and the way to delete the account. A caller
/// without a user item is asked to choose a username first.
pub async fn account_page(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    Query(query): Query<ReturnTo>,
) -> FormResult {
    let caller = signed_in(&context)?;
    let (registered, username) = match blog.get_user(&caller).await {
        Ok(user) => (true, user.username),
        Err(Error::NotFound { .. }) => (false, String::new()),
        Err(other) => return Err(other.into()),
    };
    let page = AccountPage {
        note: (!registered)
            .then(|| "Choose a username: it is shown with everything you write.".to_owned()),
        return_to: query.return_to.unwrap_or_default(),
        ..AccountPage::new(&context, &caller, registered, username)
    };
    Ok(context.respond(StatusCode::OK, &page))
}

#[derive(Deserialize)]
pub struct AccountForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    username: String,
    #[serde(default, rename = "return")]
    return_to: String,
}

/// `POST /account`: C1 (create or rename), then where the reader was going, or the account.
pub async fn rename(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    FormBody(form): FormBody<AccountForm>,
) -> FormResult {
    let caller = writer(&context, &form.csrf)?;
    let username = match Username::parse(&form.username) {
        Ok(username) => username,
        Err(refused) => {
            let registered = blog.get_user(&caller).await.is_ok();
            let page = AccountPage {
                username_error: Some(format!("The username {}.", refused.reason)),
                return_to: form.return_to.clone(),
                ..AccountPage::new(&context, &caller, registered, form.username.clone())
            };
            return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    blog.put_user(&caller, caller.clone(), username).await?;
    let account = format!("{}/account", context.base);
    let next = if form.return_to.is_empty() {
        account
    } else {
        local_path(Some(&form.return_to), &account)
    };
    Ok(Redirect::to(&next).into_response())
}

#[derive(Template)]
#[template(path = "delete_account.html")]
struct DeleteAccountPage {
    l: Layout,
    user_id: String,
    error: Option<String>,
}

impl DeleteAccountPage {
    fn new(context: &PageContext, caller: &UserId, error: Option<String>) -> Self {
        Self {
            l: context.layout("Delete your account · Cosmos Blog", "Delete your account."),
            user_id: caller.as_str().to_owned(),
            error,
        }
    }
}

/// `GET /account/delete`: the confirmation.
pub async fn delete_account_page(context: PageContext) -> FormResult {
    let caller = signed_in(&context)?;
    let page = DeleteAccountPage::new(&context, &caller, None);
    Ok(context.respond(StatusCode::OK, &page))
}

#[derive(Deserialize)]
pub struct DeleteAccountForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    confirm: String,
}

/// `POST /account/delete`: with the confirmation ticked, the account is deleted (and the
/// development sign-in forgotten); then the front page.
pub async fn delete_account(
    context: PageContext,
    CurrentBlog(blog): CurrentBlog,
    FormBody(form): FormBody<DeleteAccountForm>,
) -> FormResult {
    let caller = writer(&context, &form.csrf)?;
    if form.confirm != "yes" {
        let refused = Some("Tick the box to confirm.".to_owned());
        let page = DeleteAccountPage::new(&context, &caller, refused);
        return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
    }
    blog.delete_user(&caller, &caller).await?;
    let mut response = Redirect::to(&home(&context)).into_response();
    if context.identity == Identity::Development {
        response
            .headers_mut()
            .append(header::SET_COOKIE, forget_development_caller());
    }
    Ok(response)
}

// ---- signing in and out -------------------------------------------------------------------

#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignInPage {
    l: Layout,
    user_id: String,
    error: Option<String>,
    return_to: String,
}

impl SignInPage {
    fn new(
        context: &PageContext,
        user_id: String,
        error: Option<String>,
        return_to: String,
    ) -> Self {
        Self {
            l: context.layout(
                "Sign in · Cosmos Blog",
                "Sign in to write, comment and like.",
            ),
            user_id,
            error,
            return_to,
        }
    }
}

/// `GET /sign-in`: the development sign-in form; under Easy Auth, its login.
pub async fn sign_in_page(mut context: PageContext, Query(query): Query<ReturnTo>) -> FormResult {
    let return_to = local_path(query.return_to.as_deref(), "/");
    match context.identity {
        Identity::Development => {}
        Identity::EasyAuth => {
            return Ok(Redirect::to(&format!(
                "/.auth/login/aad?post_login_redirect_uri={}",
                encode(&return_to)
            ))
            .into_response());
        }
        Identity::ReadOnly => {
            return Err(Problem::new(
                StatusCode::NOT_FOUND,
                "read-only-pages",
                "these pages only read: write through the API with a bearer token",
            )
            .into());
        }
    }
    context.ensure_form_token();
    let page = SignInPage::new(&context, String::new(), None, return_to);
    Ok(context.respond(StatusCode::OK, &page))
}

#[derive(Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    user_id: String,
    #[serde(default, rename = "return")]
    return_to: String,
}

/// `POST /sign-in` (development): remembers the user id in a cookie, which pages and the
/// API then take as the caller.
pub async fn sign_in(mut context: PageContext, FormBody(form): FormBody<SignInForm>) -> FormResult {
    if context.identity != Identity::Development {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            "development-only",
            "signing in here is for development (BLOG_AUTH=header) only",
        )
        .into());
    }
    checked_token(&context, &form.csrf)?;
    let return_to = local_path(Some(&form.return_to), "/");
    let user_id = match UserId::parse(form.user_id.trim()) {
        Ok(user_id) => user_id,
        Err(refused) => {
            context.ensure_form_token();
            let reason = Some(format!("The user id {}.", refused.reason));
            let page = SignInPage::new(&context, form.user_id.clone(), reason, return_to);
            return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let cookie = format!(
        "{DEVELOPMENT_CALLER_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax",
        encode(user_id.as_str())
    );
    let mut response = Redirect::to(&return_to).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(response)
}

/// `POST /sign-out` (development): forgets the cookie.
pub async fn sign_out(context: PageContext, FormBody(form): FormBody<SignInForm>) -> FormResult {
    checked_token(&context, &form.csrf)?;
    let mut response = Redirect::to(&local_path(Some(&form.return_to), "/")).into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, forget_development_caller());
    Ok(response)
}

fn forget_development_caller() -> HeaderValue {
    HeaderValue::from_static("blog_dev_user=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0")
}
