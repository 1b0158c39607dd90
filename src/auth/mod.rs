//! Who is calling (issue 8). Three modes, chosen by `BLOG_AUTH`:
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

pub mod jwt;

use std::net::IpAddr;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clap::{Args, ValueEnum};

use crate::api::problem::Problem;
use crate::domain::UserId;
use crate::error::Error;
pub use crate::platform::Platform;
use jwt::{JwtConfig, JwtVerifier};

/// Set by Azure App Service Authentication ("Easy Auth") on authenticated requests; clients
/// cannot forge it there because the platform strips incoming copies.
pub const PRINCIPAL_HEADER: &str = "x-ms-client-principal-id";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Trust x-ms-client-principal-id as sent (local development only).
    Header,
    /// Trust x-ms-client-principal-id only when App Service Authentication is on.
    #[value(name = "easyauth")]
    EasyAuth,
    /// Validate `Authorization: Bearer <JWT>` against a JWKS.
    Jwt,
}

#[derive(Debug, Clone, Default, Args)]
pub struct AuthSettings {
    /// How commands identify their caller: `header`, `easyauth` or `jwt`. Default: `easyauth`
    /// under the Functions host or on App Service (any plan), else `header` (which only starts
    /// on a loopback address).
    #[arg(long = "auth", env = "BLOG_AUTH", value_enum, ignore_case = true)]
    pub mode: Option<AuthMode>,

    /// jwt: the signing keys, an https URL of a JWKS document or the path of a JWKS file.
    #[arg(long, env = "BLOG_JWT_JWKS")]
    pub jwt_jwks: Option<String>,

    /// jwt: the required `iss` claim.
    #[arg(long, env = "BLOG_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,

    /// jwt: the required `aud` claim.
    #[arg(long, env = "BLOG_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,

    /// jwt: the claim holding the caller's user id [default: sub] (Microsoft Entra ID: `oid`).
    #[arg(long, env = "BLOG_JWT_CLAIM")]
    pub jwt_claim: Option<String>,

    /// Origins (`https://front.example`, comma-separated) whose pages may call the API with
    /// CORS, and write to it from their site. Empty by default: only this site's own pages.
    #[arg(long, env = "BLOG_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,

    /// What the hosting platform says, read from its environment (not a user setting).
    #[arg(skip = Platform::from_env())]
    pub platform: Platform,
}

/// The settings resolved against the platform and the bind address, before any key is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// `explicit`: chosen with BLOG_AUTH, not defaulted.
    Header {
        explicit: bool,
    },
    EasyAuth {
        enabled: bool,
    },
    Jwt(JwtConfig),
}

impl AuthSettings {
    /// The mode in force, or why the server must not start with these settings.
    pub fn resolve(&self, bind: IpAddr) -> anyhow::Result<Resolved> {
        // Fail closed: `header` is a default only where no hosting platform is in sight.
        let mode = self.mode.unwrap_or(if self.platform.hosted() {
            AuthMode::EasyAuth
        } else {
            AuthMode::Header
        });
        match mode {
            AuthMode::Header => {
                let explicit = self.mode.is_some();
                anyhow::ensure!(
                    explicit || bind.is_loopback(),
                    "refusing to serve on {bind} with BLOG_AUTH defaulted to `header`: that mode \
                     trusts the x-ms-client-principal-id header as sent, so anyone who can reach \
                     the server could act as any user. Bind to 127.0.0.1, or choose BLOG_AUTH=jwt \
                     (or BLOG_AUTH=header explicitly, if something in front of the server sets \
                     that header)"
                );
                Ok(Resolved::Header { explicit })
            }
            AuthMode::EasyAuth => Ok(Resolved::EasyAuth {
                enabled: self.platform.easy_auth_enabled(),
            }),
            AuthMode::Jwt => JwtConfig::from_settings(self).map(Resolved::Jwt),
        }
    }
}

/// The cookie that carries the caller's id in `header` mode, set by the development sign-in
/// page, so that a browser (which cannot send a header of its own) can act as a user.
pub const DEVELOPMENT_CALLER_COOKIE: &str = "blog_dev_user";

