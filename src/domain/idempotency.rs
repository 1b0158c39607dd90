//! `Idempotency-Key` (the IETF httpapi draft's request header): a client names one creating
//! request with a key of its own, so that a retry after an ambiguous failure (a timeout: was
//! it written?) cannot create a second item. The key is never stored: the new item's id is
//! derived from the caller and the key (a name-based UUID, as a like's id is derived from
//! the liker), so the store itself refuses the repeat, and the item it holds answers it.

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use uuid::Uuid;

use super::{CommentId, PostId, UserId, ValidationError};

/// The header's name, as the draft spells it.
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";
const MAX_KEY_CHARS: usize = 255;

/// The characters of a key: printable ASCII without space, `"` and `\`, so that a key needs
/// no escaping, whether sent as the draft's structured-field string (`"key"`) or bare.
fn is_key_char(c: char) -> bool {
    c.is_ascii_graphic() && !matches!(c, '"' | '\\')
}

/// [`IdempotencyKey::parse`] as a pattern: `"key"` or `key`, 1–255 key characters.
const KEY_PATTERN: &str = r#"^("[!#-\[\]-~]{1,255}"|[!#-\[\]-~]{1,255})$"#;

/// A validated idempotency key: 1–255 [key characters](is_key_char).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The header's value: the draft's `sf-string` (`"8e03978e-40d5-43e8-bc93-6894a57f9324"`),
    /// or the same key without quotes, as many clients send it.
    pub fn parse(value: &str) -> Result<Self, ValidationError> {
        let refuse = |reason: String| ValidationError::new(IDEMPOTENCY_KEY_HEADER, reason);
        let key = match value.strip_prefix('"') {
            Some(quoted) => quoted
                .strip_suffix('"')
                .ok_or_else(|| refuse("a quoted key must end with a quote".into()))?,
            None => value,
        };
        if key.is_empty() {
            return Err(refuse("must not be empty".into()));
        }
        if let Some(bad) = key.chars().find(|c| !is_key_char(*c)) {
            return Err(refuse(format!(
                "must be printable ASCII without spaces, quotes or backslashes; got {bad:?}"
            )));
        }
        if key.len() > MAX_KEY_CHARS {
            return Err(refuse(format!(
                "must be at most {MAX_KEY_CHARS} characters (got {})",
                key.len()
            )));
        }
        Ok(Self(key.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name a derived id is made from: the caller, then the key. A user id holds no
    /// control character, so the line break keeps every (caller, key) pair apart.
    fn name(&self, scope: &[&str]) -> Vec<u8> {
        let mut name = scope.join("\n");
        name.push('\n');
        name.push_str(&self.0);
        name.into_bytes()
    }
}

impl utoipa::PartialSchema for IdempotencyKey {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(format!(
                "A key the client makes up for one creating request (a UUID is a good choice): \
                 1–{MAX_KEY_CHARS} printable ASCII characters without spaces, `\"` or `\\`, sent \
                 as a structured-field string (`\"key\"`, as the IETF draft says) or bare."
            )))
            .pattern(Some(KEY_PATTERN))
            .examples(["\"8e03978e-40d5-43e8-bc93-6894a57f9324\""])
            .into()
    }
}

impl utoipa::ToSchema for IdempotencyKey {}

/// Namespaces of the derived ids (fixed random UUIDs; changing one would let every key used
/// so far create its item a second time).
const POST_NAMESPACE: Uuid = Uuid::from_u128(0x2d0c_93a4_51e7_4c2b_b0f6_8a3e_7d19_c5e2);
const COMMENT_NAMESPACE: Uuid = Uuid::from_u128(0x9b47_e1d2_0c58_4f3a_a6e9_5d21_f0b8_3c74);

impl PostId {
    /// The id of the post that `author` creates with `key`.
    pub(crate) fn for_key(author: &UserId, key: &IdempotencyKey) -> Self {
        Self::from_uuid(Uuid::new_v5(&POST_NAMESPACE, &key.name(&[author.as_str()])))
    }
}

impl CommentId {
    /// The id of the comment that `author` writes on `post` with `key`. The post is part of
    /// the name so that comment ids stay unique across posts, as random ones are.
    pub(crate) fn for_key(post: &PostId, author: &UserId, key: &IdempotencyKey) -> Self {
        let name = key.name(&[post.as_str(), author.as_str()]);
        Self::from_uuid(Uuid::new_v5(&COMMENT_NAMESPACE, &name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{assert_refused_naming, assert_schema_agrees};

    fn key(raw: &str) -> IdempotencyKey {
        IdempotencyKey::parse(raw).unwrap()
    }

    #[test]
    fn takes_the_drafts_string_and_a_bare_key_alike() {
        let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assert_eq!(key(&format!("\"{uuid}\"")).as_str(), uuid);
        assert_eq!(key(uuid), key(&format!("\"{uuid}\"")));
        assert_eq!(key("a").as_str(), "a");
        assert_eq!(key(&"k".repeat(255)).as_str().len(), 255);
        assert_eq!(key("!#$%&'()*+,-./:;<=>?@[]^_`{|}~").as_str().len(), 30);
    }

    #[test]
    fn refuses_what_is_no_key() {
        let bad = [
            "",
            "\"\"",
            "\"unterminated",
            "a b",
            "tab\there",
            "quote\"inside",
            "back\\slash",
            "ünïcødé",
            "\"esc\\\"aped\"",
        ];
        assert_refused_naming(IDEMPOTENCY_KEY_HEADER, &bad, IdempotencyKey::parse);
        assert!(IdempotencyKey::parse(&"k".repeat(256)).is_err());
    }

    #[test]
    fn the_pattern_says_what_parse_takes() {
        let candidates = [
            "a",
            "\"a\"",
            "\"\"",
            "a b",
            "\"x",
            "x\"",
            "back\\slash",
            "ünï",
            "~!#[]",
            &"k".repeat(255),
            &"k".repeat(256),
            &format!("\"{}\"", "k".repeat(255)),
        ];
        assert_schema_agrees::<IdempotencyKey>(&candidates, |candidate| {
            IdempotencyKey::parse(candidate).is_ok()
        });
    }

    #[test]
    fn derived_ids_are_stable_and_never_shared_between_callers_keys_or_posts() {
        let (ada, bob) = (UserId::parse("ada").unwrap(), UserId::parse("bob").unwrap());
        let (one, two) = (key("one"), key("two"));
        let post = PostId::for_key(&ada, &one);
        assert_eq!(post, PostId::for_key(&ada, &key("\"one\"")));
        assert_ne!(post, PostId::for_key(&bob, &one));
        assert_ne!(post, PostId::for_key(&ada, &two));
        // "ada" + "b\none" and "ada\nb" + "one" are different pairs.
        let odd = UserId::parse("ada b").unwrap();
        assert_ne!(
            PostId::for_key(&odd, &key("one")),
            PostId::for_key(&ada, &key("b-one"))
        );
        let other_post = PostId::for_key(&ada, &two);
        let comment = CommentId::for_key(&post, &ada, &one);
        assert_eq!(comment, CommentId::for_key(&post, &ada, &one));
        assert_ne!(comment, CommentId::for_key(&other_post, &ada, &one));
        assert_ne!(comment, CommentId::for_key(&post, &bob, &one));
        assert_ne!(comment.as_str(), post.as_str());
    }
}
