//! Validated text fields. Text is kept in Unicode normalization form C (NFC), so that the
//! same words typed on different systems are the same text; lengths count its Unicode scalar
//! values (what a person sees as characters in most scripts), never bytes. Every field must
//! show something (see [`super::visible`]).

use serde::Serialize;
use unicode_normalization::UnicodeNormalization;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use super::{ValidationError, visible};

// What [`bounded`] takes, as JSON Schema patterns (the API description's request bodies say
// exactly what is refused). Whitespace is what `str::trim` strips (Unicode White_Space);
// control characters are Unicode category Cc (`char::is_control`), of which only tab, line
// feed and carriage return are text.

/// A character [`bounded`] takes: anything but a control character other than `\t \n \r`.
const ALLOWED: &str = r"[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]";
/// Whitespace: what `str::trim` strips around a trimmed field, whatever it is (vertical tab,
/// form feed and U+0085 are control characters, refused only inside).
const WHITESPACE: &str = r"[\t-\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";
/// Whitespace an untrimmed field may hold ([`WHITESPACE`] but its refused control characters).
const TEXT_WHITESPACE: &str = r"[\t\n\r \u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";
/// A character that is neither whitespace nor a control character.
const NOT_BLANK: &str =
    r"[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]";

/// The pattern of a field that [`bounded`] takes, given its rules: a character that shows,
/// no refused control character, and for a trimmed field at most `max_chars` between the
/// first and the last non-whitespace character (an untrimmed field's bound is its
/// `maxLength`). Lengths are those of the text as sent: NFC can make a text of some scripts
/// longer, which only matters within a few characters of the bound.
fn pattern(max_chars: usize, trim: bool) -> String {
    let shows = visible::lookahead();
    if trim {
        let inner = max_chars.saturating_sub(2);
        format!(
            "^{shows}{WHITESPACE}*{NOT_BLANK}(?:{ALLOWED}{{0,{inner}}}{NOT_BLANK})?{WHITESPACE}*$"
        )
    } else {
        format!("^{shows}{TEXT_WHITESPACE}*{NOT_BLANK}{ALLOWED}*$")
    }
}

/// The request schema of a text field: its pattern, and for an untrimmed one its length.
fn schema(description: &str, example: &str, max_chars: usize, trim: bool) -> RefOr<Schema> {
    let builder = ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!(
            "{description} At least one letter, digit, punctuation mark or symbol (Unicode \
             categories L, N, P, S, not the blank Hangul fillers or Braille pattern): text of \
             only spaces, zero-width or formatting characters is refused. No control \
             characters but tab, line feed and carriage return. Stored in Unicode NFC; \
             lengths count its code points."
        )))
        .min_length(Some(1))
        .pattern(Some(pattern(max_chars, trim)))
        .examples([example]);
    match trim {
        true => builder,
        false => builder.max_length(Some(max_chars)),
    }
    .into()
}

fn bounded(
    field: &'static str,
    raw: &str,
    max_chars: usize,
    trim: bool,
) -> Result<String, ValidationError> {
    let normalized: String = raw.nfc().collect();
    let text = if trim {
        normalized.trim()
    } else {
        normalized.as_str()
    };
    if text.trim().is_empty() {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    // Line breaks and tabs are text; other control characters (NUL, escape sequences...)
    // only ever come from broken or hostile clients and break logs and terminals.
    if let Some(bad) = text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(ValidationError::new(
            field,
            format!("must not contain the control character {bad:?}"),
        ));
    }
    if !visible::has_visible(text) {
        return Err(ValidationError::new(
            field,
            "must contain a letter, digit, punctuation mark or symbol: whitespace, zero-width \
             and formatting characters alone show nothing",
        ));
    }
    let chars = text.chars().count();
    if chars > max_chars {
        return Err(ValidationError::new(
            field,
            format!("must be at most {max_chars} characters (got {chars})"),
        ));
    }
    Ok(text.to_owned())
}

