//! Validated text fields. Lengths count Unicode scalar values (what a person sees as
//! characters in most scripts), never bytes.

use serde::Serialize;

use super::ValidationError;

fn bounded(
    field: &'static str,
    raw: &str,
    max_chars: usize,
    trim: bool,
) -> Result<String, ValidationError> {
    let text = if trim { raw.trim() } else { raw };
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
    ($(#[$doc:meta])* $name:ident, $field:literal, $max:literal, trim = $trim:literal) => {
        $(#[$doc])*
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
    };
}

text_type!(
    /// 1–64 characters after trimming surrounding whitespace.
    Username, "username", 64, trim = true
);
text_type!(
    /// 1–300 characters after trimming surrounding whitespace.
    Title, "title", 300, trim = true
);
text_type!(
    /// 1–100,000 characters, kept exactly as written (whitespace is the author's).
    PostContent, "content", 100_000, trim = false
);
text_type!(
    /// 1–10,000 characters, kept exactly as written.
    CommentContent, "content", 10_000, trim = false
);

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn errors_name_the_field() {
        let err = Title::parse("").unwrap_err();
        assert_eq!(err.field, "title");
    }
}
