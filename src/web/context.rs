//! What every page needs besides its own content: where the blog's pages are (its base
//! path), who is looking, how one signs in and out in this authentication mode, the form
//! token, and the asset URLs; and how a rendered page becomes a response.

use std::sync::Arc;

use askama::Template;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::assets;
use super::guard;
use super::site::Site;
use crate::auth::Authenticator;
use crate::blog::Blog;
use crate::domain::{TenantId, UserId};
use crate::http::AppState;
use crate::http::tenants::CurrentBlog;
use crate::problem::Problem;

/// What a path segment or a query value may keep unencoded (RFC 3986's unreserved).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `text` percent-encoded for a path segment or a query value.
pub fn encode(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

/// Where the addressed blog's pages start: empty in `single`, `/tenants/{tenantId}` in
/// `multi`.
#[derive(Debug, Clone, Default)]
pub struct PageBase(pub String);

impl PageBase {
    pub fn of_tenant(tenant: &TenantId) -> Self {
        Self(format!("/tenants/{}", encode(tenant.as_str())))
    }

    /// The base of the blog a request addresses: `tenant`'s (the tenant routes put it in
    /// the request's extensions), or the only blog's.
    pub fn of(tenant: Option<&TenantId>) -> Self {
        tenant.map(Self::of_tenant).unwrap_or_default()
    }
}

/// How a reader signs in and out, by authentication mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// `header` (development): a sign-in page sets a cookie.
    Development,
    /// `easyauth`: App Service Authentication's own endpoints.
    EasyAuth,
    /// `jwt`: a browser has no token to send, so the pages only read.
    ReadOnly,
}

impl Identity {
    fn of(auth: &Authenticator) -> Self {
        match auth {
            Authenticator::DevelopmentHeader(_) => Self::Development,
            Authenticator::TrustedHeader | Authenticator::EasyAuthDisabled => Self::EasyAuth,
            Authenticator::Jwt(_) => Self::ReadOnly,
        }
    }
}

/// The request's page context: every page handler takes it.
pub struct PageContext {
    pub base: String,
    /// The path (and query) the browser asked for, as it sent it: where sign-in returns.
    pub here: String,
    pub viewer: Option<UserId>,
    /// The signed-in reader's username, once they have chosen one.
    pub viewer_name: Option<String>,
    pub identity: Identity,
    /// What the last action did, said once on the page it led to (`?done=`).
    pub done: Option<&'static str>,
    site: Arc<Site>,
    headers: HeaderMap,
    /// The form token, once a page with a form asked for it.
    csrf: Option<(String, Option<HeaderValue>)>,
}

/// A page of a blog: what every page needs ([`PageContext`]) and the blog's operations, which
/// every page and form of a blog takes together.
pub struct BlogPage(pub PageContext, pub Blog);

impl FromRequestParts<AppState> for BlogPage {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let context = PageContext::from_request_parts(parts, state).await?;
        let CurrentBlog(blog) = CurrentBlog::from_request_parts(parts, state).await?;
        Ok(BlogPage(context, blog))
    }
}

impl FromRequestParts<AppState> for PageContext {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let site = Site::of(&parts.extensions).ok_or_else(|| {
            tracing::error!("a page was served without the site's settings");
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "something went wrong on our side; it has been logged",
            )
        })?;
        Ok(Self::new(state, site, parts).await)
    }
}

/// `?done=` of the page an action leads to, and what it says.
const DONE: [(&str, &str); 4] = [
    (
        "renamed",
        "Your username is changed. Your posts, comments and likes show it within a few seconds.",
    ),
    ("comment-deleted", "The comment is deleted."),
    (
        "post-deleted",
        "The post is deleted. It leaves the lists within a few seconds.",
    ),
    (
        "account-deleted",
        "Your account is deleted. Its posts, comments and likes disappear from every page \
         within a few seconds.",
    ),
];

/// What `?done=` in `query` says, if it is one of [`DONE`].
fn done_message(query: Option<&str>) -> Option<&'static str> {
    let done = query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("done="))?;
    DONE.iter()
        .find(|(code, _)| *code == done)
        .map(|(_, message)| *message)
}

