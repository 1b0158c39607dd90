//! What the router itself answers: a route or a method it does not serve, and a handler that
//! panicked.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::problem::Problem;

pub(super) async fn unknown_route() -> Problem {
    route_not_found()
}

/// The answer to a path no route serves (also a tenant path that cannot be handed on).
pub fn route_not_found() -> Problem {
    Problem::new(StatusCode::NOT_FOUND, "route-not-found", "no such route")
}

/// The answer to a body over [`super::MAX_BODY_BYTES`], from the API and the pages' forms.
pub fn body_too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body-too-large",
        format!(
            "the request body is larger than {} KiB: a post takes at most {} characters of \
             content and {} of title",
            super::MAX_BODY_BYTES / 1024,
            crate::domain::PostContent::MAX_CHARS,
            crate::domain::Title::MAX_CHARS
        ),
    )
}

pub(super) async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this route does not accept that method",
    )
}

pub(super) fn panic_problem(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "something went wrong on our side; it has been logged",
    )
    .into_response()
}
