//! The readable part of a post's URL, made from its title: `/posts/{postId}/{slug}`. The id
//! alone finds the post; the slug is there for the reader (and a search engine), so any slug
//! is accepted on the way in and the page answers with its canonical one.

use std::fmt;

/// A slug is cut at a word boundary to at most this many characters.
pub const MAX_SLUG_CHARS: usize = 80;

/// What a title with nothing a slug can carry (no letter or digit, even transliterated) gives.
const FALLBACK: &str = "post";

/// Lower-case ASCII words joined by `-`: the title transliterated to ASCII (`Crème brûlée` →
/// `creme-brulee`), every other character a separator, cut to [`MAX_SLUG_CHARS`] at a word
/// boundary.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Slug(String);

impl Slug {
    /// The slug of `title`: the same title always gives the same slug.
    pub fn of_title(title: &str) -> Self {
        let words = slug::slugify(title);
        let cut = cut_at_word(&words, MAX_SLUG_CHARS);
        if cut.is_empty() {
            Self(FALLBACK.to_owned())
        } else {
            Self(cut.to_owned())
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The longest prefix of `words` (ASCII words joined by `-`) of at most `max` characters that
/// ends at the end of a word; a first word longer than `max` is cut inside it.
fn cut_at_word(words: &str, max: usize) -> &str {
    if words.len() <= max {
        return words;
    }
    match words[..=max].rfind('-') {
        Some(0) | None => &words[..max],
        Some(end) => &words[..end],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_becomes_lower_case_ascii_words_joined_by_dashes() {
        assert_eq!(Slug::of_title("Hello, World!").as_str(), "hello-world");
        assert_eq!(
            Slug::of_title("  Crème brûlée: a how-to  ").as_str(),
            "creme-brulee-a-how-to"
        );
        assert_eq!(
            Slug::of_title("Rust 2024 & Cosmos DB").as_str(),
            "rust-2024-cosmos-db"
        );
    }

    #[test]
    fn a_title_with_nothing_to_carry_falls_back() {
        assert_eq!(Slug::of_title("!!! ??? ---").as_str(), FALLBACK);
        assert_eq!(Slug::of_title("").as_str(), FALLBACK);
    }

    #[test]
    fn a_long_title_is_cut_at_a_word_boundary() {
        let title = "word ".repeat(40);
        let slug = Slug::of_title(&title);
        assert!(slug.as_str().len() <= MAX_SLUG_CHARS, "{slug}");
        assert!(slug.as_str().ends_with("word"), "{slug}");
        assert!(!slug.as_str().ends_with('-'), "{slug}");
        let one_word = "a".repeat(200);
        assert_eq!(Slug::of_title(&one_word).as_str().len(), MAX_SLUG_CHARS);
    }

    #[test]
    fn every_slug_is_lower_case_ascii_words() {
        for title in [
            "Ünïcödé",
            "日本語のタイトル",
            "Ωmega — Ψ",
            "a/b?c#d",
            "tab\tand\nnewline",
        ] {
            let slug = Slug::of_title(title);
            assert!(
                slug.as_str().split('-').all(|word| !word.is_empty()
                    && word
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())),
                "{title:?} -> {slug}"
            );
        }
    }
}
