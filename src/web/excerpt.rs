//! A post's text as a reader sees it, for the places that show plain text: list entries, feed
//! summaries and meta descriptions. Made from the Markdown's events (text, code, link text),
//! never from its syntax: no `#`, `|`, `*`, backticks, link targets or HTML. Cut at a word
//! boundary, with an ellipsis when cut.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::domain::SHORT_CONTENT_CHARS;

/// Longest excerpt of a list entry or a feed summary, in characters (Unicode scalar values).
pub const LIST_EXCERPT_CHARS: usize = 200;
/// Longest meta description: search engines show about this much.
pub const DESCRIPTION_CHARS: usize = 160;

const ELLIPSIS: char = '…';

/// The plain text of `markdown`, its blocks joined by spaces, cut to at most `max` characters
/// (the ellipsis included) at a word boundary.
pub fn excerpt(markdown: &str, max: usize) -> String {
    cut_at_word(&plain_text(markdown), max)
}

/// The excerpt of a post from its short form (the lists' and the feed's copy, its content cut
/// to [`SHORT_CONTENT_CHARS`]): as [`excerpt`], except that a short form cut from a longer
/// post loses its last, perhaps cut, word and always ends with the ellipsis.
pub fn excerpt_of_short(short_content: &str, max: usize) -> String {
    if short_content.chars().count() < SHORT_CONTENT_CHARS {
        return excerpt(short_content, max);
    }
    let text = plain_text(short_content);
    let whole_words = match text.rfind(' ') {
        Some(space) => &text[..space],
        None => text.as_str(),
    };
    let mut cut = cut_at_word(whole_words, max);
    if !cut.ends_with(ELLIPSIS) {
        cut = cut
            .trim_end_matches(|c: char| c == ' ' || c.is_ascii_punctuation())
            .to_owned();
        cut.push(ELLIPSIS);
    }
    cut
}

/// What a reader reads of `markdown`: the text of its paragraphs, headings, list items, table
/// cells, quotes and code, with the white space between blocks and inside it folded to one
/// space; raw HTML and images' targets are left out (an image counts by its alt text).
fn plain_text(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut text = String::with_capacity(markdown.len());
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Text(words) | Event::Code(words) => text.push_str(&words),
            Event::SoftBreak | Event::HardBreak | Event::Rule => text.push(' '),
            Event::Start(Tag::TableCell | Tag::Item) => text.push(' '),
            Event::End(end) if ends_a_block(&end) => text.push(' '),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn ends_a_block(end: &TagEnd) -> bool {
    matches!(
        end,
        TagEnd::Paragraph
            | TagEnd::Heading(_)
            | TagEnd::BlockQuote(_)
            | TagEnd::CodeBlock
            | TagEnd::Item
            | TagEnd::TableCell
            | TagEnd::TableRow
            | TagEnd::TableHead
    )
}

/// `text` when it holds at most `max` characters; else its longest run of whole words that
/// leaves room for the ellipsis, and the ellipsis (a first word longer than that is cut).
fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let room = max.saturating_sub(1);
    let end = text
        .char_indices()
        .nth(room)
        .map_or(text.len(), |(at, _)| at);
    let kept = &text[..end];
    let whole_words = match kept.rfind(' ') {
        // The character after the cut starts a word: the last word kept is whole.
        _ if text[end..].starts_with(' ') => kept,
        Some(space) if space > 0 => &kept[..space],
        _ => kept,
    };
    let mut cut = whole_words
        .trim_end_matches(|c: char| c == ' ' || c.is_ascii_punctuation())
        .to_owned();
    cut.push(ELLIPSIS);
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_syntax_does_not_show() {
        let markdown = "# Heading\n\nSome *emphasis*, `code` and a [link](https://example.com).\n\n\
                        | Page | What it shows |\n|---|---|\n| front | the feed |\n\n\
                        ```rust\nfn main() {}\n```\n\n> quoted\n\n- one\n- two\n\n<b>raw</b> html";
        let text = excerpt(markdown, 1_000);
        assert_eq!(
            text,
            "Heading Some emphasis, code and a link. Page What it shows front the feed \
             fn main() {} quoted one two raw html"
        );
        for syntax in ["#", "|", "*", "`", "](", "<b>", "https://"] {
            assert!(!text.contains(syntax), "{syntax:?} in {text:?}");
        }
    }

    #[test]
    fn a_long_text_is_cut_at_a_word_with_an_ellipsis() {
        let text = excerpt(&"lorem ipsum ".repeat(50), 40);
        assert!(text.chars().count() <= 40, "{text}");
        assert!(
            text.ends_with("ipsum…") || text.ends_with("lorem…"),
            "{text}"
        );
        assert_eq!(excerpt("short enough", 40), "short enough");
    }

    #[test]
    fn a_short_form_cut_from_a_longer_post_ends_with_an_ellipsis() {
        let long = "word ".repeat(100);
        let short: String = long.chars().take(SHORT_CONTENT_CHARS).collect();
        let text = excerpt_of_short(&short, 1_000);
        assert!(text.ends_with("word…"), "{text}");
        assert_eq!(excerpt_of_short("**whole** post", 100), "whole post");
    }

    #[test]
    fn the_cut_never_splits_a_character_or_a_long_word() {
        let text = excerpt(&"é".repeat(300), 10);
        assert_eq!(text.chars().count(), 10);
        assert!(text.ends_with(ELLIPSIS));
        assert_eq!(excerpt("exactly ten", 11), "exactly ten");
        assert_eq!(excerpt("two words here", 10), "two words…");
    }
}
