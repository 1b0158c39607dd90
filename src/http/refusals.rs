//! What the router itself answers, for the API and the pages' forms alike: a route or a
//! method it does not serve, a body over the limit, and a handler that panicked.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::problem::Problem;

/// The most bytes one character of a text field takes in a request body, as it is sent: one
/// beyond the Basic Multilingual Plane escaped as a surrogate pair (`\uD83D\uDE00`, what
/// Python's `json.dumps` writes for an emoji) or percent-encoded in a form (`%F0%9F%98%80`).
/// A unit test checks the figure on every character. (Field limits count characters after
/// NFC; a text sent decomposed, as more characters than it is, counts as sent here.)
pub const MAX_BYTES_PER_CHAR: usize = 12;

/// Room in a body for what is not the text of its fields: the JSON around them, whitespace
/// between tokens, the spaces trimmed around a title, a form's other fields.
const BODY_STRUCTURE_BYTES: usize = 64 * 1024;

/// Request bodies above this are refused with 413 (`body-too-large`): enough for the longest
/// post the field limits take (its content and title) however its text is encoded
/// (about 1.2 MiB), and no more.
pub const MAX_BODY_BYTES: usize = MAX_BYTES_PER_CHAR
    * (crate::domain::PostContent::MAX_CHARS + crate::domain::Title::MAX_CHARS)
    + BODY_STRUCTURE_BYTES;

pub async fn unknown_route() -> Problem {
    route_not_found()
}

/// The answer to a path no route serves (also a tenant path that cannot be handed on).
pub fn route_not_found() -> Problem {
    Problem::new(StatusCode::NOT_FOUND, "route-not-found", "no such route")
}

/// The answer to a body over [`MAX_BODY_BYTES`], from the API and the pages' forms.
pub fn body_too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body-too-large",
        format!(
            "the request body is larger than {} KiB: a post takes at most {} characters of \
             content and {} of title",
            MAX_BODY_BYTES / 1024,
            crate::domain::PostContent::MAX_CHARS,
            crate::domain::Title::MAX_CHARS
        ),
    )
}

pub async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this route does not accept that method",
    )
}

pub fn panic_problem(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "something went wrong on our side; it has been logged",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::MAX_BYTES_PER_CHAR;

    /// The bytes of `text` as a JSON string escaped by Python's `json.dumps` (every UTF-16
    /// unit outside ASCII as `\uXXXX`).
    fn escaped_bytes(text: &str) -> usize {
        text.chars()
            .map(|c| if c.is_ascii() { 1 } else { 6 * c.len_utf16() })
            .sum()
    }

    #[test]
    fn no_character_takes_more_than_the_bound_however_it_is_encoded() {
        let widest = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .map(|c| (escaped_bytes(&c.to_string()).max(3 * c.len_utf8()), c))
            .max()
            .unwrap_or_default();
        assert_eq!(widest.0, MAX_BYTES_PER_CHAR, "{:?}", widest.1);
    }
}
