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
/// (ECMA-262 has no escape for them that Python reads, and vice versa). Written as the
/// complement (`[^...]` of the characters `member` refuses) when those are fewer: tools that
/// generate text from a pattern (hypothesis, which schemathesis uses) list a class's code
/// points one by one, and a class of a million takes them minutes.
///
/// `member` must answer every character beyond the Basic Multilingual Plane by its general
/// category alone (the rules of text and ids do: the characters they single out are all in
/// the BMP), so that it is asked once per run of one category there rather than once per
/// code point: a million questions would take seconds in a debug build.
pub(super) fn class(member: impl Fn(char) -> bool) -> String {
    let taken = ranges(member);
    let refused = complement(&taken);
    let size = |runs: &[(char, char)]| -> u32 {
        runs.iter()
            .map(|&(first, last)| u32::from(last) - u32::from(first) + 1)
            .sum()
    };
    let (open, runs) = if size(&refused) < size(&taken) {
        ("[^", refused)
    } else {
        ("[", taken)
    };
    let mut text = String::from(open);
    for (first, last) in runs {
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

/// The runs of the characters that `runs` (in order, none spanning the surrogates) leave out.
fn complement(runs: &[(char, char)]) -> Vec<(char, char)> {
    let mut gaps = Vec::new();
    let mut next = 0u32;
    let ends = runs
        .iter()
        .map(|&(first, last)| (u32::from(first), u32::from(last) + 1))
        .chain([(u32::from(char::MAX) + 1, u32::from(char::MAX) + 1)]);
    for (first, after) in ends {
        // A gap across the surrogates is two: before them and after them.
        for (low, high) in [(next, first.min(0xD800)), (next.max(0xE000), first)] {
            if let (Some(low), Some(high)) =
                (char::from_u32(low), char::from_u32(high.wrapping_sub(1)))
                && low <= high
            {
                gaps.push((low, high));
            }
        }
        next = after;
    }
    gaps
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
    fn the_complement_of_runs_is_every_other_character() {
        let runs = ranges(|c| c.is_ascii_digit() || c == '\u{D7FF}');
        assert_eq!(
            complement(&runs),
            [('\0', '/'), (':', '\u{D7FE}'), ('\u{E000}', char::MAX)]
        );
        assert_eq!(
            complement(&[]),
            [('\0', '\u{D7FF}'), ('\u{E000}', char::MAX)]
        );
    }

    #[test]
    fn classes_are_ranges_of_escapes_and_astral_characters_as_themselves() {
        assert_eq!(class(|c| c.is_ascii_digit()), r"[\u0030-\u0039]");
        assert_eq!(class(|c| c == 'a' || c == 'b'), r"[\u0061\u0062]");
        assert_eq!(class(|c| c != '/'), r"[^\u002F]");
        // Beyond the BMP, by category: the format characters there, as themselves.
        let astral_format =
            |c: char| u32::from(c) > 0xFFFF && get_general_category(c) == GeneralCategory::Format;
        let formats = class(astral_format);
        assert!(formats.starts_with("[\u{110BD}\u{110CD}"), "{formats}");
        assert!(
            formats.ends_with("\u{E0001}\u{E0020}-\u{E007F}]"),
            "{formats}"
        );
        // No range spans the surrogates, which Python's strings can hold.
        assert_eq!(
            class(|c| ('\u{D7FF}'..='\u{E000}').contains(&c)),
            r"[\uD7FF\uE000]"
        );
    }
}
