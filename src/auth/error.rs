//! Why a caller could not be established, and the 401 problem that says so.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::problem::Problem;

/// Set by Azure App Service Authentication ("Easy Auth") on authenticated requests; clients
/// cannot forge it there because the platform strips incoming copies.
pub const PRINCIPAL_HEADER: &str = "x-ms-client-principal-id";

/// Who sets the principal header that is trusted: what a caller without one is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderSource {
    /// `BLOG_AUTH=header`: the client (or a proxy in front) sends it.
    Client,
    /// `BLOG_AUTH=easyauth` with App Service Authentication on: the platform sets it on
    /// signed-in requests.
    EasyAuth,
}

/// Why a command's caller could not be established: a 401 problem with its own code, or a
/// 400 for a principal header that names no user id.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no x-ms-client-principal-id header")]
    MissingPrincipal(HeaderSource),
    #[error("the x-ms-client-principal-id header is no user id: {0}")]
    InvalidPrincipal(String),
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
            Self::MissingPrincipal(HeaderSource::Client) => Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "this request needs the x-ms-client-principal-id header: the caller's user id, \
                 percent-encoded where it is not printable ASCII (BLOG_AUTH=header trusts it as \
                 sent)",
            ),
            Self::MissingPrincipal(HeaderSource::EasyAuth) => Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "this request needs a signed-in caller: sign in through App Service \
                 Authentication, which then sets the x-ms-client-principal-id header",
            ),
            Self::InvalidPrincipal(why) => Problem {
                field: Some(PRINCIPAL_HEADER.into()),
                ..Problem::new(
                    StatusCode::BAD_REQUEST,
                    "invalid-field",
                    format!("{PRINCIPAL_HEADER}: {why}"),
                )
            },
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
            Self::MissingPrincipal(_) | Self::InvalidPrincipal(_) | Self::EasyAuthDisabled => None,
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
