//! The account's pages and forms (C1: choose or change the username; delete the account),
//! and the development sign-in and sign-out, with the form helpers of [`super::forms`].

use askama::Template;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use cookie::SameSite;
use serde::Deserialize;

use super::context::{BlogPage, Identity, Layout, PageContext, encode};
use super::forms::{
    FormBody, FormResult, Unsent, button_writer, checked_token, home, local_path, signed_in,
    token_holds,
};
use crate::auth::DEVELOPMENT_CALLER_COOKIE;
use crate::domain::{UserId, Username};
use crate::error::Error;
use crate::problem::Problem;

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
            l: context.layout("Your account", "Your username and account."),
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
    BlogPage(context, blog): BlogPage,
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
    BlogPage(context, blog): BlogPage,
    FormBody(form): FormBody<AccountForm>,
) -> FormResult {
    let caller = button_writer(&context)?;
    if !token_holds(&context, &form.csrf) {
        let registered = blog.get_user(&caller).await.is_ok();
        let page = AccountPage {
            note: Some(Unsent::Token.message().to_owned()),
            return_to: form.return_to.clone(),
            ..AccountPage::new(&context, &caller, registered, form.username.clone())
        };
        return Ok(context.respond(Unsent::Token.status(), &page));
    }
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
        format!("{account}?done=renamed")
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
            l: context.layout("Delete your account", "Delete your account."),
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
    BlogPage(context, blog): BlogPage,
    FormBody(form): FormBody<DeleteAccountForm>,
) -> FormResult {
    let caller = button_writer(&context)?;
    if !token_holds(&context, &form.csrf) {
        let refused = Some(Unsent::Token.message().to_owned());
        let page = DeleteAccountPage::new(&context, &caller, refused);
        return Ok(context.respond(Unsent::Token.status(), &page));
    }
    if form.confirm != "yes" {
        let refused = Some("Tick the box to confirm.".to_owned());
        let page = DeleteAccountPage::new(&context, &caller, refused);
        return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
    }
    blog.delete_user(&caller, &caller).await?;
    let home = format!("{}?done=account-deleted", home(&context));
    let mut response = Redirect::to(&home).into_response();
    if context.identity == Identity::Development {
        forget_development_caller(&context, &mut response);
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
            l: context.layout("Sign in", "Sign in to write, comment and like."),
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
    let return_to = local_path(Some(&form.return_to), "/");
    if !token_holds(&context, &form.csrf) {
        context.ensure_form_token();
        let reason = Some(Unsent::Token.message().to_owned());
        let page = SignInPage::new(&context, form.user_id.clone(), reason, return_to);
        return Ok(context.respond(Unsent::Token.status(), &page));
    }
    let user_id = match UserId::parse(form.user_id.trim()) {
        Ok(user_id) => user_id,
        Err(refused) => {
            context.ensure_form_token();
            let reason = Some(format!("The user id {}.", refused.reason));
            let page = SignInPage::new(&context, form.user_id.clone(), reason, return_to);
            return Ok(context.respond(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let cookie =
        context
            .site()
            .cookies
            .set(DEVELOPMENT_CALLER_COOKIE, user_id.as_str(), SameSite::Lax);
    let mut response = Redirect::to(&return_to).into_response();
    if let Some(value) = cookie {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    Ok(response)
}

/// `POST /sign-out` (development): forgets the cookie.
pub async fn sign_out(context: PageContext, FormBody(form): FormBody<SignInForm>) -> FormResult {
    checked_token(&context, &form.csrf)?;
    let mut response = Redirect::to(&local_path(Some(&form.return_to), "/")).into_response();
    forget_development_caller(&context, &mut response);
    Ok(response)
}

/// Adds to `response` the `Set-Cookie` that removes the development sign-in's cookie.
fn forget_development_caller(context: &PageContext, response: &mut Response) {
    let removal = context
        .site()
        .cookies
        .remove(DEVELOPMENT_CALLER_COOKIE, SameSite::Lax);
    if let Some(value) = removal {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}
