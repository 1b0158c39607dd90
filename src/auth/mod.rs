//! Who is calling. Three modes, chosen by `BLOG_AUTH`:
//!
//! - `header`: trust `x-ms-client-principal-id` as sent. Local development only: the default of
//!   a standalone server on loopback, refused on any other address unless chosen explicitly.
//! - `easyauth`: the default under the Functions host or on App Service, whatever the plan
//!   ([`Platform`]). The header is trusted only when the
//!   platform says App Service Authentication is on (`WEBSITE_AUTH_ENABLED=true`): only then
//!   does it strip copies sent by clients. Otherwise every command is refused.
//! - `jwt`: `Authorization: Bearer <token>`, validated against a JWKS ([`jwt`]).
//!
//! Start-up resolves the settings and the platform's environment into one [`Authenticator`];
//! the `Caller` extractor asks it for the caller of every command.

mod cookies;
mod error;
pub mod jwt;
mod settings;

use std::net::IpAddr;

use axum::http::HeaderMap;

pub use self::cookies::SiteCookies;
pub use self::error::{AuthError, HeaderSource, PRINCIPAL_HEADER};
pub use self::settings::{AuthMode, AuthSettings, Resolved};
use crate::domain::UserId;
pub use crate::platform::Platform;
use jwt::JwtVerifier;

/// The cookie that carries the caller's id in `header` mode, set by the development sign-in
/// page, so that a browser (which cannot send a header of its own) can act as a user.
pub(crate) const DEVELOPMENT_CALLER_COOKIE: &str = "blog_dev_user";

/// Answers "who is calling?" for every command, in the mode resolved at start-up.
pub enum Authenticator {
    /// `header` mode (development): the principal header as sent, or else (when the header is
    /// absent) the development sign-in's cookie, named as the site names its cookies.
    DevelopmentHeader(SiteCookies),
    /// `easyauth` with App Service Authentication on: the principal header, which the platform
    /// sets and strips from clients.
    TrustedHeader,
    /// `easyauth` while App Service Authentication is off: nobody can be identified.
    EasyAuthDisabled,
    Jwt(Box<JwtVerifier>),
}

impl Authenticator {
    /// Resolves the settings, loads the JWT keys if needed, and logs the mode in force;
    /// `cookies`: how the site names the development sign-in's cookie.
    pub(crate) async fn from_settings(
        settings: &AuthSettings,
        bind: IpAddr,
        cookies: SiteCookies,
    ) -> anyhow::Result<Self> {
        let resolved = settings.resolve(bind)?;
        log_mode(&resolved, bind);
        Self::from_resolved(resolved, cookies).await
    }

    pub(crate) async fn from_resolved(
        resolved: Resolved,
        cookies: SiteCookies,
    ) -> anyhow::Result<Self> {
        Ok(match resolved {
            Resolved::Header { .. } => Self::DevelopmentHeader(cookies),
            Resolved::EasyAuth { enabled: true } => Self::TrustedHeader,
            Resolved::EasyAuth { enabled: false } => Self::EasyAuthDisabled,
            Resolved::Jwt(config) => Self::Jwt(Box::new(JwtVerifier::start(config).await?)),
        })
    }

    /// The caller of a command, from the request's headers.
    pub async fn caller(&self, headers: &HeaderMap) -> Result<UserId, AuthError> {
        match self {
            Self::TrustedHeader => principal(headers, HeaderSource::EasyAuth),
            Self::DevelopmentHeader(_) if headers.contains_key(PRINCIPAL_HEADER) => {
                principal(headers, HeaderSource::Client)
            }
            Self::DevelopmentHeader(cookies) => development_cookie(headers, cookies),
            Self::EasyAuthDisabled => Err(AuthError::EasyAuthDisabled),
            Self::Jwt(verifier) => verifier.caller(headers).await,
        }
    }
}

