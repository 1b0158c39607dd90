//! The browser is hostile territory: what keeps another site from writing in a reader's name,
//! and what every page's response says to the browser about itself.
//!
//! - Cross-site requests: every unsafe request (not GET, HEAD or OPTIONS), to a page or to the
//!   JSON API, whose `Sec-Fetch-Site` says another site sent it, or whose `Origin` is neither
//!   this site nor an allowed CORS origin, is refused with a 403 problem before any handler
//!   runs. A request with neither header (curl, another server) is not a browser's and stays
//!   allowed: a browser always sends one of them with an unsafe request.
//! - Forms carry a CSRF token as well (signed double submit): the token is in a cookie and in
//!   a hidden field, and the two must agree and carry this server's signature.
//! - Headers: a strict Content-Security-Policy (nothing inline, nothing from other origins,
//!   no framing), `nosniff` and a referrer policy on every response outside `/api`.

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cookie::SameSite;

use super::site::Site;
use crate::problem::Problem;
use crate::signing::{Purpose, ServerKey};

/// The cookie (named as the site names its cookies: `__Host-blog_csrf` on HTTPS) and the form
/// field that carry the CSRF token.
pub const CSRF_COOKIE: &str = "blog_csrf";
pub const CSRF_FIELD: &str = "csrf";

pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// The allowed CORS origins (`BLOG_CORS_ORIGINS`), which may also write cross-site.
#[derive(Debug, Clone, Default)]
pub struct AllowedOrigins(pub Vec<String>);

/// A CSRF token: a random nonce and its signature.
fn new_token(key: &ServerKey) -> String {
    let mut nonce = [0u8; 18];
    let _ = SystemRandom::new().fill(&mut nonce);
    let nonce = URL_SAFE_NO_PAD.encode(nonce);
    let signature = key.sign(Purpose::FormToken, nonce.as_bytes());
    format!("{nonce}.{}", URL_SAFE_NO_PAD.encode(signature))
}

fn is_signed(token: &str, key: &ServerKey) -> bool {
    let Some((nonce, signature)) = token.split_once('.') else {
        return false;
    };
    URL_SAFE_NO_PAD
        .decode(signature)
        .is_ok_and(|signature| key.verifies(Purpose::FormToken, nonce.as_bytes(), &signature))
}

/// The token a page's forms carry: the request's own cookie when it is one of ours, else a
/// new one with the `Set-Cookie` that stores it.
pub fn form_token(headers: &HeaderMap, site: &Site) -> (String, Option<HeaderValue>) {
    let key = &site.key;
    if let Some(existing) = site
        .cookies
        .read(headers, CSRF_COOKIE)
        .filter(|t| is_signed(t, key))
    {
        return (existing, None);
    }
    let token = new_token(key);
    let set_cookie = site.cookies.set(CSRF_COOKIE, &token, SameSite::Strict);
    (token, set_cookie)
}

/// Whether a posted form's token is the one in its cookie, signed by this server.
pub fn token_matches(headers: &HeaderMap, posted: &str, site: &Site) -> bool {
    site.cookies
        .read(headers, CSRF_COOKIE)
        .is_some_and(|stored| stored == posted && is_signed(&stored, &site.key))
}

pub fn forged_form() -> Problem {
    Problem::new(
        StatusCode::FORBIDDEN,
        "csrf-token",
        "this form was not sent from one of this site's pages (or it is too old): reload the \
         page and send it again",
    )
}

