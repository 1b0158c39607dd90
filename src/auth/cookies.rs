//! The site's cookies, built and read with the `cookie` crate: their names, and the attributes
//! that go with the site's public address. On an HTTPS address every cookie is `Secure` and
//! named with the `__Host-` prefix, which a browser takes only from a secure page of the same
//! host, for the whole host (`Path=/`, no `Domain`): no plain-HTTP page and no other host (a
//! sibling subdomain) can set or replace one. On a plain-HTTP address (a laptop's loopback)
//! neither can hold, and the cookies keep their plain names.

use axum::http::{HeaderMap, HeaderValue, header};
use cookie::{Cookie, SameSite};

/// The prefix of a cookie set by a secure page for its whole host (RFC 6265bis §4.1.3.2).
const HOST_PREFIX: &str = "__Host-";

/// How the site names and marks its cookies: the same for every cookie it sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteCookies {
    /// Whether the site's public address is HTTPS.
    secure: bool,
}

impl SiteCookies {
    /// The cookies of a site whose public address is HTTPS (`secure`) or plain HTTP.
    pub fn new(secure: bool) -> Self {
        Self { secure }
    }

    /// The name the cookie called `base` goes by on this site.
    pub fn name(&self, base: &str) -> String {
        if self.secure {
            format!("{HOST_PREFIX}{base}")
        } else {
            base.to_owned()
        }
    }

    /// The value of the cookie `base` in the request's `Cookie` headers (the first one sent
    /// under this site's name for it), percent-decoded. A cookie under the other name (a
    /// plain one on an HTTPS site, which any page of the domain could have set) is not read.
    pub fn read(&self, headers: &HeaderMap, base: &str) -> Option<String> {
        let name = self.name(base);
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(Cookie::split_parse_encoded)
            .filter_map(Result::ok)
            .find(|cookie| cookie.name() == name)
            .map(|cookie| cookie.value().to_owned())
    }

    /// The `Set-Cookie` of the cookie `base` holding `value` (percent-encoded where it must
    /// be): for the whole site, out of scripts' reach, sent along as `same_site` says, and
    /// `Secure` on an HTTPS site. A session cookie: it goes when the browser closes.
    pub fn set(&self, base: &str, value: &str, same_site: SameSite) -> Option<HeaderValue> {
        self.header(self.cookie(base, value.to_owned(), same_site))
    }

    /// The `Set-Cookie` that removes the cookie `base` (set before with `same_site`).
    pub fn remove(&self, base: &str, same_site: SameSite) -> Option<HeaderValue> {
        let mut cookie = self.cookie(base, String::new(), same_site);
        cookie.make_removal();
        self.header(cookie)
    }

    fn cookie(&self, base: &str, value: String, same_site: SameSite) -> Cookie<'static> {
        Cookie::build((self.name(base), value))
            .path("/")
            .http_only(true)
            .same_site(same_site)
            .secure(self.secure)
            .build()
    }

    fn header(&self, cookie: Cookie<'_>) -> Option<HeaderValue> {
        HeaderValue::from_str(&cookie.encoded().to_string()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(cookies: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(cookies).unwrap());
        headers
    }

    #[test]
    fn an_https_site_sets_secure_host_cookies_and_reads_only_those() {
        let https = SiteCookies::new(true);
        let set = https.set("blog_csrf", "n.s", SameSite::Strict).unwrap();
        let set = set.to_str().unwrap();
        assert!(set.starts_with("__Host-blog_csrf=n.s;"), "{set}");
        for attribute in ["Path=/", "HttpOnly", "SameSite=Strict", "Secure"] {
            assert!(set.contains(attribute), "{attribute} in {set}");
        }
        assert!(!set.contains("Domain"), "{set}");
        let both = sent("blog_csrf=plain; __Host-blog_csrf=hosted");
        assert_eq!(https.read(&both, "blog_csrf").as_deref(), Some("hosted"));
        assert_eq!(https.read(&sent("blog_csrf=plain"), "blog_csrf"), None);
    }

    #[test]
    fn a_plain_http_site_keeps_the_plain_names() {
        let http = SiteCookies::new(false);
        let set = http.set("blog_dev_user", "café", SameSite::Lax).unwrap();
        let set = set.to_str().unwrap();
        assert!(set.starts_with("blog_dev_user=caf%C3%A9;"), "{set}");
        assert!(!set.contains("Secure"), "{set}");
        assert_eq!(
            http.read(&sent("a=b; blog_dev_user=caf%C3%A9"), "blog_dev_user")
                .as_deref(),
            Some("café")
        );
        let removed = http.remove("blog_dev_user", SameSite::Lax).unwrap();
        let removed = removed.to_str().unwrap();
        assert!(removed.starts_with("blog_dev_user=;"), "{removed}");
        assert!(removed.contains("Max-Age=0"), "{removed}");
    }
}
