//! Why a caller could not be established, and the 401 problem that says so.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::Error;
use crate::problem::Problem;

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
