//! What a request must be before a handler reads it. Of every request, the pages' as the
//! API's: a URL of a bounded length ([`refuse_long_uri`]). Of the API's, checked once for
//! every route ([`admit`]): that, and each header the API reads sent at most once; and what
//! every refusal looks like: a problem document, also when the refusal comes from below the
//! handlers (axum's own rejections). That a query holds only the parameters its operation
//! takes is read from the API's description, so it is the API's own check.

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::PRINCIPAL_HEADER;
use crate::domain::IDEMPOTENCY_KEY_HEADER;
use crate::problem::{self, Problem};

/// The request headers the API reads, each of which must come at most once: a request that
/// says two things (two callers, two media types, two keys) is refused rather than read as
/// its first copy. `If-Match` is among them though no operation is conditional yet: two
/// versions expected at once can mean nothing.
const SINGLE_HEADERS: [&str; 6] = [
    PRINCIPAL_HEADER,
    "Authorization",
    "Content-Type",
    "Content-Encoding",
    "If-Match",
    IDEMPOTENCY_KEY_HEADER,
];

/// The longest request target (path and query) served: that of the HTTP servers in front of
/// a function app (Kestrel's request line), well below the 64 KiB past which the HTTP parser
/// itself answers 414 before any of this runs.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// The outermost check: the request target's length and the single headers, then the
/// request; an error answer without a problem document becomes one.
pub async fn admit(request: Request, next: Next) -> Response {
    if let Some(refusal) = refusal_of(request.uri(), request.headers()) {
        return refusal.into_response();
    }
    as_problem(next.run(request).await).await
}

/// The pages' first check, the same as the API's: a URL over [`MAX_URI_BYTES`] is a `414`
/// wherever it points, never a page's `400` for the id it holds.
pub async fn refuse_long_uri(request: Request, next: Next) -> Response {
    match uri_refusal(request.uri()) {
        Some(refusal) => refusal.into_response(),
        None => next.run(request).await,
    }
}

fn uri_refusal(uri: &Uri) -> Option<Problem> {
    let target = uri.path_and_query().map_or(0, |p| p.as_str().len());
    (target > MAX_URI_BYTES).then(|| {
        Problem::new(
            StatusCode::URI_TOO_LONG,
            "uri-too-long",
            format!("the URL is {target} bytes long; at most {MAX_URI_BYTES} are served"),
        )
    })
}

fn refusal_of(uri: &Uri, headers: &HeaderMap) -> Option<Problem> {
    if let Some(refusal) = uri_refusal(uri) {
        return Some(refusal);
    }
    SINGLE_HEADERS.iter().find_map(|&name| {
        let count = headers.get_all(name).iter().count();
        (count > 1).then(|| Problem {
            field: Some(name.into()),
            ..Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-field",
                format!("{name}: sent {count} times; send it once"),
            )
        })
    })
}

/// Bodies of refusals made by the routing layer and extractors that are not ours, read to
/// become the detail, are short; longer ones are not read.
const MAX_BARE_DETAIL_BYTES: usize = 4096;

/// `response`, or when it is an error answer without a problem document, one in its place:
/// its status, a code for it, and its text (if any) as the detail.
async fn as_problem(response: Response) -> Response {
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes() == problem::CONTENT_TYPE.as_bytes());
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_BARE_DETAIL_BYTES)
        .await
        .ok()
        .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok())
        .filter(|text| !text.trim().is_empty());
    let (code, default_detail) = bare_code(status);
    let mut problem =
        Problem::new(status, code, text.unwrap_or_else(|| default_detail.into())).into_response();
    // Keep what the refusal said besides its body (`Allow`, `WWW-Authenticate`...).
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            problem.headers_mut().insert(name, value.clone());
        }
    }
    problem
}

/// The code and the default detail of a refusal that came without a problem document.
fn bare_code(status: StatusCode) -> (&'static str, &'static str) {
    match status {
        StatusCode::NOT_FOUND => ("route-not-found", "no such route"),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method-not-allowed",
            "this route does not accept that method",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ("body-too-large", "the request body is too large"),
        StatusCode::URI_TOO_LONG => ("uri-too-long", "the URL is too long"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "unsupported-media-type",
            "the body's media type is not served",
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            ("headers-too-large", "the request's headers are too large")
        }
        status if status.is_server_error() => (
            "internal",
            "something went wrong on our side; it has been logged",
        ),
        _ => ("bad-request", "the request cannot be served as sent"),
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;

    use super::*;

    #[tokio::test]
    async fn a_bare_refusal_becomes_a_problem_that_keeps_its_text_and_headers() {
        let bare = Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header(header::ALLOW, "GET")
            .header(header::CONTENT_TYPE, "text/plain")
            .body(Body::from("only GET here"))
            .expect("a response");
        let response = as_problem(bare).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()[header::ALLOW], "GET");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            problem::CONTENT_TYPE
        );
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .expect("a body");
        let problem: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(problem["code"], "method-not-allowed");
        assert_eq!(problem["detail"], "only GET here");
    }

    #[tokio::test]
    async fn an_empty_refusal_gets_the_detail_of_its_status_and_success_is_left_alone() {
        let empty = Response::builder()
            .status(StatusCode::URI_TOO_LONG)
            .body(Body::empty())
            .expect("a response");
        let body = axum::body::to_bytes(as_problem(empty).await.into_body(), 4096)
            .await
            .expect("a body");
        let problem: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(problem["code"], "uri-too-long");
        let ok = Response::new(Body::from("fine"));
        assert_eq!(as_problem(ok).await.status(), StatusCode::OK);
    }
}