impl PageContext {
    async fn new(state: &AppState, site: Arc<Site>, parts: &mut Parts) -> Self {
        let identity = Identity::of(&state.auth);
        let viewer = match identity {
            Identity::ReadOnly => None,
            _ => state.auth.caller(&parts.headers).await.ok(),
        };
        // The name the navigation shows: one point read of the reader's user item, in the
        // blog the request addresses (none where it addresses none, as an error page may).
        let viewer_name = match &viewer {
            Some(viewer) => match CurrentBlog::from_request_parts(parts, state).await {
                Ok(CurrentBlog(blog)) => blog.get_user(viewer).await.ok().map(|u| u.username),
                Err(_) => None,
            },
            None => None,
        };
        let (headers, extensions, uri) = (&parts.headers, &parts.extensions, &parts.uri);
        let base = PageBase::of(extensions.get::<TenantId>()).0;
        let here = match base.is_empty() {
            true => uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
            // Under a tenant: the blog's base, then the path below the tenant's segment (`/`
            // for the blog's root) and the query, as sent.
            false => {
                let below = uri.path().strip_prefix("/tenants/").unwrap_or_default();
                let rest = below.find('/').map_or("/", |at| &below[at..]);
                match uri.query() {
                    Some(query) => format!("{base}{rest}?{query}"),
                    None => format!("{base}{rest}"),
                }
            }
        };
        let mut context = Self {
            base,
            here,
            viewer,
            viewer_name,
            identity,
            done: done_message(uri.query()),
            site,
            headers: headers.clone(),
            csrf: None,
        };
        if context.viewer.is_some() {
            context.ensure_form_token();
        }
        context
    }

    /// The context of an error page, from what the request asked (the router has not said
    /// which blog it addresses at this layer: the base comes from the path).
    pub async fn for_error(state: &AppState, site: Arc<Site>, request: &mut Parts) -> Self {
        let mut context = Self::new(state, site, request).await;
        if let Some(tenant) = request
            .uri
            .path()
            .strip_prefix("/tenants/")
            .and_then(|rest| rest.split('/').next())
        {
            context.base = format!("/tenants/{tenant}");
        }
        context
    }

    /// A form token for this page (a cookie is set with it when the browser has none).
    pub fn ensure_form_token(&mut self) -> &str {
        let headers = &self.headers;
        &self
            .csrf
            .get_or_insert_with(|| guard::form_token(headers, &self.site))
            .0
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// Whether the request asks for JSON (`Accept`): the pages' scripts do, to get an answer
    /// they can show in place of the page a form would lead to.
    pub fn asks_for_json(&self) -> bool {
        self.headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("application/json"))
    }

    pub fn site(&self) -> &Site {
        &self.site
    }

    /// The absolute URL of a path of this site, from its public address (never from the
    /// request's host): for canonical links and link previews.
    pub fn absolute(&self, path: &str) -> String {
        self.site.public_url.join(path)
    }

    /// Where a reader who is not signed in goes to sign in and come back here; `None` where
    /// the pages only read.
    pub fn sign_in_href(&self) -> Option<String> {
        let here = encode(&self.here);
        match self.identity {
            Identity::Development => Some(format!("/sign-in?return={here}")),
            Identity::EasyAuth => Some(format!("/.auth/login/aad?post_login_redirect_uri={here}")),
            Identity::ReadOnly => None,
        }
    }

