//! A post's tags: what a reader follows to `/tags/{tag}`, so each is a word of a URL path
//! segment, written one way (`Rust`, ` rust ` and `RUST` are the tag `rust`).

use std::fmt;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use super::ValidationError;

/// A post carries at most this many tags.
pub const MAX_TAGS: usize = 10;
/// A tag holds at most this many characters (Unicode scalar values), after normalising.
pub const MAX_TAG_CHARS: usize = 50;

const FIELD: &str = "tags";

/// One tag, normalised: trimmed, in NFC, lower-case, each run of inner white space one `-`.
/// It holds letters and combining marks of any script, decimal digits, `-` and `_`: what a
/// path segment carries as it is and a reader can type, never `/`, `?`, `#`, `%`, `.`, `<`,
/// quotes or white space.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(String);

impl Tag {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let normal = normalise(raw);
        if normal.is_empty() {
            return Err(ValidationError::new(FIELD, "a tag must not be empty"));
        }
        if normal.chars().count() > MAX_TAG_CHARS {
            return Err(ValidationError::new(
                FIELD,
                format!("a tag holds at most {MAX_TAG_CHARS} characters"),
            ));
        }
        if let Some(refused) = normal.chars().find(|c| !may_stand_in_a_tag(*c)) {
            return Err(ValidationError::new(
                FIELD,
                format!(
                    "a tag holds letters, digits, '-' and '_' only, not {:?}",
                    refused
                ),
            ));
        }
        Ok(Self(normal))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The stored (normalised) form: what the post items and `GET /api/tags/{tag}/posts` carry.
impl utoipa::PartialSchema for Tag {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        static PATTERN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            format!("^{}+$", super::pattern::class(may_stand_in_a_tag))
        });
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "A tag, normalised: trimmed, lower-case, each run of inner white space one \
                 `-`. Letters and combining marks of any script, decimal digits, `-` and `_`.",
            ))
            .min_length(Some(1))
            .max_length(Some(MAX_TAG_CHARS))
            .pattern(Some(PATTERN.as_str()))
            .examples(["rust"])
            .into()
    }
}

impl utoipa::ToSchema for Tag {}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A post's tags, in the order given, each once (the first of two that normalise alike is
/// kept), at most [`MAX_TAGS`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags(Vec<Tag>);

impl Tags {
    pub fn parse<S: AsRef<str>>(raw: &[S]) -> Result<Self, ValidationError> {
        if raw.len() > MAX_TAGS {
            return Err(ValidationError::new(
                FIELD,
                format!("a post carries at most {MAX_TAGS} tags"),
            ));
        }
        let mut tags: Vec<Tag> = Vec::with_capacity(raw.len());
        for one in raw {
            let tag = Tag::parse(one.as_ref())?;
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        Ok(Self(tags))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Tag> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Trimmed, NFC, lower-case, inner white space runs as one `-`.
fn normalise(raw: &str) -> String {
    let lower: String = raw.trim().nfc().flat_map(char::to_lowercase).collect();
    lower.split_whitespace().collect::<Vec<_>>().join("-")
}

fn may_stand_in_a_tag(c: char) -> bool {
    use GeneralCategory::*;
    c == '-'
        || c == '_'
        || matches!(
            get_general_category(c),
            UppercaseLetter
                | LowercaseLetter
                | TitlecaseLetter
                | ModifierLetter
                | OtherLetter
                | NonspacingMark
                | SpacingMark
                | EnclosingMark
                | DecimalNumber
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::assert_refused_naming;

    fn tags(raw: &[&str]) -> Vec<String> {
        Tags::parse(raw)
            .unwrap()
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect()
    }

    #[test]
    fn tags_are_trimmed_lower_cased_and_joined_by_dashes() {
        assert_eq!(
            tags(&["  Rust ", "Cosmos  DB", "ÉTÉ", "naïve_bayes", "日本語"]),
            ["rust", "cosmos-db", "été", "naïve_bayes", "日本語"]
        );
    }

    #[test]
    fn the_first_of_duplicates_is_kept_in_order() {
        assert_eq!(tags(&["b", "A", "a", " B "]), ["b", "a"]);
    }

    #[test]
    fn one_word_typed_two_ways_is_one_tag() {
        let composed = "caf\u{e9}";
        let decomposed = "cafe\u{301}";
        assert_eq!(tags(&[composed, decomposed]), [composed]);
    }

    #[test]
    fn too_many_empty_long_or_unsafe_tags_are_refused() {
        let eleven: Vec<String> = (0..=MAX_TAGS).map(|i| format!("t{i}")).collect();
        assert!(Tags::parse(&eleven).is_err());
        let ten: Vec<String> = (0..MAX_TAGS).map(|i| format!("t{i}")).collect();
        assert!(Tags::parse(&ten).is_ok());
        let refused = [
            "",
            "   ",
            "a/b",
            "a?b",
            "a#b",
            "<b>",
            "a.b",
            "50%",
            "a\"b",
            "\u{202e}x",
            "a\u{200b}b",
        ];
        assert_refused_naming(FIELD, &refused, Tag::parse);
        assert!(Tag::parse(&"x".repeat(MAX_TAG_CHARS)).is_ok());
        assert!(Tag::parse(&"x".repeat(MAX_TAG_CHARS + 1)).is_err());
    }

    #[test]
    fn an_empty_list_is_no_tags() {
        assert!(Tags::parse::<&str>(&[]).unwrap().is_empty());
    }
}
