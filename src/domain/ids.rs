//! Item ids. Cosmos DB refuses ids containing `/`, `\\`, `?` or `#` (they break resource
//! addressing) and ids over 255 bytes; control characters are refused too because they
//! make logs and URLs ambiguous. Those are the rules of every id the store holds
//! ([`stored_id`]). An id a client chooses now ([`parse_id`]) must also be one that people
//! can see and that every client can put in a URL or a header unchanged:
//!
//! - not `.` or `..`, which URL handling resolves away as path segments;
//! - no `%`, which clients and proxies decode (and the principal header is percent-decoded);
//! - no space at either end (clients trim them) and no whitespace but the plain space;
//! - no format characters (zero-width spaces and joiners, direction marks): invisible, they
//!   make ids that look the same and differ;
//! - at least one character that shows ([`super::visible`]);
//! - in Unicode NFC, so that `é` is one id however it was typed. An id is refused, not
//!   normalised: it is compared byte for byte in URLs, headers and tokens.

use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use unicode_general_category::{GeneralCategory, get_general_category};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use uuid::Uuid;

use super::{ValidationError, pattern, visible};

const MAX_ID_BYTES: usize = 255;

/// The whitespace an id may hold (inside only).
const SPACE: char = ' ';

/// What [`parse_id`] accepts, for the API description. JSON Schema counts characters, not
/// bytes, so the pattern says it for the ids that surely fit: up to 255 ASCII characters, or
/// up to 63 of any kind (4 bytes at most each). A longer id of other characters within 255
/// bytes is taken but not described: what the description accepts, the API accepts. NFC is
/// said in words: a pattern cannot. Computed once: the classes list ranges of code points
/// (see [`pattern`]).
fn id_pattern() -> &'static str {
    static PATTERN: LazyLock<String> = LazyLock::new(|| {
        let inside = |c: char| !refused_in_id(c);
        let at_end = |c: char| inside(c) && c != SPACE;
        let ascii = pattern::class(|c| c.is_ascii() && inside(c));
        let ascii_end = pattern::class(|c| c.is_ascii() && at_end(c));
        let other = pattern::class(inside);
        let other_end = pattern::class(at_end);
        let shows = visible::lookahead();
        format!(
            r"^(?!\.{{1,2}}$){shows}(?:{ascii_end}(?:{ascii}{{0,253}}{ascii_end})?|{other_end}(?:{other}{{0,61}}{other_end})?)$"
        )
    });
    &PATTERN
}

/// A character no id a client chooses may hold: one [`stored_id`] refuses, or one that
/// [`unreachable_in_id`] names.
fn refused_in_id(c: char) -> bool {
    matches!(c, '/' | '\\' | '?' | '#') || c.is_control() || unreachable_in_id(c)
}

fn id_schema(description: &str, example: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!(
            "{description} At most {MAX_ID_BYTES} bytes of UTF-8, in Unicode NFC, with at least \
             one letter, digit, punctuation mark or symbol; not `.` or `..`; without `/`, `\\`, \
             `?`, `#`, `%`, control or format characters, whitespace other than the space, or a \
             space at either end (the pattern: up to 255 such ASCII characters, or 63 of any \
             kind). Percent-encode it in URLs as usual. An id outside these rules is a `400` \
             (`invalid-field`, naming it)."
        )))
        .min_length(Some(1))
        .max_length(Some(MAX_ID_BYTES))
        .pattern(Some(id_pattern().to_owned()))
        .examples([example])
        .into()
}

/// The rules of every id the store holds: what Cosmos DB can address.
fn stored_id(field: &'static str, raw: String) -> Result<String, ValidationError> {
    match stored_id_fault(&raw) {
        Some(reason) => Err(ValidationError::new(field, reason)),
        None => Ok(raw),
    }
}

/// Whether `raw` is an id the store can hold (the rules of [`stored_id`]), without a copy.
pub fn is_stored_id(raw: &str) -> bool {
    stored_id_fault(raw).is_none()
}

