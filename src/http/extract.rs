//! Extractors that turn every malformed request into a problem document instead of axum's
//! plain-text rejections: the caller's identity, JSON bodies and list parameters (path
//! parameters: `paths`).

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::auth::{AuthError, Authenticator};
use crate::blog::{ListRequest, PageSize};
use crate::domain::{IDEMPOTENCY_KEY_HEADER, IdempotencyKey, UserId, ValidationError};
use crate::error::Error;
use crate::problem::Problem;

pub use crate::auth::PRINCIPAL_HEADER;

/// The authenticated caller. Commands take it; queries are public. Who it is depends on the
/// authentication mode (`BLOG_AUTH`): the app's [`Authenticator`] decides, before the handler
/// runs, so a refused request writes nothing.
#[derive(Debug, Clone)]
pub struct Caller(pub UserId);

impl<S> FromRequestParts<S> for Caller
where
    S: Send + Sync,
    Arc<Authenticator>: FromRef<S>,
{
    type Rejection = AuthError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let authenticator = Arc::<Authenticator>::from_ref(state);
        authenticator.caller(&parts.headers).await.map(Caller)
    }
}

/// Who reads, on a public query: the caller when the request names one the authentication
/// mode accepts, else nobody (a request it refuses reads as anyone's, never as its author's).
/// Only an unpublished post's author sees it.
#[derive(Debug, Clone)]
pub struct Viewer(pub Option<UserId>);

impl<S> FromRequestParts<S> for Viewer
where
    S: Send + Sync,
    Arc<Authenticator>: FromRef<S>,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let authenticator = Arc::<Authenticator>::from_ref(state);
        Ok(Viewer(authenticator.caller(&parts.headers).await.ok()))
    }
}

/// The `Idempotency-Key` header of a creating request, if sent; a key that is not valid is a
/// 400 (`invalid-field`) before anything is written (and so is one sent twice: every request
/// is checked for that before it is routed).
pub struct IdempotencyKeyHeader(pub Option<IdempotencyKey>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKeyHeader {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get(IDEMPOTENCY_KEY_HEADER) else {
            return Ok(Self(None));
        };
        let value = value
            .to_str()
            .map_err(|_| refused("must be printable ASCII"))?;
        Ok(Self(Some(IdempotencyKey::parse(value)?)))
    }
}

/// [`IdempotencyKeyHeader`] in the API description.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // Read by `IdempotencyKeyHeader`; this only describes it.
pub struct IdempotencyParams {
    /// Makes a retry of this request safe (the IETF httpapi draft's header): a repeat with
    /// the same key from the same caller creates nothing and answers what the first one
    /// created (201, the item as it is now); the same key with a different body is a 422
    /// (`idempotency-key-reused`); an invalid key is a 400 (`invalid-field`). Keys of
    /// different callers never meet. The key is remembered as long as the item it created
    /// exists.
    #[param(rename = "Idempotency-Key", value_type = Option<IdempotencyKey>, nullable = false)]
    idempotency_key: Option<String>,
}

fn refused(reason: &str) -> Error {
    ValidationError::new(IDEMPOTENCY_KEY_HEADER, reason).into()
}

/// `axum::Json` with problem-document rejections: 415 without a JSON content type, for a
/// charset other than UTF-8 or for a `Content-Encoding`, 413 past the body limit, 400 for
/// malformed JSON or fields of the wrong type.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(refusal) = unread_encoding(req.headers()) {
            return Err(refusal);
        }
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => Err(json_problem(rejection).into_response()),
        }
    }
}

/// A 415 for a body that would be misread as JSON text: a `Content-Encoding` (the server
/// decodes none: bodies are small, and a compressed one would be a way past the body limit)
/// or a charset other than UTF-8, the only one JSON text exchanged between systems may use
/// (RFC 8259). The answer's `Accept-Encoding: identity` says what to send instead (RFC 7694).
fn unread_encoding(headers: &HeaderMap) -> Option<Response> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .map(|value| value.to_str().unwrap_or("").trim())
        .filter(|encoding| !encoding.eq_ignore_ascii_case("identity"));
    if let Some(encoding) = encoding {
        let mut response = Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-encoding",
            format!(
                "the body is sent with Content-Encoding {encoding:?}; send it unencoded (no \
                 Content-Encoding)"
            ),
        )
        .into_response();
        response.headers_mut().insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        return Some(response);
    }
    let charset = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<mime::Mime>().ok())
        .and_then(|media| {
            media
                .get_param(mime::CHARSET)
                .map(|c| c.as_str().to_owned())
        })
        .filter(|charset| !charset.eq_ignore_ascii_case("utf-8"));
    charset.map(|charset| {
        Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            format!(
                "the body is declared as charset {charset:?}; JSON is read as UTF-8 only: send \
                 UTF-8 with Content-Type: application/json (charset=utf-8 or none)"
            ),
        )
        .into_response()
    })
}

fn json_problem(rejection: JsonRejection) -> Problem {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the body as JSON with Content-Type: application/json",
        ),
        JsonRejection::JsonSyntaxError(e) => {
            Problem::new(StatusCode::BAD_REQUEST, "malformed-json", e.body_text())
        }
        JsonRejection::JsonDataError(e) => {
            Problem::new(StatusCode::BAD_REQUEST, "invalid-body", e.body_text())
        }
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            super::refusals::body_too_large()
        }
        other => Problem::new(
            StatusCode::BAD_REQUEST,
            "unreadable-body",
            other.body_text(),
        ),
    }
}

/// `?limit=&continuation=` of the list operations.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Items per page, 1–100.
    #[param(minimum = 1, maximum = 100, default = 50, nullable = false)]
    pub limit: Option<u32>,
    /// Opaque: the `continuation` of the previous page of this same list, passed back
    /// unchanged; leave it out (or empty) for the first page. Tokens are signed by the server:
    /// any other value, a token of another list or with a character changed included, is a
    /// 400 (`invalid-continuation`).
    #[param(nullable = false, pattern = "^[A-Za-z0-9_-]*$")]
    pub continuation: Option<String>,
}

pub struct List {
    pub size: PageSize,
    pub continuation: Option<String>,
}

impl List {
    /// The page asked for, as the blog's lists take it.
    pub fn request(&self) -> ListRequest<'_> {
        ListRequest::new(self.size, self.continuation.as_deref())
    }
}

async fn list_params<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
    default: PageSize,
) -> Result<(PageSize, Option<String>), Problem> {
    let params = axum::extract::Query::<ListParams>::from_request_parts(parts, state)
        .await
        .map_err(query_problem)?
        .0;
    let size =
        PageSize::parse(params.limit, default).map_err(|e| Problem::from(&Error::from(e)))?;
    Ok((size, params.continuation.filter(|c| !c.is_empty())))
}

impl<S: Send + Sync> FromRequestParts<S> for List {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let (size, continuation) = list_params(parts, state, PageSize::DEFAULT).await?;
        Ok(List { size, continuation })
    }
}

/// `?limit=` of the feed: 100 unless the caller asks for fewer.
pub struct FeedLimit(pub PageSize);

impl<S: Send + Sync> FromRequestParts<S> for FeedLimit {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let (size, _) = list_params(parts, state, PageSize::MAX).await?;
        Ok(FeedLimit(size))
    }
}

fn query_problem(rejection: QueryRejection) -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "invalid-query",
        rejection.body_text(),
    )
}
