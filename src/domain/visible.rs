//! What a person can see: the rule that text and ids must hold at least one character that
//! shows, shared by the text fields and the ids, with the JSON Schema pattern that says it.

use std::sync::LazyLock;

use unicode_general_category::get_general_category;

use super::pattern;

/// Letters, numbers, punctuation or symbols (Unicode general categories L, N, P, S) that
/// draw nothing: the Hangul fillers (letters by category, default-ignorable by use) and the
/// blank Braille pattern (a symbol, drawn as a space).
const BLANK_GRAPHICS: [char; 5] = ['\u{115F}', '\u{1160}', '\u{3164}', '\u{FFA0}', '\u{2800}'];

/// Whether `c` shows: a letter, number, punctuation mark or symbol that is not blank.
/// Whitespace, control and format characters (zero-width spaces, joiners, direction marks),
/// unassigned code points and combining marks (which show only on another character) do not.
pub fn shows(c: char) -> bool {
    // The abbreviation's first letter is the category's group (`Lu` is a letter, `Sm` a
    // symbol, `Mn` a mark, `Cf` a format character).
    let group = get_general_category(c).abbreviation().as_bytes()[0];
    matches!(group, b'L' | b'N' | b'P' | b'S') && !BLANK_GRAPHICS.contains(&c)
}

/// Whether `text` has a character that [`shows`].
pub(crate) fn has_visible(text: &str) -> bool {
    text.chars().any(shows)
}

/// A lookahead for the start of a JSON Schema pattern: somewhere ahead is a character that
/// [`shows`] (computed once: the class lists every range of them).
pub(crate) fn lookahead() -> &'static str {
    static LOOKAHEAD: LazyLock<String> =
        LazyLock::new(|| format!(r"(?=[\s\S]*{})", pattern::class(shows)));
    &LOOKAHEAD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_digits_punctuation_and_symbols_show_and_the_rest_does_not() {
        for c in ['a', 'é', '漢', '7', '.', '😀', '€'] {
            assert!(shows(c), "{c:?}");
        }
        for c in [
            ' ',
            '\u{200B}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{202E}',
            '\u{0301}',
            '\u{3164}',
            '\u{2800}',
            '\u{00A0}',
            '\u{E0041}',
        ] {
            assert!(!shows(c), "{c:?}");
        }
    }
}