/// Why `raw` breaks [`stored_id`]'s rules, if it does.
fn stored_id_fault(raw: &str) -> Option<String> {
    if raw.is_empty() {
        return Some("must not be empty".into());
    }
    if raw.len() > MAX_ID_BYTES {
        return Some(format!("must be at most {MAX_ID_BYTES} bytes"));
    }
    raw.chars()
        .find(|c| matches!(c, '/' | '\\' | '?' | '#') || c.is_control())
        .map(|bad| format!("must not contain {bad:?}"))
}

/// An id a client chooses: [`stored_id`]'s rules, and those that make it visible and
/// addressable (see the module's description).
fn parse_id(field: &'static str, raw: &str) -> Result<String, ValidationError> {
    let id = stored_id(field, raw.to_owned())?;
    let refuse = |reason: String| Err(ValidationError::new(field, reason));
    if id == "." || id == ".." {
        return refuse(format!("must not be {id:?}: URLs resolve it away"));
    }
    if let Some(bad) = id.chars().find(|&c| unreachable_in_id(c)) {
        return refuse(format!(
            "must not contain {bad:?} (U+{:04X}): ids hold no `%`, format characters or \
             whitespace but the space",
            bad as u32
        ));
    }
    if id.starts_with(SPACE) || id.ends_with(SPACE) {
        return refuse("must not start or end with a space".into());
    }
    if !visible::has_visible(&id) {
        return refuse("must contain a letter, digit, punctuation mark or symbol".into());
    }
    if !unicode_normalization::is_nfc(&id) {
        return refuse(
            "must be in Unicode normalization form C (NFC): `é` as U+00E9, not `e` and U+0301"
                .into(),
        );
    }
    Ok(id)
}

/// A character [`parse_id`] refuses beyond [`stored_id`]'s: `%`, a format character, or
/// whitespace other than the space.
fn unreachable_in_id(c: char) -> bool {
    let format = get_general_category(c) == GeneralCategory::Format;
    c == '%' || (c != SPACE && (c.is_whitespace() || format))
}

