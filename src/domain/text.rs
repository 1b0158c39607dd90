//! Validated text fields. Text is kept in Unicode normalization form C (NFC), so that the
//! same words typed on different systems are the same text; lengths count its Unicode scalar
//! values (what a person sees as characters in most scripts), never bytes. Every field must
//! show something (see [`super::visible`]).

use std::sync::LazyLock;

use serde::Serialize;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use super::{ValidationError, pattern, visible};

/// Which characters a field refuses: text (titles, contents, comments) or a name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Line breaks and tabs are text; other control characters (NUL, escape sequences...)
    /// only ever come from broken or hostile clients and break logs and terminals. The
    /// bidirectional embeddings, overrides and isolates are refused: they make text display in
    /// another order than it is stored (`"\u{202E}txt.exe"` shows as "exe.txt"), and the
    /// pages set each text's direction themselves. The marks (LRM, RLM, ALM), which only
    /// nudge neutral characters, stay: right-to-left writing needs them.
    Text,
    /// A username is one line that shows what it is: besides what text refuses, no control
    /// character at all (no line break, no tab), no line or paragraph separator, and no
    /// format character (zero-width spaces and joiners, direction marks, tags), which would
    /// make names that look the same and differ (`"Ad\u{200B}a"`).
    Name,
}

/// The bidirectional formatting characters that reorder what follows them: LRE, RLE, PDF,
/// LRO, RLO (U+202A–U+202E) and LRI, RLI, FSI, PDI (U+2066–U+2069).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

impl Kind {
    /// Why `c` is refused in a field of this kind, if it is.
    fn refusal(self, c: char) -> Option<&'static str> {
        let text_control = c.is_control() && !matches!(c, '\n' | '\r' | '\t');
        match self {
            _ if text_control => Some("a control character"),
            _ if is_bidi_control(c) => Some(
                "a bidirectional override or isolate, which makes text display in another \
                 order than it is written",
            ),
            Kind::Name if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                Some("a line break or tab: a name is one line")
            }
            Kind::Name if get_general_category(c) == GeneralCategory::Format => Some(
                "an invisible format character (zero-width space or joiner, direction mark), \
                 which makes names that look alike and differ",
            ),
            _ => None,
        }
    }

    fn refuses(self, c: char) -> bool {
        self.refusal(c).is_some()
    }

    /// What the description says this kind refuses.
    fn refused_in_words(self) -> &'static str {
        match self {
            Kind::Text => {
                "No control characters but tab, line feed and carriage return, and no \
                 bidirectional embeddings, overrides or isolates (U+202A–U+202E, \
                 U+2066–U+2069)."
            }
            Kind::Name => {
                "One line: no control characters (tabs and line breaks included), line or \
                 paragraph separators, bidirectional embeddings, overrides or isolates, or \
                 format characters (zero-width spaces and joiners, direction marks) inside."
            }
        }
    }
}

// What [`bounded`] takes, as JSON Schema patterns (the API description's request bodies say
// exactly what is refused), computed from the same rules. Whitespace is what `str::trim`
// strips (Unicode White_Space).

/// The character classes of a kind's patterns.
struct Classes {
    /// A character the field takes.
    allowed: String,
    /// Whitespace the field may hold (an untrimmed field's leading whitespace).
    whitespace: String,
    /// A character that is neither whitespace nor refused.
    not_blank: String,
}

impl Classes {
    fn of(kind: Kind) -> Self {
        Self {
            allowed: pattern::class(|c| !kind.refuses(c)),
            whitespace: pattern::class(|c| c.is_whitespace() && !kind.refuses(c)),
            not_blank: pattern::class(|c| !c.is_whitespace() && !kind.refuses(c)),
        }
    }
}

static TEXT_CLASSES: LazyLock<Classes> = LazyLock::new(|| Classes::of(Kind::Text));
static NAME_CLASSES: LazyLock<Classes> = LazyLock::new(|| Classes::of(Kind::Name));
/// Whatever `str::trim` strips around a trimmed field, refused inside or not.
static TRIMMED: LazyLock<String> = LazyLock::new(|| pattern::class(char::is_whitespace));