    /// The layout's part of a page: `title` is the page's own (the blog's name follows it),
    /// `description` its meta description. The canonical link is this page's address without
    /// its query; the head links the blog's feeds. Pages change what differs.
    pub fn layout(&self, title: impl Into<String>, description: impl Into<String>) -> Layout {
        let sign_out = (self.identity == Identity::EasyAuth).then(|| {
            format!(
                "/.auth/logout?post_logout_redirect_uri={}",
                encode(&format!("{}/", self.base))
            )
        });
        let path = self.here.split(['?', '#']).next().unwrap_or("/");
        Layout {
            title: format!("{} · {}", title.into(), self.site.title),
            description: description.into(),
            site_name: self.site.title.clone(),
            home: format!("{}/", self.base),
            base: self.base.clone(),
            viewer: self.viewer.as_ref().map(|v| v.as_str().to_owned()),
            viewer_name: self.viewer_name.clone(),
            done: self.done,
            viewer_href: self
                .viewer
                .as_ref()
                .map(|v| format!("{}/users/{}", self.base, encode(v.as_str())))
                .unwrap_or_default(),
            read_only: self.identity == Identity::ReadOnly,
            sign_in: self.sign_in_href().unwrap_or_default(),
            sign_out_link: sign_out,
            here: self.here.clone(),
            csrf: self
                .csrf
                .as_ref()
                .map(|(t, _)| t.clone())
                .unwrap_or_default(),
            css: assets::css_url(),
            script: assets::script_url(),
            icon: assets::icon_url(),
            feed: format!("{}/feed.atom", self.base),
            feeds: FeedLink::both("Latest posts", &format!("{}/feed", self.base)),
            og: None,
            json_ld: None,
            canonical: self.absolute(path),
        }
    }

    /// `page` as the response, with `status`, the form token's cookie if new, and caching
    /// that suits it: a signed-in reader's pages are theirs alone.
    pub fn respond(&self, status: StatusCode, page: &impl Template) -> Response {
        let html = match page.render() {
            Ok(html) => html,
            Err(e) => {
                tracing::error!(error = %e, "a page did not render");
                return Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "something went wrong on our side; it has been logged",
                )
                .into_response();
            }
        };
        let mut response = (status, html).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        let cache = if self.viewer.is_some() || self.csrf.is_some() {
            "private, no-cache"
        } else {
            "no-cache"
        };
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        headers.insert(header::VARY, HeaderValue::from_static("Cookie"));
        if let Some((_, Some(set_cookie))) = &self.csrf {
            headers.append(header::SET_COOKIE, set_cookie.clone());
        }
        response
    }
}

/// A page's head and chrome: title, description, navigation, sign-in state.
pub struct Layout {
    /// The page's title and the blog's name after it.
    pub title: String,
    pub description: String,
    /// The blog's name (`BLOG_TITLE`): the header's brand and `og:site_name`.
    pub site_name: String,
    pub home: String,
    pub base: String,
    /// The signed-in reader's id (whether anyone is signed in).
    pub viewer: Option<String>,
    /// Their username, once chosen: what the navigation shows.
    pub viewer_name: Option<String>,
    /// What the last action did (`?done=`), said once as a status message.
    pub done: Option<&'static str>,
    pub viewer_href: String,
    pub read_only: bool,
    /// Where "Sign in" goes (empty when the pages only read).
    pub sign_in: String,
    /// Easy Auth's sign-out link; `None` where signing out is a form (development).
    pub sign_out_link: Option<String>,
    pub here: String,
    pub csrf: String,
    pub css: &'static str,
    pub script: &'static str,
    pub icon: &'static str,
    /// The blog's Atom feed, which the footer links.
    pub feed: String,
    /// The feeds that fit the page, linked from its head (`rel="alternate"`).
    pub feeds: Vec<FeedLink>,
    pub og: Option<super::meta::OpenGraph>,
    /// A post page's JSON-LD, already escaped for a `<script>` data block.
    pub json_ld: Option<String>,
    /// The page's canonical absolute URL.
    pub canonical: String,
}

/// A feed a page's head names.
pub struct FeedLink {
    pub title: String,
    pub mime_type: &'static str,
    pub href: String,
}

impl FeedLink {
    /// The Atom feed and the JSON Feed at `stem` (`.atom` and `.json` after it), named
    /// `title`.
    pub fn both(title: &str, stem: &str) -> Vec<FeedLink> {
        vec![
            FeedLink {
                title: format!("{title} (Atom)"),
                mime_type: "application/atom+xml",
                href: format!("{stem}.atom"),
            },
            FeedLink {
                title: format!("{title} (JSON Feed)"),
                mime_type: "application/feed+json",
                href: format!("{stem}.json"),
            },
        ]
    }
}