/// Answers "who is calling?" for every command, in the mode resolved at start-up.
pub enum Authenticator {
    /// `header` mode (development): the principal header as sent, or else the development
    /// sign-in's cookie.
    DevelopmentHeader,
    /// `easyauth` with App Service Authentication on: the principal header, which the platform
    /// sets and strips from clients.
    TrustedHeader,
    /// `easyauth` while App Service Authentication is off: nobody can be identified.
    EasyAuthDisabled,
    Jwt(Box<JwtVerifier>),
}

impl Authenticator {
    /// Resolves the settings, loads the JWT keys if needed, and logs the mode in force.
    pub async fn from_settings(settings: &AuthSettings, bind: IpAddr) -> anyhow::Result<Self> {
        let resolved = settings.resolve(bind)?;
        log_mode(&resolved, bind);
        Self::from_resolved(resolved).await
    }

    pub async fn from_resolved(resolved: Resolved) -> anyhow::Result<Self> {
        Ok(match resolved {
            Resolved::Header { .. } => Self::DevelopmentHeader,
            Resolved::EasyAuth { enabled: true } => Self::TrustedHeader,
            Resolved::EasyAuth { enabled: false } => Self::EasyAuthDisabled,
            Resolved::Jwt(config) => Self::Jwt(Box::new(JwtVerifier::start(config).await?)),
        })
    }

    /// The caller of a command, from the request's headers.
    pub async fn caller(&self, headers: &HeaderMap) -> Result<UserId, AuthError> {
        match self {
            Self::TrustedHeader => principal(headers),
            Self::DevelopmentHeader => principal(headers).or_else(|_| development_cookie(headers)),
            Self::EasyAuthDisabled => Err(AuthError::EasyAuthDisabled),
            Self::Jwt(verifier) => verifier.caller(headers).await,
        }
    }
}

fn principal(headers: &HeaderMap) -> Result<UserId, AuthError> {
    let value = headers
        .get(PRINCIPAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(AuthError::MissingPrincipal)?;
    UserId::parse(value).map_err(|_| AuthError::MissingPrincipal)
}

/// The caller's id in the [`DEVELOPMENT_CALLER_COOKIE`] cookie.
fn development_cookie(headers: &HeaderMap) -> Result<UserId, AuthError> {
    cookie(headers, DEVELOPMENT_CALLER_COOKIE)
        .and_then(|value| {
            let id = percent_encoding::percent_decode_str(&value)
                .decode_utf8()
                .ok()?;
            UserId::parse(&id).ok()
        })
        .ok_or(AuthError::MissingPrincipal)
}

/// The value of the cookie `name` in the request's `Cookie` headers (the first one sent).
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"').to_owned())
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

/// Why a command's caller could not be established. Each is a 401 problem with its own code.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no x-ms-client-principal-id header")]
    MissingPrincipal,
    #[error("App Service Authentication is not enabled")]
    EasyAuthDisabled,
    #[error("no bearer token")]
    MissingToken,
    #[error("invalid bearer token: {0}")]
    InvalidToken(String),
}

impl AuthError {
    fn problem(&self) -> Problem {
        match self {
            Self::MissingPrincipal => Problem::from(&Error::Unauthenticated),
            Self::EasyAuthDisabled => Problem::new(
                StatusCode::UNAUTHORIZED,
                "easyauth-disabled",
                "commands are refused because App Service Authentication (Easy Auth) is not \
                 enabled on this app, so the caller cannot be identified; enable it with an \
                 identity provider",
            ),
            Self::MissingToken => Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "this request needs an Authorization: Bearer <token> header",
            ),
            Self::InvalidToken(why) => Problem::new(
                StatusCode::UNAUTHORIZED,
                "invalid-token",
                format!("the bearer token was refused: {why}"),
            ),
        }
    }

    /// RFC 6750: a request without a token is challenged without an error code.
    fn challenge(&self) -> Option<&'static str> {
        match self {
            Self::MissingToken => Some("Bearer"),
            Self::InvalidToken(_) => Some("Bearer error=\"invalid_token\""),
            Self::MissingPrincipal | Self::EasyAuthDisabled => None,
        }
    }
}

impl IntoResponse for AuthError {
    fn into_response(self) -> Response {
        tracing::debug!(error = %self, "request refused");
        let mut response = self.problem().into_response();
        if let Some(challenge) = self.challenge() {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
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
        for (value, enabled) in [
            (None, false),
            (Some(""), false),
            (Some("false"), false),
            (Some("1"), false),
            (Some("true"), true),
            (Some("True"), true),
            (Some("TRUE"), true),
        ] {
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
