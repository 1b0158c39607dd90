//! A post's content as HTML: CommonMark (with tables and strikethrough) rendered by
//! pulldown-cmark, then cleaned by ammonia's allowlist, so that nothing a writer typed can
//! run as script: no `<script>`, no event attributes, no `javascript:` or `data:` URLs.
//! What is stored stays the Markdown the writer sent; this runs when a page shows it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};
use quick_cache::Weighter;
use quick_cache::sync::Cache;

/// The classes a table column's alignment becomes ([`aligned_by_class`]).
const ALIGN_CLASSES: [&str; 3] = ["align-left", "align-center", "align-right"];

/// How much rendered posts may hold, in bytes of Markdown and HTML together.
const RENDERED_BYTES: u64 = 16 * 1024 * 1024;

/// About how many posts that is (the cache sizes its tables by it).
const RENDERED_POSTS: usize = 2_000;

/// A post's HTML and the Markdown it was made from.
struct Rendered {
    markdown: String,
    html: Arc<str>,
}

#[derive(Clone)]
struct BySize;

impl Weighter<String, Arc<Rendered>> for BySize {
    fn weight(&self, post_id: &String, rendered: &Arc<Rendered>) -> u64 {
        (post_id.len() + rendered.markdown.len() + rendered.html.len()) as u64
    }
}

/// Posts rendered lately, by post id. Rendering and sanitising is most of a post page's work
/// and a post's content seldom changes, so each is done once per content: an entry serves
/// only the very Markdown it was made from (an edited post renders anew, and two tenants'
/// posts of one id never share HTML). Bounded by size, least recently used first out.
pub struct RenderedPosts {
    sanitiser: ammonia::Builder<'static>,
    rendered: Cache<String, Arc<Rendered>, BySize>,
}

impl Default for RenderedPosts {
    fn default() -> Self {
        Self {
            sanitiser: sanitiser(),
            rendered: Cache::with_weighter(RENDERED_POSTS, RENDERED_BYTES, BySize),
        }
    }
}

impl RenderedPosts {
    /// The post `post_id`'s `markdown` as sanitised HTML, rendered once per content.
    pub fn post_html(&self, post_id: &str, markdown: &str) -> Arc<str> {
        if let Some(rendered) = self.rendered.get(post_id)
            && rendered.markdown == markdown
        {
            return Arc::clone(&rendered.html);
        }
        let html: Arc<str> = self.to_safe_html(markdown).into();
        let rendered = Rendered {
            markdown: markdown.to_owned(),
            html: Arc::clone(&html),
        };
        self.rendered.insert(post_id.to_owned(), Arc::new(rendered));
        html
    }

    /// `markdown` as sanitised HTML, ready to be put in a page as it is. Its headings are one
    /// level down (the page's title is its only `<h1>`: a post's `#` is an `<h2>`), and a
    /// table column's alignment is a class (`align-left`, `align-center`, `align-right`) that
    /// the stylesheet aligns, since the pages' policy allows no inline style.
    pub fn to_safe_html(&self, markdown: &str) -> String {
        let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
        let events = Parser::new_ext(markdown, options).map(|event| match event {
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => Event::Start(Tag::Heading {
                level: one_level_down(level),
                id,
                classes,
                attrs,
            }),
            Event::End(TagEnd::Heading(level)) => {
                Event::End(TagEnd::Heading(one_level_down(level)))
            }
            other => other,
        });
        let mut unsafe_html = String::with_capacity(markdown.len() * 3 / 2);
        html::push_html(&mut unsafe_html, events);
        self.sanitiser
            .clean(&aligned_by_class(&unsafe_html))
            .to_string()
    }
}

/// The sanitiser: its allowlists are fixed.
fn sanitiser() -> ammonia::Builder<'static> {
    let mut builder = ammonia::Builder::default();
    builder
        // Every link in a post is the writer's: search engines must not count it as the
        // site's endorsement (RFC-style `ugc`, Google's "user generated content").
        .link_rel(Some("nofollow ugc"))
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        // Images would load from other origins, which the pages' policy forbids anyway.
        .rm_tags(["img"])
        // A table column's alignment ([`aligned_by_class`]).
        .allowed_classes(HashMap::from([
            ("th", HashSet::from(ALIGN_CLASSES)),
            ("td", HashSet::from(ALIGN_CLASSES)),
        ]));
    builder
}

