//! What the pages know of the site that no request may tell them: its public address, which
//! every absolute URL (feeds, canonical links, Open Graph tags) starts with, and the server's
//! key, which signs the forms' tokens. Both come from the settings at start-up and reach the handlers
//! with every request ([`Site`] is a request extension the router adds), never from a
//! request's `Host` or `X-Forwarded-Host`, which a client or a cache's visitor can forge.

use std::sync::Arc;

use axum::http::Extensions;

use super::page_caches::PageCaches;
use crate::auth::SiteCookies;
use crate::signing::ServerKey;

/// The site's public origin (`https://blog.example`, no path, no trailing slash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl(String);

impl PublicUrl {
    /// An `http` or `https` URL with a host, and no path, query or fragment: the pages' links
    /// are paths from the site's root, so a site served under a path prefix would be named
    /// wrongly by them.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let url = url::Url::parse(raw.trim()).map_err(|e| format!("not a URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("not an http or https URL".to_owned());
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("it names no host".to_owned());
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(
                "it must be an origin only (scheme, host, port): no path, query or fragment"
                    .to_owned(),
            );
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("it must not carry a user name or password".to_owned());
        }
        Ok(Self(url.origin().ascii_serialization()))
    }

    /// `http://127.0.0.1:{port}`: a laptop's server, when no public address is set.
    pub fn loopback(port: u16) -> Self {
        Self(format!("http://127.0.0.1:{port}"))
    }

    /// The absolute URL of `path` (a path from the site's root, `/` first).
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// How a site at this address sets its cookies: `Secure`, with the `__Host-` prefix, on
    /// HTTPS.
    pub fn cookies(&self) -> SiteCookies {
        SiteCookies::new(self.0.starts_with("https://"))
    }
}

/// What the pages know of the site (see the module's comment), and what they keep of it in
/// memory between requests.
#[derive(Debug, Clone)]
pub struct Site {
    pub public_url: PublicUrl,
    /// The server's key, which signs the forms' tokens (and the lists' continuation tokens).
    pub key: ServerKey,
    /// How the site names and marks its cookies, from its public address.
    pub cookies: SiteCookies,
    /// Whether the platform in front of this server vouches for `X-Forwarded-Host` (Azure App
    /// Service's front end sets it); elsewhere anyone may send it.
    pub trusts_forwarded_host: bool,
    /// The blog's own name and description (`BLOG_TITLE`, `BLOG_DESCRIPTION`): pages' titles
    /// and headers, the front page's description, the feeds' titles.
    pub title: String,
    pub description: String,
    /// Shared by the clones of one site.
    pub(super) caches: Arc<PageCaches>,
}

impl Site {
    /// The site at `public_url` whose forms are signed with `key`, named `title` and
    /// described by `description`, with nothing kept yet.
    pub fn new(
        public_url: PublicUrl,
        key: ServerKey,
        trusts_forwarded_host: bool,
        title: String,
        description: String,
    ) -> Self {
        Self {
            cookies: public_url.cookies(),
            public_url,
            key,
            trusts_forwarded_host,
            title,
            description,
            caches: Arc::default(),
        }
    }

    /// The site a request is served for (the router puts it on every request).
    pub fn of(extensions: &Extensions) -> Option<Arc<Site>> {
        extensions.get::<Arc<Site>>().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_url_is_an_origin() {
        assert_eq!(
            PublicUrl::parse("https://Blog.Example/").unwrap().as_str(),
            "https://blog.example"
        );
        assert_eq!(
            PublicUrl::parse("http://127.0.0.1:8080")
                .unwrap()
                .join("/feed.atom"),
            "http://127.0.0.1:8080/feed.atom"
        );
        for wrong in [
            "blog.example",
            "ftp://blog.example",
            "https://blog.example/blog",
            "https://blog.example/?a=b",
            "https://u:p@blog.example",
        ] {
            assert!(PublicUrl::parse(wrong).is_err(), "{wrong}");
        }
    }
}