/// The pattern of a field that [`bounded`] takes, given its rules: a character that shows,
/// no refused character, and for a trimmed field at most `max_chars` between the first and
/// the last non-whitespace character (an untrimmed field's bound is its `maxLength`).
/// Lengths are those of the text as sent: NFC can make a text of some scripts longer, which
/// only matters within a few characters of the bound.
fn pattern(kind: Kind, max_chars: usize, trim: bool) -> String {
    let shows = visible::lookahead();
    let classes = match kind {
        Kind::Text => &*TEXT_CLASSES,
        Kind::Name => &*NAME_CLASSES,
    };
    let Classes {
        allowed,
        whitespace,
        not_blank,
    } = classes;
    if trim {
        let around = &*TRIMMED;
        let inner = max_chars.saturating_sub(2);
        format!("^{shows}{around}*{not_blank}(?:{allowed}{{0,{inner}}}{not_blank})?{around}*$")
    } else {
        format!("^{shows}{whitespace}*{not_blank}{allowed}*$")
    }
}

/// The request schema of a text field: its pattern, and for an untrimmed one its length.
fn schema(
    description: &str,
    example: &str,
    kind: Kind,
    max_chars: usize,
    trim: bool,
) -> RefOr<Schema> {
    let builder = ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!(
            "{description} At least one letter, digit, punctuation mark or symbol (Unicode \
             categories L, N, P, S, not the blank Hangul fillers or Braille pattern): text of \
             only spaces, zero-width or formatting characters is refused. {} Stored in Unicode \
             NFC; lengths count its code points. Anything else is a `400` (`invalid-field`).",
            kind.refused_in_words()
        )))
        .min_length(Some(1))
        .pattern(Some(pattern(kind, max_chars, trim)))
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
    kind: Kind,
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
    if let Some((bad, why)) = text
        .chars()
        .find_map(|c| kind.refusal(c).map(|why| (c, why)))
    {
        return Err(ValidationError::new(
            field,
            format!("must not contain {bad:?} (U+{:04X}, {why})", bad as u32),
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
        #[doc = $doc:literal] $name:ident, $field:literal, $kind:expr, $max:literal,
        trim = $trim:literal, example = $example:literal
    ) => {
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub const MAX_CHARS: usize = $max;

            pub fn parse(raw: &str) -> Result<Self, ValidationError> {
                bounded($field, raw, $kind, $max, $trim).map(Self)
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
                schema($doc.trim(), $example, $kind, $max, $trim)
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

text_type!(
    /// A username: 1–64 characters after trimming surrounding whitespace.
    Username, "username", Kind::Name, 64, trim = true, example = "Ada"
);
text_type!(
    /// A post's title: 1–300 characters after trimming surrounding whitespace.
    Title, "title", Kind::Text, 300, trim = true, example = "Hello"
);
text_type!(
    /// A post's content: 1–100,000 characters, kept exactly as written (whitespace is hers).
    PostContent, "content", Kind::Text, 100_000, trim = false, example = "My first post"
);
text_type!(
    /// A comment: 1–10,000 characters, kept exactly as written.
    CommentContent, "content", Kind::Text, 10_000, trim = false, example = "Welcome!"
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

    /// Every character of the Basic Multilingual Plane up to the CJK block, and a few beyond,
    /// alone, among others, and around whitespace: the patterns accept exactly what `parse`
    /// takes, lengths included.
    #[test]
    fn the_patterns_say_what_parse_takes() {
        let mut chars: Vec<char> = (0..0x3100).filter_map(char::from_u32).collect();
        chars.extend([
            '\u{feff}',
            '\u{fffd}',
            '\u{1f600}',
            '\u{10ffff}',
            '\u{e0041}',
            '\u{110bd}',
        ]);
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
            "\u{202e}txt.exe\u{202c}".into(),
            "Ad\u{200b}a".into(),
            "\u{e0041}x".into(),
        ]);
        let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
        assert_schema_agrees::<Username>(&candidates, |c| Username::parse(c).is_ok());
        assert_schema_agrees::<Title>(&candidates, |c| Title::parse(c).is_ok());
        let (long, longer) = ("é".repeat(10_000), "é".repeat(10_001));
        let contents = [candidates.as_slice(), &[long.as_str(), longer.as_str()]].concat();
        assert_schema_agrees::<CommentContent>(&contents, |c| CommentContent::parse(c).is_ok());
        assert_schema_agrees::<PostContent>(&candidates, |c| PostContent::parse(c).is_ok());
    }

    /// Which fields take `text`: a username, a title, a post's content, a comment's.
    fn taken_by(text: &str) -> [bool; 4] {
        [
            Username::parse(text).is_ok(),
            Title::parse(text).is_ok(),
            PostContent::parse(text).is_ok(),
            CommentContent::parse(text).is_ok(),
        ]
    }

    /// Each kind of character a field may refuse, by example, with the fields that take it.
    #[test]
    fn each_field_refuses_what_its_kind_refuses() {
        const NO_FIELD: [bool; 4] = [false; 4];
        const TEXT_FIELDS: [bool; 4] = [false, true, true, true];
        for (text, taken) in [
            // Control characters other than line breaks and tabs: broken or hostile clients.
            ("a\u{0}b", NO_FIELD),
            ("a\u{1b}[31mb", NO_FIELD),
            ("\u{7f}", NO_FIELD),
            // Text that shows nothing.
            ("\u{200b}", NO_FIELD),
            ("\u{3164}\u{3164}", NO_FIELD),
            ("\u{2800}", NO_FIELD),
            ("\u{200d}\u{2060}", NO_FIELD),
            ("\u{301}", NO_FIELD),
            // Bidirectional overrides and isolates, which reorder what is shown.
            ("\u{202e}txt.exe\u{202c}", NO_FIELD),
            ("a\u{2066}b", NO_FIELD),
            ("a\u{2069}", NO_FIELD),
            ("\u{202a}x", NO_FIELD),
            // Line breaks, tabs and invisible characters: text, but never in a username,
            // which is one line that shows what it is.
            ("line\r\nnext\tcol", TEXT_FIELDS),
            ("Ad\u{200b}a", TEXT_FIELDS),
            ("Ad\u{200d}a", TEXT_FIELDS),
            ("Ad\u{2060}a", TEXT_FIELDS),
            ("Ad\u{feff}a", TEXT_FIELDS),
            ("Ad\u{200f}a", TEXT_FIELDS),
            ("Ada\nLovelace", TEXT_FIELDS),
            ("Ada\rx", TEXT_FIELDS),
            ("Ada\tx", TEXT_FIELDS),
            ("Ada\u{2028}x", TEXT_FIELDS),
            // Right-to-left writing keeps its marks.
            ("\u{5e9}\u{200f}!", TEXT_FIELDS),
        ] {
            assert_eq!(taken_by(text), taken, "{text:?}");
        }
    }

    #[test]
    fn text_is_kept_in_nfc_and_a_username_trimmed() {
        assert_eq!(Title::parse("Cafe\u{301}").unwrap().as_str(), "Caf\u{e9}");
        assert_eq!(
            Username::parse(" Ada Lovelace\n").unwrap().as_str(),
            "Ada Lovelace"
        );
    }

    #[test]
    fn a_refusal_names_the_character() {
        let refused = Title::parse("\u{202e}txt.exe").unwrap_err();
        assert!(refused.reason.contains("U+202E"), "{}", refused.reason);
    }

    #[test]
    fn errors_name_the_field() {
        let err = Title::parse("").unwrap_err();
        assert_eq!(err.field, "title");
    }
}