fn one_level_down(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H2,
        HeadingLevel::H2 => HeadingLevel::H3,
        HeadingLevel::H3 => HeadingLevel::H4,
        HeadingLevel::H4 => HeadingLevel::H5,
        HeadingLevel::H5 | HeadingLevel::H6 => HeadingLevel::H6,
    }
}

/// The alignment pulldown-cmark writes on a table cell (an inline style) as the class the
/// sanitiser keeps. Only the renderer writes these exact bytes: a writer's text has its `"`
/// escaped, and a writer's own HTML with the same attribute is aligned the same way.
fn aligned_by_class(html: &str) -> String {
    ALIGNMENTS
        .iter()
        .fold(html.to_owned(), |html, (style, class)| {
            html.replace(style, class)
        })
}

const ALIGNMENTS: [(&str, &str); 3] = [
    (r#" style="text-align: left">"#, r#" class="align-left">"#),
    (
        r#" style="text-align: center">"#,
        r#" class="align-center">"#,
    ),
    (r#" style="text-align: right">"#, r#" class="align-right">"#),
];

#[cfg(test)]
mod tests {
    use super::{ALIGN_CLASSES, RenderedPosts};

    fn to_safe_html(markdown: &str) -> String {
        RenderedPosts::default().to_safe_html(markdown)
    }

    #[test]
    fn a_post_renders_once_per_content() {
        let posts = RenderedPosts::default();
        let post_html = |post_id: &str, markdown: &str| posts.post_html(post_id, markdown);
        let first = post_html("cached-post", "**one**");
        assert!(first.contains("<strong>one</strong>"), "{first}");
        let again = post_html("cached-post", "**one**");
        assert!(
            std::sync::Arc::ptr_eq(&first, &again),
            "served from the cache"
        );
        let edited = post_html("cached-post", "*two*");
        assert!(
            edited.contains("<em>two</em>") && !edited.contains("one"),
            "{edited}"
        );
    }

    #[test]
    fn renders_commonmark_with_tables_strikethrough_and_autolinks() {
        let html = to_safe_html(
            "# Title\n\n**bold** ~~gone~~ <https://example.org/a>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(html.contains("<h2>Title</h2>"), "{html}");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<del>gone</del>"), "{html}");
        assert!(html.contains("<table>"), "{html}");
        assert!(
            html.contains(r#"<a href="https://example.org/a" rel="nofollow ugc">"#),
            "{html}"
        );
    }

    #[test]
    fn headings_move_one_level_down_and_alignment_is_a_class() {
        let html = to_safe_html(
            "# One\n\n## Two\n\n###### Six\n\n| l | c | r | n |\n|:--|:-:|--:|---|\n| 1 | 2 | 3 | 4 |\n\n> quoted\n",
        );
        assert!(!html.contains("<h1"), "{html}");
        assert!(
            html.contains("<h2>One</h2>") && html.contains("<h3>Two</h3>"),
            "{html}"
        );
        assert!(html.contains("<h6>Six</h6>"), "{html}");
        for class in ALIGN_CLASSES {
            assert!(html.contains(&format!(r#"<td class="{class}">"#)), "{html}");
        }
        assert!(
            html.contains("<td>4</td>") && !html.contains("style="),
            "{html}"
        );
        assert!(html.contains("<blockquote>"), "{html}");
        let styled = to_safe_html(r#"<td class="evil" style="color: red">x</td>"#);
        assert!(
            !styled.contains("evil") && !styled.contains("style="),
            "{styled}"
        );
    }

    #[test]
    fn nothing_that_runs_script_survives() {
        for hostile in [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "[click](javascript:alert(1))",
            "<a href=\"javascript:alert(1)\">x</a>",
            "<iframe src=\"https://evil.example\"></iframe>",
            "<svg onload=alert(1)></svg>",
            "[x](data:text/html;base64,PHNjcmlwdD4=)",
            "<p style=\"background:url(javascript:alert(1))\" onclick=\"alert(1)\">p</p>",
            "<form action=\"https://evil.example\"><button>go</button></form>",
        ] {
            let html = to_safe_html(hostile).to_lowercase();
            for banned in [
                "<script",
                "onerror",
                "onload",
                "onclick",
                "javascript:",
                "data:",
                "<iframe",
                "<svg",
                "style=",
                "<form",
                "<img",
            ] {
                assert!(!html.contains(banned), "{hostile:?} gave {html:?}");
            }
        }
    }
}
