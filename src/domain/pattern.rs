//! JSON Schema patterns in the part of regular-expression syntax that ECMA-262 (what JSON
//! Schema names), Python's `re` (what schemathesis, hypothesis and openapi-python-client
//! compile), Java and Rust read alike: character classes spelled out as code-point ranges,
//! never as Unicode property escapes (`\p{L}`), which Python's `re` cannot compile.
//!
//! The classes are computed from the same predicates that the parsing rules use, so a
//! pattern says exactly what `parse` takes.

use std::sync::LazyLock;

use unicode_general_category::{GeneralCategory, get_general_category};

/// A character class of the characters that `member` takes: `[...]`, ranges of the Basic
/// Multilingual Plane as `\uXXXX` escapes and those beyond it as the characters themselves
/// (ECMA-262 has no escape for them that Python reads, and vice versa). With `negated`, the
/// class is written as `[^...]` of the characters `member` refuses: shorter when it refuses
/// few.
///
/// `member` must answer every character beyond the Basic Multilingual Plane by its general
/// category alone (the rules of text and ids do: the characters they single out are all in
/// the BMP), so that it is asked once per run of one category there rather than once per
/// code point: a million questions would take seconds in a debug build.
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

/// The runs of characters beyond the Basic Multilingual Plane that share a general
/// category, first and last of each (computed once).
fn astral_runs() -> &'static [(char, char)] {
    static RUNS: LazyLock<Vec<(char, char)>> = LazyLock::new(|| {
        let mut runs: Vec<(char, char, GeneralCategory)> = Vec::new();
        for c in '\u{10000}'..=char::MAX {
            let category = get_general_category(c);
            match runs.last_mut() {
                Some((_, last, run)) if *run == category => *last = c,
                _ => runs.push((c, c, category)),
            }
        }
        runs.into_iter()
            .map(|(first, last, _)| (first, last))
            .collect()
    });
    &RUNS
}

/// The runs of consecutive characters that `member` takes, first and last of each.
fn ranges(member: impl Fn(char) -> bool) -> Vec<(char, char)> {
    let mut runs: Vec<(char, char)> = Vec::new();
    let mut take = |first: char, last: char| match runs.last_mut() {
        // A run never spans the surrogates: Python's strings can hold them.
        Some((_, end)) if u32::from(*end) + 1 == u32::from(first) => *end = last,
        _ => runs.push((first, last)),
    };
    for c in ('\0'..='\u{FFFF}').filter(|&c| member(c)) {
        take(c, c);
    }
    for &(first, last) in astral_runs() {
        if member(first) {
            take(first, last);
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

    /// Asked by run, a category's characters beyond the BMP are taken or left together, as
    /// asking each one would.
    #[test]
    fn runs_beyond_the_basic_plane_answer_as_each_character_would() {
        let format = |c: char| get_general_category(c) == GeneralCategory::Format;
        let by_run = ranges(format);
        let one_by_one: Vec<char> = ('\u{10000}'..=char::MAX).filter(|&c| format(c)).collect();
        let from_runs: Vec<char> = by_run
            .iter()
            .filter(|(first, _)| u32::from(*first) > 0xFFFF)
            .flat_map(|&(first, last)| first..=last)
            .collect();
        assert_eq!(from_runs, one_by_one);
    }

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
