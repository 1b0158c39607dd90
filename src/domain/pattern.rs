//! JSON Schema patterns in the part of regular-expression syntax that ECMA-262 (what JSON
//! Schema names), Python's `re` (what schemathesis, hypothesis and openapi-python-client
//! compile), Java and Rust read alike: character classes spelled out as code-point ranges,
//! never as Unicode property escapes (`\p{L}`), which Python's `re` cannot compile.
//!
//! The classes are computed from the same predicates that the parsing rules use, so a
//! pattern says exactly what `parse` takes.

/// A character class of the characters that `member` takes: `[...]`, ranges of the Basic
/// Multilingual Plane as `\uXXXX` escapes and those beyond it as the characters themselves
/// (ECMA-262 has no escape for them that Python reads, and vice versa). With `negated`, the
/// class is written as `[^...]` of the characters `member` refuses: shorter when it refuses
/// few.
pub(super) fn class(member: impl Fn(char) -> bool, negated: bool) -> String {
    let mut text = String::from(if negated { "[^" } else { "[" });
    for (first, last) in ranges(|c| member(c) != negated) {
        text.push_str(&escaped(first));
        if last != first {
            if u32::from(last) > u32::from(first) + 1 {
                text.push('-');
            }
            text.push_str(&escaped(last));
        }
    }
    text.push(']');
    text
}

/// The runs of consecutive characters that `member` takes, first and last of each.
fn ranges(member: impl Fn(char) -> bool) -> Vec<(char, char)> {
    let mut runs: Vec<(char, char)> = Vec::new();
    for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
        if !member(c) {
            continue;
        }
        match runs.last_mut() {
            // A run never spans the surrogates: Python's strings can hold them.
            Some((_, last)) if u32::from(*last) + 1 == u32::from(c) => *last = c,
            _ => runs.push((c, c)),
        }
    }
    runs
}

/// One character of a class: `\uXXXX` in the Basic Multilingual Plane, itself beyond.
fn escaped(c: char) -> String {
    match u32::from(c) {
        code @ 0..=0xFFFF => format!("\\u{code:04X}"),
        _ => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_ranges_of_escapes_and_astral_characters_as_themselves() {
        assert_eq!(class(|c| c.is_ascii_digit(), false), r"[\u0030-\u0039]");
        assert_eq!(class(|c| c == 'a' || c == 'b', false), r"[\u0061\u0062]");
        assert_eq!(class(|c| c != '/', true), r"[^\u002F]");
        assert_eq!(
            class(|c| ('\u{1F600}'..='\u{1F602}').contains(&c), false),
            "[\u{1F600}-\u{1F602}]"
        );
        // No range spans the surrogates, which Python's strings can hold.
        assert_eq!(
            class(|c| ('\u{D7FF}'..='\u{E000}').contains(&c), false),
            r"[\uD7FF\uE000]"
        );
    }
}