/// Refuses unsafe requests that another site's page sent (see the module's comment).
pub async fn refuse_cross_site(
    State(allowed): State<AllowedOrigins>,
    request: Request,
    next: Next,
) -> Response {
    let site = Site::of(request.extensions());
    if is_safe(request.method()) || !is_cross_site(request.headers(), &allowed, site.as_deref()) {
        return next.run(request).await;
    }
    tracing::debug!(method = %request.method(), path = request.uri().path(), "cross-site write refused");
    Problem::new(
        StatusCode::FORBIDDEN,
        "cross-site-request",
        "this request came from another site's page; nothing was changed",
    )
    .into_response()
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

fn is_cross_site(headers: &HeaderMap, allowed: &AllowedOrigins, site: Option<&Site>) -> bool {
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let allowed_origin = origin.is_some_and(|o| allowed.0.iter().any(|a| a == o));
    if allowed_origin {
        return false;
    }
    // Each value counts: a request that says both "same-origin" and "cross-site" is refused.
    let mut sites = headers
        .get_all("sec-fetch-site")
        .iter()
        .map(|v| v.to_str().unwrap_or("cross-site"))
        .peekable();
    if sites.peek().is_some() {
        return sites.any(|site| !matches!(site, "same-origin" | "none"));
    }
    origin.is_some_and(|origin| !is_own_origin(headers, origin, site))
}

/// Whether `origin` is this site: its public address, or the host the browser sent the
/// request to (`Host`, which a page cannot set; `X-Forwarded-Host` only where the platform in
/// front vouches for it). The scheme is left out of the host comparison: TLS may end before
/// this server.
fn is_own_origin(headers: &HeaderMap, origin: &str, site: Option<&Site>) -> bool {
    if site.is_some_and(|site| site.public_url.as_str().eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some((_, authority)) = origin.split_once("://") else {
        return false; // `null` and other opaque origins
    };
    let forwarded = site.is_some_and(|site| site.trusts_forwarded_host);
    let names: &[&str] = if forwarded {
        &["x-forwarded-host", "host"]
    } else {
        &["host"]
    };
    names
        .iter()
        .filter_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .any(|host| host.eq_ignore_ascii_case(authority))
}

/// The headers every response outside `/api` carries.
pub async fn page_headers(request: Request, next: Next) -> Response {
    let is_api = request.uri().path().starts_with("/api/");
    let mut response = next.run(request).await;
    if !is_api {
        let headers = response.headers_mut();
        // A response with a policy of its own (an image's, stricter) keeps it.
        if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            );
        }
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("strict-origin-when-cross-origin"),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::site::PublicUrl;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn fetch_metadata_and_origin_tell_cross_site_requests() {
        let none = AllowedOrigins::default();
        let front = AllowedOrigins(vec!["https://front.example".into()]);
        for (pairs, cross) in [
            (vec![], false),
            (vec![("sec-fetch-site", "same-origin")], false),
            (vec![("sec-fetch-site", "none")], false),
            (vec![("sec-fetch-site", "same-site")], true),
            (vec![("sec-fetch-site", "cross-site")], true),
            (
                vec![
                    ("sec-fetch-site", "same-origin"),
                    ("sec-fetch-site", "cross-site"),
                ],
                true,
            ),
            (
                vec![("host", "blog.example"), ("origin", "https://blog.example")],
                false,
            ),
            (
                vec![
                    ("host", "blog.example"),
                    ("origin", "https://elsewhere.example"),
                ],
                true,
            ),
            (vec![("host", "blog.example"), ("origin", "null")], true),
        ] {
            assert_eq!(
                is_cross_site(&headers(&pairs), &none, None),
                cross,
                "{pairs:?}"
            );
        }
        let from_front = headers(&[
            ("sec-fetch-site", "cross-site"),
            ("origin", "https://front.example"),
        ]);
        assert!(is_cross_site(&from_front, &none, None));
        assert!(
            !is_cross_site(&from_front, &front, None),
            "an allowed CORS origin"
        );
    }

    fn site(public_url: &str, trusts_forwarded_host: bool) -> Site {
        Site::new(
            PublicUrl::parse(public_url).unwrap(),
            ServerKey::drawn(),
            trusts_forwarded_host,
            "Cosmos Blog".to_owned(),
            String::new(),
        )
    }

    #[test]
    fn the_public_address_is_this_site_and_a_forwarded_host_only_where_vouched_for() {
        let none = AllowedOrigins::default();
        let behind_proxy = headers(&[
            ("host", "10.0.0.4:8080"),
            ("x-forwarded-host", "blog.example"),
            ("origin", "https://blog.example"),
        ]);
        let elsewhere = site("https://other.example", false);
        assert!(is_cross_site(&behind_proxy, &none, Some(&elsewhere)));
        let platform = site("https://other.example", true);
        assert!(!is_cross_site(&behind_proxy, &none, Some(&platform)));
        let public = site("https://blog.example", false);
        assert!(!is_cross_site(&behind_proxy, &none, Some(&public)));
    }

    #[test]
    fn a_token_passes_only_with_its_own_signed_cookie() {
        for (address, name) in [
            ("http://127.0.0.1:8080", "blog_csrf"),
            ("https://blog.example", "__Host-blog_csrf"),
        ] {
            let site = site(address, false);
            let (token, set_cookie) = form_token(&HeaderMap::new(), &site);
            let set_cookie = set_cookie.expect("a new token's cookie");
            let set_cookie = set_cookie.to_str().unwrap();
            assert!(
                set_cookie.starts_with(&format!("{name}={token};")),
                "{set_cookie}"
            );
            assert_eq!(set_cookie.contains("Secure"), address.starts_with("https"));
            let cookie_header = HeaderValue::from_str(&format!("a=b; {name}={token}")).unwrap();
            let mut with_cookie = HeaderMap::new();
            with_cookie.insert(header::COOKIE, cookie_header);
            assert!(token_matches(&with_cookie, &token, &site));
            assert_eq!(
                form_token(&with_cookie, &site),
                (token.clone(), None),
                "reused"
            );
            assert!(!token_matches(&with_cookie, "other", &site));
            assert!(
                !token_matches(&HeaderMap::new(), &token, &site),
                "no cookie"
            );
            assert!(
                !token_matches(&with_cookie, &token, &self::site(address, false)),
                "another key's token"
            );
            let unsigned = "abc.def";
            let mut forged = HeaderMap::new();
            forged.insert(
                header::COOKIE,
                HeaderValue::from_str(&format!("{name}={unsigned}")).unwrap(),
            );
            assert!(!token_matches(&forged, unsigned, &site), "not signed by us");
        }
        // On HTTPS, a plain-named cookie (which another host of the domain could set) is not
        // the site's.
        let secure = site("https://blog.example", false);
        let (token, _) = form_token(&HeaderMap::new(), &secure);
        let mut plain = HeaderMap::new();
        plain.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("blog_csrf={token}")).unwrap(),
        );
        assert!(!token_matches(&plain, &token, &secure));
    }
}