macro_rules! id_type {
    ($name:ident, $field:literal, $doc:literal, example = $example:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
        #[serde(try_from = "String")]
        pub struct $name(String);

        /// Written as the string it is, without the copy that `#[serde(into)]` makes.
        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl $name {
            /// An id a client sends: in a path, a header or a token.
            pub fn parse(raw: &str) -> Result<Self, ValidationError> {
                parse_id($field, raw).map(Self)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        /// Deserialising reads ids as the store holds them, some from before the rules of
        /// [`parse_id`]: an id that was stored stays readable, exportable and importable.
        impl TryFrom<String> for $name {
            type Error = ValidationError;
            fn try_from(raw: String) -> Result<Self, Self::Error> {
                stored_id($field, raw).map(Self)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                id_schema($doc, $example)
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

id_type!(
    TenantId,
    "tenantId",
    "A blog's id in a multi-tenant deployment (`BLOG_TENANCY=multi`): the first path segment \
     after `/api/tenants/`. A tenant exists once it has a user.",
    example = "contoso"
);
id_type!(
    UserId,
    "userId",
    "A user's id: chosen by the client in `PUT /api/users/{userId}` and equal to the \
     caller's principal id.",
    example = "ada"
);
id_type!(
    PostId,
    "postId",
    "A post's id, generated by the server (a UUID) on `POST /api/posts`.",
    example = "3f2b8c1e-7d4a-4e9b-9c21-5a6f0e8d4b17"
);
id_type!(
    CommentId,
    "commentId",
    "A comment's id, generated by the server (a UUID).",
    example = "9a41d2c7-0e3b-4f58-b6a2-1c7e5d93f804"
);
id_type!(
    LikeId,
    "likeId",
    "A like's id, derived from the liker's id (a name-based UUID), so that a user can like \
     a post only once.",
    example = "7527d80e-fcb6-5e11-8397-3ebeffbf57f3"
);

impl PostId {
    pub fn generate() -> Self {
        Self::from_uuid(Uuid::new_v4())
    }

    pub(super) fn from_uuid(uuid: Uuid) -> Self {
        Self(uuid.to_string())
    }
}

impl CommentId {
    pub fn generate() -> Self {
        Self::from_uuid(Uuid::new_v4())
    }

    pub(super) fn from_uuid(uuid: Uuid) -> Self {
        Self(uuid.to_string())
    }
}

/// Namespace for deriving like ids (a fixed random UUID; changing it would let users like
/// every existing post a second time).
const LIKE_NAMESPACE: Uuid = Uuid::from_u128(0x6f1d_4c1e_9a3b_4b57_8e2a_0c55_d4a1_7b90);

impl LikeId {
    /// The id of `liker`'s like. Likes live in their post's partition, so one id per liker is
    /// enough to make a second like by the same user collide with the first. A name-based
    /// UUID keeps the id short whatever the length of the user id.
    pub fn for_liker(liker: &UserId) -> Self {
        Self(Uuid::new_v5(&LIKE_NAMESPACE, liker.as_str().as_bytes()).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids() {
        for ok in [
            "alice",
            "user-1",
            "ünïcødé",
            "a b",
            "漢字",
            "😀",
            "...",
            ".a",
            "x".repeat(255).as_str(),
        ] {
            assert!(UserId::parse(ok).is_ok(), "{ok:?}");
        }
    }

    #[test]
    fn rejects_ids_cosmos_cannot_address() {
        for bad in ["", "a/b", "a\\b", "a?b", "a#b", "a\nb", "a\u{7f}b"] {
            assert!(UserId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(UserId::parse(&"x".repeat(256)).is_err());
        // 128 two-byte characters are 256 bytes: the limit is in bytes, not characters.
        assert!(UserId::parse(&"é".repeat(128)).is_err());
    }

    #[test]
    fn rejects_ids_people_cannot_see_or_clients_cannot_send_unchanged() {
        for bad in [
            ".",
            "..",
            "a%b",
            "%41",
            " ada",
            "ada ",
            "a\u{a0}b",
            "a\u{3000}b",
            "a\u{200b}b",
            "\u{200b}",
            "\u{2060}ada",
            "a\u{202e}b",
            "\u{3164}",
            "\u{2800}",
            "\u{301}",
            "e\u{301}",
        ] {
            assert!(UserId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ids_stored_under_the_addressing_rules_alone_are_still_read() {
        let stored: UserId = serde_json::from_value(serde_json::json!("a%b ")).unwrap();
        assert_eq!(stored.as_str(), "a%b ");
        assert!(serde_json::from_value::<UserId>(serde_json::json!("a/b")).is_err());
    }

    /// The schema takes no id that `parse` refuses, and every ASCII id and short id that it
    /// takes (see [`id_pattern`]); NFC is in the description's words only.
    #[test]
    fn the_schema_takes_only_ids_that_parse_takes() {
        let mut candidates: Vec<String> = Vec::new();
        for c in (0..0x3100).filter_map(char::from_u32).chain([
            '\u{1f600}',
            '\u{10ffff}',
            '\u{feff}',
            '\u{ffa0}',
            '\u{e0041}',
        ]) {
            candidates.extend([
                c.to_string(),
                format!("a{c}b"),
                format!("{c}ab"),
                format!("ab{c}"),
            ]);
        }
        for n in [62, 63, 64, 127, 128, 254, 255, 256] {
            for fill in ["x", "é", "😀", "a b", "."] {
                candidates.push(fill.repeat(n));
            }
        }
        candidates.extend(["".into(), ".".into(), "..".into(), " a".into()]);
        let candidates: Vec<&str> = candidates
            .iter()
            .map(String::as_str)
            .filter(|c| unicode_normalization::is_nfc(c))
            .collect();
        let described = |id: &str| {
            let sure_to_fit = id.is_ascii() || id.chars().count() <= 63;
            UserId::parse(id).is_ok() && sure_to_fit
        };
        crate::domain::assert_schema_agrees::<UserId>(&candidates, described);
    }

    #[test]
    fn like_ids_are_stable_per_liker_and_distinct_between_likers() {
        let alice = UserId::parse("alice").unwrap();
        let bob = UserId::parse("bob").unwrap();
        assert_eq!(LikeId::for_liker(&alice), LikeId::for_liker(&alice));
        assert_ne!(LikeId::for_liker(&alice), LikeId::for_liker(&bob));
    }
}