macro_rules! text_type {
    (
        #[doc = $doc:literal] $name:ident, $field:literal, $max:literal, trim = $trim:literal,
        example = $example:literal
    ) => {
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub const MAX_CHARS: usize = $max;

            pub fn parse(raw: &str) -> Result<Self, ValidationError> {
                bounded($field, raw, $max, $trim).map(Self)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_inner(self) -> String {
                self.0
            }
        }

        /// The field in a request body (`#[schema(value_type = ...)]`).
        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                schema($doc.trim(), $example, $max, $trim)
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

text_type!(
    /// A username: 1–64 characters after trimming surrounding whitespace.
    Username, "username", 64, trim = true, example = "Ada"
);
text_type!(
    /// A post's title: 1–300 characters after trimming surrounding whitespace.
    Title, "title", 300, trim = true, example = "Hello"
);
text_type!(
    /// A post's content: 1–100,000 characters, kept exactly as written (whitespace is hers).
    PostContent, "content", 100_000, trim = false, example = "My first post"
);
text_type!(
    /// A comment: 1–10,000 characters, kept exactly as written.
    CommentContent, "content", 10_000, trim = false, example = "Welcome!"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::assert_schema_agrees;

    #[test]
    fn username_is_trimmed_and_bounded() {
        assert_eq!(Username::parse("  ada ").unwrap().as_str(), "ada");
        assert!(Username::parse("   ").is_err());
        assert!(Username::parse("").is_err());
        assert!(Username::parse(&"é".repeat(64)).is_ok());
        assert!(Username::parse(&"é".repeat(65)).is_err());
    }

    #[test]
    fn content_keeps_whitespace_but_must_say_something() {
        assert_eq!(PostContent::parse(" hi\n").unwrap().as_str(), " hi\n");
        assert!(PostContent::parse(" \n\t").is_err());
        assert!(CommentContent::parse(&"x".repeat(10_000)).is_ok());
        assert!(CommentContent::parse(&"x".repeat(10_001)).is_err());
        assert!(Title::parse(&"t".repeat(301)).is_err());
    }

    #[test]
    fn control_characters_other_than_line_breaks_and_tabs_are_refused() {
        assert!(Title::parse("a\u{0}b").is_err());
        assert!(Username::parse("a\u{1b}[31mb").is_err());
        assert!(PostContent::parse("line\r\nnext\tcol").is_ok());
        assert!(CommentContent::parse("\u{7f}").is_err());
    }

    /// Every character of the Basic Multilingual Plane up to the CJK block, and a few beyond,
    /// alone, among others, and around whitespace: the patterns accept exactly what `parse`
    /// takes, lengths included.
    #[test]
    fn the_patterns_say_what_parse_takes() {
        let mut chars: Vec<char> = (0..0x3100).filter_map(char::from_u32).collect();
        chars.extend(['\u{feff}', '\u{fffd}', '\u{1f600}', '\u{10ffff}']);
        let mut candidates: Vec<String> = Vec::new();
        for c in chars {
            candidates.extend([
                c.to_string(),
                format!("a{c}b"),
                format!("{c}ab"),
                format!("ab{c}"),
            ]);
        }
        for n in [62, 63, 64, 65, 299, 300, 301] {
            for fill in ["x", "é", "😀", " x", "x "] {
                let text = fill.repeat(n);
                candidates.push(format!("  {text}\n"));
                candidates.push(text);
            }
        }
        candidates.extend([
            "".into(),
            " ".into(),
            "\t\n\r".into(),
            "\u{3000}x\u{3000}".into(),
        ]);
        let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
        assert_schema_agrees::<Username>(&candidates, |c| Username::parse(c).is_ok());
        assert_schema_agrees::<Title>(&candidates, |c| Title::parse(c).is_ok());
        let (long, longer) = ("é".repeat(10_000), "é".repeat(10_001));
        let contents = [candidates.as_slice(), &[long.as_str(), longer.as_str()]].concat();
        assert_schema_agrees::<CommentContent>(&contents, |c| CommentContent::parse(c).is_ok());
        assert_schema_agrees::<PostContent>(&candidates, |c| PostContent::parse(c).is_ok());
    }

    #[test]
    fn text_that_shows_nothing_is_refused_and_text_is_kept_in_nfc() {
        for blank in [
            "\u{200b}",
            "\u{3164}\u{3164}",
            "\u{2800}",
            "\u{200d}\u{2060}",
            "\u{301}",
        ] {
            assert!(Username::parse(blank).is_err(), "{blank:?}");
            assert!(CommentContent::parse(blank).is_err(), "{blank:?}");
        }
        assert!(Username::parse("a\u{200d}b").is_ok());
        assert_eq!(Title::parse("Cafe\u{301}").unwrap().as_str(), "Caf\u{e9}");
    }

    #[test]
    fn errors_name_the_field() {
        let err = Title::parse("").unwrap_err();
        assert_eq!(err.field, "title");
    }
}
