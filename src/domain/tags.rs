//! A post's tags: what a reader follows to `/tags/{tag}`, so each is a word of a URL path
//! segment, written one way (`Rust`, ` rust ` and `RUST` are the tag `rust`).

use std::fmt;

use icu_casemap::CaseMapper;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use super::ValidationError;

/// A post carries at most this many tags.
pub const MAX_TAGS: usize = 10;
/// A tag holds at most this many characters (Unicode scalar values), after normalising.
pub const MAX_TAG_CHARS: usize = 50;

const FIELD: &str = "tags";

/// One tag, normalised: trimmed, case-folded, in NFC, each run of inner white space one `-`.
/// It holds letters and combining marks of any script, decimal digits, `-` and `_`: what a
/// path segment carries as it is and a reader can type, never `/`, `?`, `#`, `%`, `.`, `<`,
/// quotes or white space; and at least one letter or digit, so that it shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(String);

impl Tag {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let normal = normalise(raw);
        if normal.is_empty() {
            return Err(ValidationError::new(FIELD, "a tag must not be empty"));
        }
        if !normal.chars().any(is_letter_or_digit) {
            return Err(ValidationError::new(
                FIELD,
                format!("a tag needs a letter or a digit; {normal:?} has none"),
            ));
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
            format!(
                "^(?=[\\s\\S]*{}){}+$",
                super::pattern::class(is_letter_or_digit),
                super::pattern::class(may_stand_in_a_tag)
            )
        });
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "A tag, normalised: trimmed, case-folded (Unicode's full folding of the whole \
                 tag: `ΣΊΣΥΦΟΣ` and `Σίσυφος` are `σίσυφοσ`), in NFC, each run of inner white \
                 space one `-`. Letters and combining marks of any script, decimal digits, `-` \
                 and `_`, with at least one letter or digit.",
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
/// kept), at most [`MAX_TAGS`] once normalised: eleven that come out as ten are ten.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags(Vec<Tag>);

impl Tags {
    pub fn parse<S: AsRef<str>>(raw: &[S]) -> Result<Self, ValidationError> {
        let mut tags: Vec<Tag> = Vec::with_capacity(raw.len().min(MAX_TAGS));
        for one in raw {
            let tag = Tag::parse(one.as_ref())?;
            if tags.contains(&tag) {
                continue;
            }
            if tags.len() == MAX_TAGS {
                return Err(ValidationError::new(
                    FIELD,
                    format!("a post carries at most {MAX_TAGS} distinct tags"),
                ));
            }
            tags.push(tag);
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

/// Trimmed, case-folded, NFC, inner white space runs as one `-`. The whole text is folded
/// at once with Unicode's full case folding, which lower-casing a character at a time is not:
/// a final sigma (`ς`) folds as `σ`, `ß` as `ss`. Folding may leave text out of NFC (a
/// precomposed letter can fold to a letter and a combining mark), so NFC comes after it.
fn normalise(raw: &str) -> String {
    let composed: String = raw.trim().nfc().collect();
    let folded: String = CaseMapper::new().fold_string(&composed).nfc().collect();
    folded.split_whitespace().collect::<Vec<_>>().join("-")
}

fn may_stand_in_a_tag(c: char) -> bool {
    use GeneralCategory::*;
    c == '-'
        || c == '_'
        || is_letter_or_digit(c)
        || matches!(
            get_general_category(c),
            NonspacingMark | SpacingMark | EnclosingMark
        )
}

/// What makes a tag show: `-`, `_` and combining marks alone draw nothing to read.
fn is_letter_or_digit(c: char) -> bool {
    use GeneralCategory::*;
    matches!(
        get_general_category(c),
        UppercaseLetter
            | LowercaseLetter
            | TitlecaseLetter
            | ModifierLetter
            | OtherLetter
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
    fn a_tag_is_folded_whole_not_a_character_at_a_time() {
        assert_eq!(
            tags(&["ΣΊΣΥΦΟΣ", "Σίσυφος", "σίσυφοσ"]),
            ["σίσυφοσ"],
            "final sigma"
        );
        assert_eq!(tags(&["Straße", "STRASSE"]), ["strasse"]);
        // U+0390 folds to ι with two combining marks, composed again.
        assert_eq!(tags(&["\u{0390}"]), ["\u{0390}"]);
    }

    #[test]
    fn the_count_is_of_distinct_tags() {
        let mut eleven: Vec<String> = (0..MAX_TAGS).map(|i| format!("t{i}")).collect();
        eleven.push("T0".to_owned());
        assert_eq!(Tags::parse(&eleven).unwrap().iter().count(), MAX_TAGS);
        eleven.push("t10".to_owned());
        assert!(Tags::parse(&eleven).is_err());
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
            "-",
            "_",
            "-_-",
            "\u{0301}",
            "\u{0301}\u{0302}-",
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
    fn the_schema_takes_what_a_stored_tag_may_be() {
        let long = "x".repeat(MAX_TAG_CHARS);
        let candidates = [
            "rust",
            "cosmos-db",
            "σίσυφοσ",
            "日本語",
            "naïve_bayes",
            "a\u{301}",
            "7",
            long.as_str(),
            "-",
            "_",
            "-_-",
            "\u{301}",
            "a/b",
        ];
        crate::domain::assert_schema_agrees::<Tag>(&candidates, |c| Tag::parse(c).is_ok());
    }

    #[test]
    fn an_empty_list_is_no_tags() {
        assert!(Tags::parse::<&str>(&[]).unwrap().is_empty());
    }
}
