//! The pages' route table: every page, form and feed of the web front end, listed once with
//! the Azure Functions function that serves it. From this list come the pages' router and
//! the page functions of the Functions metadata. To add a page: write its handler and add
//! one line to [`blog_pages`] (a page of a blog, under `/tenants/{tenantId}` in the `multi`
//! layout) or to [`site_pages`] (the site's own, at the same path in every layout).

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::routing::{MethodRouter, get, post};

use super::atom::{Atom, author_feed, front_feed, tag_feed};
use super::json_feed::JsonFeed;
use super::{account, assets, forms, images, pages, uploads, views};
use crate::http::AppState;

/// Whether a page belongs to a blog (under `/tenants/{tenantId}` in `multi`) or to the site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageScope {
    Blog,
    Site,
}

/// One page or form, one Functions function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRoute {
    /// The function's name.
    pub name: &'static str,
    /// Lower-case HTTP method, as `function.json` spells it.
    pub method: &'static str,
    /// The path below the blog's (or the site's) root, with axum's `{param}` placeholders:
    /// `/` for the root itself.
    pub path: &'static str,
    pub scope: PageScope,
}

/// Routes and what they are, in the order written.
pub struct PageTable {
    scope: PageScope,
    routes: Vec<(PageRoute, MethodRouter<AppState>)>,
}

impl PageTable {
    fn new(scope: PageScope) -> Self {
        Self {
            scope,
            routes: Vec::new(),
        }
    }

    fn add(
        mut self,
        name: &'static str,
        method: &'static str,
        path: &'static str,
        route: MethodRouter<AppState>,
    ) -> Self {
        let page = PageRoute {
            name,
            method,
            path,
            scope: self.scope,
        };
        self.routes.push((page, route));
        self
    }

    /// `GET path`, served by `handler` as the function `name`.
    fn get<H: Handler<T, AppState>, T: 'static>(
        self,
        name: &'static str,
        path: &'static str,
        handler: H,
    ) -> Self {
        self.add(name, "get", path, get(handler))
    }

    /// `POST path` (a form), served by `handler` as the function `name`.
    fn post<H: Handler<T, AppState>, T: 'static>(
        self,
        name: &'static str,
        path: &'static str,
        handler: H,
    ) -> Self {
        self.add(name, "post", path, post(handler))
    }

    /// `POST path`, the write or edit form: served by `handler` as the function `name`, with
    /// room for a text longer than a post may be ([`forms::MAX_PAGE_FORM_BYTES`]), so that
    /// it comes back on the form with its reason.
    fn post_text<H: Handler<T, AppState>, T: 'static>(
        self,
        name: &'static str,
        path: &'static str,
        handler: H,
    ) -> Self {
        self.add(
            name,
            "post",
            path,
            post(handler).layer(DefaultBodyLimit::max(forms::MAX_PAGE_FORM_BYTES)),
        )
    }

    /// `POST path`, a form that carries an image (multipart): served by `handler` as the
    /// function `name`, without the forms' body limit, since the handler keeps the image up
    /// to the images' own limit, counts the bytes of a larger one without keeping them, and
    /// answers with the form and the text typed in it.
    fn upload<H: Handler<T, AppState>, T: 'static>(
        self,
        name: &'static str,
        path: &'static str,
        handler: H,
    ) -> Self {
        self.add(
            name,
            "post",
            path,
            post(handler).layer(DefaultBodyLimit::disable()),
        )
    }

    /// What the table lists.
    pub fn routes(&self) -> impl Iterator<Item = &PageRoute> {
        self.routes.iter().map(|(page, _)| page)
    }

    /// The routes, mounted below `root` (empty: at the site's root). A blog's root answers
    /// both at `root` and at `root/`.
    pub(super) fn mounted_at(self, root: &str) -> Router<AppState> {
        self.routes
            .into_iter()
            .fold(Router::new(), |router, (page, route)| match page.path {
                "/" if !root.is_empty() => router
                    .route(root, route.clone())
                    .route(&format!("{root}/"), route),
                path => router.route(&format!("{root}{path}"), route),
            })
    }
}

/// Every page and form of one blog, relative to the blog's root.
#[rustfmt::skip]
pub fn blog_pages() -> PageTable {
    PageTable::new(PageScope::Blog)
        .get("FrontPage", "/", pages::front_page)
        .get("FrontPageFeed", "/feed.atom", front_feed::<Atom>)
        .get("FrontPageJsonFeed", "/feed.json", front_feed::<JsonFeed>)
        .get("PostPage", "/posts/{postId}/{slug}", pages::post_page)
        .get("PostPageWithoutSlug", "/posts/{postId}", pages::post_without_slug)
        .get("PostLikesPage", "/posts/{postId}/likes", pages::likes_page)
        .post("LikeForm", "/posts/{postId}/like", forms::like)
        .post("UnlikeForm", "/posts/{postId}/unlike", forms::unlike)
        .post("CommentForm", "/posts/{postId}/comments", forms::add_comment)
        .post("DeleteCommentForm", "/posts/{postId}/comments/{commentId}/delete", forms::delete_comment)
        .get("EditPostPage", "/posts/{postId}/edit", forms::edit_post_page)
        .post_text("EditPostForm", "/posts/{postId}/edit", forms::edit_post)
        .post("DeletePostForm", "/posts/{postId}/delete", forms::delete_post)
        .upload("EditImageForm", "/posts/{postId}/edit/image", uploads::upload_on_edit)
        .upload("WriteImageForm", "/write/image", uploads::upload_on_write)
        .get("ImageFile", "/images/{imageId}", images::serve_image)
        .get("ImageRendition", "/images/{imageId}/{width}", images::serve_rendition)
        .get("AuthorPage", "/users/{userId}", pages::author_page)
        .get("AuthorFeed", "/users/{userId}/feed.atom", author_feed::<Atom>)
        .get("AuthorJsonFeed", "/users/{userId}/feed.json", author_feed::<JsonFeed>)
        .get("TagPage", "/tags/{tag}", views::tag_page)
        .get("TagFeed", "/tags/{tag}/feed.atom", tag_feed::<Atom>)
        .get("TagJsonFeed", "/tags/{tag}/feed.json", tag_feed::<JsonFeed>)
        .get("ArchivePage", "/archive", views::archive_page)
        .get("MonthPage", "/archive/{year}/{month}", views::month_page)
        .get("Sitemap", "/sitemap.xml", views::sitemap)
        .get("MonthSitemap", "/sitemaps/{year}/{month}", views::month_sitemap)
        .get("RobotsTxt", "/robots.txt", views::robots)
        .get("WritePage", "/write", forms::write_page_get)
        .post_text("WriteForm", "/write", forms::create_post)
        .get("AccountPage", "/account", account::account_page)
        .post("AccountForm", "/account", account::rename)
        .get("DeleteAccountPage", "/account/delete", account::delete_account_page)
        .post("DeleteAccountForm", "/account/delete", account::delete_account)
}

/// The pages that belong to the site rather than to one blog: sign-in, the assets and the
/// icon.
pub fn site_pages() -> PageTable {
    PageTable::new(PageScope::Site)
        .get("SignInPage", "/sign-in", account::sign_in_page)
        .post("SignInForm", "/sign-in", account::sign_in)
        .post("SignOutForm", "/sign-out", account::sign_out)
        .get("PageAsset", assets::ROUTE, assets::serve)
        .get("Favicon", assets::FAVICON_ROUTE, assets::favicon)
}
