//! The blog's vocabulary: validated inputs ("parse, don't validate"), the items of the V3
//! data model, canonical dates and the short form of posts. Nothing here knows about storage
//! or HTTP.

mod archive;
mod dates;
mod idempotency;
mod ids;
mod items;
mod pattern;
mod publication;
mod slug;
mod tags;
mod text;
mod tombstone;
mod visible;
mod wire;

pub use archive::{ArchiveMonth, Month, MonthCount};
pub use dates::Timestamp;
pub use idempotency::{IDEMPOTENCY_KEY_HEADER, IdempotencyKey};
pub use ids::{CommentId, LikeId, PostId, TenantId, UserId, is_stored_id};
pub use items::{Comment, Like, Post, SHORT_CONTENT_CHARS, Typed, User, is_a, is_stored_a};
pub use publication::{PostStatus, Publication};
pub use slug::{MAX_SLUG_CHARS, Slug};
pub use tags::{MAX_TAG_CHARS, MAX_TAGS, Tag, Tags};
pub use text::{CommentContent, PostContent, Title, Username};
pub use tombstone::{Deleted, TOMBSTONE_TTL_SECONDS, Tombstone};
pub use wire::WireForm;

/// Why an input was refused. `field` names the offending field for the problem document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    pub field: &'static str,
    pub reason: String,
}

impl ValidationError {
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}

/// Asserts that `parse` refuses every one of `refused`, naming `field`: a refusal says which
/// input was wrong.
#[cfg(test)]
pub(crate) fn assert_refused_naming<T>(
    field: &str,
    refused: &[&str],
    parse: impl Fn(&str) -> Result<T, ValidationError>,
) {
    for input in refused {
        match parse(input) {
            Ok(_) => panic!("{input:?} was taken"),
            Err(error) => assert_eq!(error.field, field, "{input:?}"),
        }
    }
}

/// Asserts that `T`'s schema in the API description (as a JSON Schema validator applies it:
/// pattern, lengths) accepts exactly the `candidates` that `accepts` takes: the description
/// says what the domain refuses.
#[cfg(test)]
pub(crate) fn assert_schema_agrees<T: utoipa::PartialSchema>(
    candidates: &[&str],
    accepts: impl Fn(&str) -> bool,
) {
    let schema = serde_json::to_value(T::schema()).expect("a schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    for candidate in candidates {
        assert_eq!(
            validator.is_valid(&serde_json::json!(candidate)),
            accepts(candidate),
            "{schema} on {candidate:?}"
        );
    }
}
