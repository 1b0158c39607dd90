//! RFC 9457 problem documents: every error the API returns. Each has a stable `code` (also
//! the tail of `type`), the HTTP status, a short `title` and a human `detail`. Internal
//! failures are logged in full and shown to callers only as a generic message.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::borrow::Cow;

use crate::error::Error;

pub mod connection;

pub const CONTENT_TYPE: &str = "application/problem+json";

/// The `code` of the problem a response carries, in its extensions: what telemetry records.
#[derive(Debug, Clone, Copy)]
pub struct ProblemCode(pub &'static str);

/// An RFC 9457 problem document: what every refused or failed request answers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// `urn:cosmos-blog:problem:<code>`.
    #[serde(rename = "type")]
    #[schema(format = "uri", example = "urn:cosmos-blog:problem:post-not-found")]
    pub type_uri: String,
    /// The HTTP status's reason phrase.
    pub title: &'static str,
    /// The HTTP status code, repeated.
    #[schema(minimum = 400, maximum = 599)]
    pub status: u16,
    /// What went wrong, for people.
    pub detail: String,
    /// What went wrong, for programs: a stable code. 400: `malformed-json`, `invalid-body`,
    /// `invalid-field`, `invalid-path`, `invalid-query`, `invalid-continuation`; 401:
    /// `unauthenticated`, `easyauth-disabled`, `invalid-token`; 403: `forbidden`; 404:
    /// `user-not-found`, `post-not-found`, `not-found` (a comment or like), `route-not-found`;
    /// 405: `method-not-allowed`; 409: `conflict`, `post-deleted`; 413: `body-too-large`;
    /// 414: `uri-too-long`; 415: `unsupported-media-type`, `unsupported-encoding`; 422:
    /// `idempotency-key-reused`; 429: `throttled`; 500: `internal`; 503:
    /// `store-unavailable`, `images-busy` (with `Retry-After`).
    #[schema(example = "post-not-found")]
    pub code: &'static str,
    /// The request field, header or query parameter that was refused, with
    /// `invalid-field` or `invalid-query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub field: Option<Cow<'static, str>>,
    #[serde(skip)]
    pub retry_after_seconds: Option<u64>,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            type_uri: format!("urn:cosmos-blog:problem:{code}"),
            title: status.canonical_reason().unwrap_or("Error"),
            status: status.as_u16(),
            detail: detail.into(),
            code,
            field: None,
            retry_after_seconds: None,
        }
    }

    fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

/// The answer is the problem document; the problem itself goes with it in the response's
/// extensions, so that a layer that answers a browser can render the same value as a page
/// (`web`) without reading the document back.
impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry_after = self.retry_after_seconds;
        let code = ProblemCode(self.code);
        let mut response = (status, Json(&self)).into_response();
        response.extensions_mut().insert(code);
        response.extensions_mut().insert(self);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        if let Some(seconds) = retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<&Error> for Problem {
    fn from(error: &Error) -> Self {
        match error {
            Error::Validation(e) => Problem {
                field: Some(e.field.into()),
                ..Problem::new(StatusCode::BAD_REQUEST, "invalid-field", e.to_string())
            },
            Error::Forbidden(why) => Problem::new(StatusCode::FORBIDDEN, "forbidden", *why),
            Error::NotFound { kind, .. } => {
                let code = match *kind {
                    "user" => "user-not-found",
                    "post" => "post-not-found",
                    "image" => "image-not-found",
                    _ => "not-found",
                };
                Problem::new(StatusCode::NOT_FOUND, code, error.to_string())
            }
            Error::UnregisteredCaller(_) => {
                Problem::new(StatusCode::NOT_FOUND, "user-not-found", error.to_string())
            }
            Error::InvalidContinuation => Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-continuation",
                error.to_string(),
            ),
            Error::Conflict(why) => Problem::new(StatusCode::CONFLICT, "conflict", why.clone()),
            Error::KeyReused(_) => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                error.to_string(),
            ),
            Error::KeyPostDeleted => {
                Problem::new(StatusCode::CONFLICT, "post-deleted", error.to_string())
            }
            Error::Throttled { retry_after } => Problem {
                retry_after_seconds: Some(
                    retry_after.map_or(1, |d| d.as_secs_f64().ceil().max(1.0) as u64),
                ),
                ..Problem::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "throttled",
                    "the database is busy; retry after the time in Retry-After",
                )
            },
            // RFC 9110 lets a 503 say when to come back: the same short wait as a throttled
            // request, so that a client (and the image upload's description, whose 503 may
            // also be `images-busy`) always finds one.
            Error::Unavailable(_) => Problem {
                retry_after_seconds: Some(STORE_UNAVAILABLE_RETRY_SECONDS),
                ..Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store-unavailable",
                    "the database cannot be reached; try again later",
                )
            },
            Error::Image(refusal) => Problem {
                retry_after_seconds: refusal.retry_after_seconds(),
                ..Problem::new(refusal.status(), refusal.code(), refusal.to_string())
            },
            Error::Internal(_) => Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "something went wrong on our side; it has been logged",
            ),
        }
    }
}

/// Seconds a `store-unavailable` answer asks a client to wait before trying again.
const STORE_UNAVAILABLE_RETRY_SECONDS: u64 = 5;

impl Problem {
    /// The problem of `error`, logged as its kind is (in full where it is ours): what a
    /// response that answers it tells.
    pub fn logged(error: &Error) -> Self {
        match error {
            Error::Internal(why) => tracing::error!(error = %why, "request failed"),
            Error::Unavailable(why) => tracing::error!(error = %why, "store unavailable"),
            Error::Throttled { .. } => tracing::warn!("store throttled the request"),
            _ => tracing::debug!(error = %error, "request refused"),
        }
        Problem::from(error)
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        Problem::logged(&self).into_response()
    }
}