/// The caller named by the principal header. A header value is printable ASCII, so the id is
/// sent percent-encoded (its UTF-8 bytes, `é` as `%C3%A9`) and decoded here; ids hold no `%`,
/// so an id sent as it is decodes to itself.
fn principal(headers: &HeaderMap, source: HeaderSource) -> Result<UserId, AuthError> {
    let Some(value) = headers.get(PRINCIPAL_HEADER) else {
        return Err(AuthError::MissingPrincipal(source));
    };
    let value = value
        .to_str()
        .map_err(|_| {
            AuthError::InvalidPrincipal(
                "holds bytes that are not printable ASCII: percent-encode the user id's UTF-8 \
                 bytes (`é` as `%C3%A9`)"
                    .into(),
            )
        })?
        .trim();
    if value.is_empty() {
        return Err(AuthError::MissingPrincipal(source));
    }
    let id = percent_encoding::percent_decode_str(value)
        .decode_utf8()
        .map_err(|_| {
            AuthError::InvalidPrincipal("percent-decodes to bytes that are not UTF-8".into())
        })?;
    UserId::parse(&id).map_err(|invalid| AuthError::InvalidPrincipal(invalid.reason))
}

/// The caller's id in the [`DEVELOPMENT_CALLER_COOKIE`] cookie (percent-decoded as read).
fn development_cookie(headers: &HeaderMap, cookies: &SiteCookies) -> Result<UserId, AuthError> {
    cookies
        .read(headers, DEVELOPMENT_CALLER_COOKIE)
        .and_then(|id| UserId::parse(&id).ok())
        .ok_or(AuthError::MissingPrincipal(HeaderSource::Client))
}

fn log_mode(resolved: &Resolved, bind: IpAddr) {
    match resolved {
        Resolved::Header { explicit: true } if !bind.is_loopback() => tracing::warn!(
            "BLOG_AUTH=header on {bind}: every request's x-ms-client-principal-id header is \
             TRUSTED AS SENT. Anyone who can reach this address can act as any user unless a \
             proxy in front sets that header. Development only"
        ),
        Resolved::Header { .. } => tracing::info!(
            "auth mode header: trusting x-ms-client-principal-id as sent (development only)"
        ),
        Resolved::EasyAuth { enabled: true } => tracing::info!(
            "auth mode easyauth: App Service Authentication is on; trusting its principal header"
        ),
        Resolved::EasyAuth { enabled: false } => tracing::error!(
            "auth mode easyauth but App Service Authentication is off (WEBSITE_AUTH_ENABLED is \
             not true): every command will be refused with 401 until it is enabled on the app"
        ),
        Resolved::Jwt(config) => tracing::info!(
            issuer = %config.issuer,
            audience = %config.audience,
            claim = %config.claim,
            "auth mode jwt: commands need a bearer token"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
    const ANY: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

    fn settings(mode: Option<AuthMode>, platform: Platform) -> AuthSettings {
        AuthSettings {
            mode,
            platform,
            ..AuthSettings::default()
        }
    }

    fn under_host(website_auth_enabled: Option<&str>) -> Platform {
        Platform::functions_host(website_auth_enabled)
    }

    #[test]
    fn standalone_defaults_to_header_on_loopback_only() {
        let implicit = settings(None, Platform::default());
        assert_eq!(
            implicit.resolve(LOOPBACK).unwrap(),
            Resolved::Header { explicit: false }
        );
        let refused = implicit.resolve(ANY).unwrap_err().to_string();
        assert!(
            refused.contains("refusing to serve on 0.0.0.0"),
            "{refused}"
        );
        let explicit = settings(Some(AuthMode::Header), Platform::default());
        assert_eq!(
            explicit.resolve(ANY).unwrap(),
            Resolved::Header { explicit: true }
        );
    }

    #[test]
    fn the_functions_host_defaults_to_easyauth_which_reads_website_auth_enabled() {
        for (value, enabled) in crate::platform::tests::WEBSITE_AUTH_ENABLED_VALUES {
            let resolved = settings(None, under_host(value)).resolve(ANY).unwrap();
            assert_eq!(resolved, Resolved::EasyAuth { enabled }, "{value:?}");
        }
        // An explicit choice wins over the host's default.
        let header = settings(Some(AuthMode::Header), under_host(None));
        assert_eq!(
            header.resolve(LOOPBACK).unwrap(),
            Resolved::Header { explicit: true }
        );
    }

    #[test]
    fn jwt_mode_needs_its_settings() {
        let error = settings(Some(AuthMode::Jwt), Platform::default())
            .resolve(LOOPBACK)
            .unwrap_err()
            .to_string();
        for name in ["BLOG_JWT_JWKS", "BLOG_JWT_ISSUER", "BLOG_JWT_AUDIENCE"] {
            assert!(error.contains(name), "{error}");
        }
    }
}
