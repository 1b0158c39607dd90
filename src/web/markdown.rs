//! A post's content as HTML: CommonMark (with tables and strikethrough) rendered by
//! pulldown-cmark, then cleaned by ammonia's allowlist, so that nothing a writer typed can
//! run as script: no `<script>`, no event attributes, no `javascript:` or `data:` URLs.
//! What is stored stays the Markdown the writer sent; this runs when a page shows it.
//!
//! Images: a Markdown image of one of the blog's own images (`/images/{id}`) becomes an
//! `<img>` with its alt text, its size, lazy loading and its renditions (`srcset`); one whose
//! image was deleted shows its alt text; an image of another origin is never fetched by a
//! reader's browser (the pages' policy is `img-src 'self'`) and becomes a link to it, with its
//! alt text.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::sync::{Arc, LazyLock};

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};
use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::images::{ImageId, ImageItem};

/// The classes a table column's alignment becomes ([`aligned_by_class`]).
const ALIGN_CLASSES: [&str; 3] = ["align-left", "align-center", "align-right"];

/// How wide a post's column is at most: what `sizes` tells the browser.
const IMAGE_SIZES: &str = "(max-width: 48rem) 100vw, 48rem";

/// The id of the blog's own image a URL names: a path (on this site) `/images/{id}`, under a
/// tenant's prefix or not, perhaps naming a rendition (`/images/{id}/{width}`).
pub fn own_image_id(url: &str) -> Option<ImageId> {
    if !url.starts_with('/') || url.starts_with("//") {
        return None;
    }
    let path = url.split(['?', '#']).next().unwrap_or_default();
    let path = match path.strip_prefix("/tenants/") {
        Some(rest) => &rest[rest.find('/')?..],
        None => path,
    };
    let rest = path.strip_prefix("/images/")?;
    let id = match rest.split_once('/') {
        Some((id, width)) if width.parse::<u32>().is_ok() => id,
        Some(_) => return None,
        None => rest,
    };
    ImageId::parse(id).ok()
}

/// The ids of the blog's own images a post's Markdown shows.
pub fn image_ids(markdown: &str) -> Vec<ImageId> {
    let mut ids: Vec<ImageId> = Parser::new_ext(markdown, options())
        .filter_map(|event| match event {
            Event::Start(Tag::Image { dest_url, .. }) => own_image_id(&dest_url),
            _ => None,
        })
        .collect();
    ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    ids.dedup();
    ids
}

/// Whether the Markdown shows an image of another origin (which readers get as a link).
pub fn shows_foreign_images(markdown: &str) -> bool {
    Parser::new_ext(markdown, options()).any(|event| {
        matches!(event, Event::Start(Tag::Image { dest_url, .. }) if own_image_id(&dest_url).is_none())
    })
}

/// The images a post shows that are there, and where the blog serves them (its base path:
/// empty, or a tenant's prefix).
#[derive(Debug, Clone, Default)]
pub struct PostImages {
    pub base: String,
    pub found: HashMap<ImageId, ImageItem>,
}

impl PostImages {
    /// What a rendering depends on: the base and which images are there.
    fn signature(&self) -> String {
        let mut ids: Vec<&str> = self.found.keys().map(ImageId::as_str).collect();
        ids.sort_unstable();
        format!("{}|{}", self.base, ids.join(","))
    }

    fn img(&self, item: &ImageItem, alt: &str) -> String {
        let src = format!("{}/images/{}", self.base, item.id);
        let mut srcset = String::new();
        for rendition in &item.renditions {
            let _ = write!(srcset, "{src}/{} {}w, ", rendition.width, rendition.width);
        }
        let _ = write!(srcset, "{src} {}w", item.width);
        format!(
            r#"<img src="{src}" alt="{}" width="{}" height="{}" loading="lazy" srcset="{srcset}" sizes="{IMAGE_SIZES}">"#,
            escape(alt),
            item.width,
            item.height,
        )
    }
}

fn escape(text: &str) -> String {
    escape_markup(text, "&#39;")
}

/// `text` with the five characters that markup gives a meaning escaped, for character data
/// and attribute values; `'` becomes `apostrophe` (`&#39;` in HTML, `&apos;` in XML).
pub(super) fn escape_markup(text: &str, apostrophe: &str) -> String {
    replace_chars(text, |c| match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some(apostrophe),
        _ => None,
    })
}

/// `text` with each character that `replacement` names written as what it says.
pub(super) fn replace_chars<'a>(
    text: &str,
    replacement: impl Fn(char) -> Option<&'a str>,
) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match replacement(c) {
            Some(replaced) => out.push_str(replaced),
            None => out.push(c),
        }
    }
    out
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH
}

/// Marks the place of the `n`th image in the HTML before it is cleaned: characters of Unicode's
/// private use area around a nonce drawn per process, which no writer can know to type.
fn placeholder(n: usize) -> String {
    static NONCE: LazyLock<String> = LazyLock::new(|| uuid::Uuid::new_v4().simple().to_string());
    format!("\u{E000}{}-{n}\u{E001}", *NONCE)
}

/// The events of `markdown` with each image replaced by what a page shows of it: its own
/// images as placeholders, whose `<img>` (the second value) goes in after cleaning.
fn with_images<'a>(markdown: &'a str, images: &PostImages) -> (Vec<Event<'a>>, Vec<String>) {
    let mut out = Vec::new();
    let mut shown_images = Vec::new();
    let mut events = Parser::new_ext(markdown, options());
    while let Some(event) = events.next() {
        let Event::Start(Tag::Image { dest_url, .. }) = event else {
            out.push(event);
            continue;
        };
        let mut alt = String::new();
        for inner in events.by_ref() {
            match inner {
                Event::End(TagEnd::Image) => break,
                Event::Text(text) | Event::Code(text) => alt.push_str(&text),
                Event::SoftBreak | Event::HardBreak => alt.push(' '),
                _ => {}
            }
        }
        let shown = match own_image_id(&dest_url) {
            Some(id) => match images.found.get(&id) {
                Some(item) => {
                    shown_images.push(images.img(item, &alt));
                    Event::Text(CowStr::from(placeholder(shown_images.len() - 1)))
                }
                // A deleted image: its words stay.
                None => Event::Text(CowStr::from(alt)),
            },
            None => {
                let text = if alt.trim().is_empty() {
                    dest_url.to_string()
                } else {
                    alt
                };
                Event::Html(CowStr::from(format!(
                    r#"<a href="{}">{}</a>"#,
                    escape(&dest_url),
                    escape(&text)
                )))
            }
        };
        out.push(shown);
    }
    (out, shown_images)
}

/// How much rendered posts may hold, in bytes of Markdown and HTML together.
const RENDERED_BYTES: u64 = 16 * 1024 * 1024;

/// About how many posts that is (the cache sizes its tables by it).
const RENDERED_POSTS: usize = 2_000;

/// A post's HTML and the Markdown it was made from.
struct Rendered {
    markdown: String,
    /// Which of its images were there ([`PostImages`]'s signature).
    images: String,
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
    /// The post `post_id`'s `markdown` as sanitised HTML with `images`, the post's own images
    /// that are there: rendered once per content and per set of images found (a deleted
    /// image renders anew).
    pub fn post_html(&self, post_id: &str, markdown: &str, images: &PostImages) -> Arc<str> {
        let signature = images.signature();
        if let Some(rendered) = self.rendered.get(post_id)
            && rendered.markdown == markdown
            && rendered.images == signature
        {
            return Arc::clone(&rendered.html);
        }
        let html: Arc<str> = self.to_safe_html_with(markdown, images).into();
        let rendered = Rendered {
            markdown: markdown.to_owned(),
            images: signature,
            html: Arc::clone(&html),
        };
        self.rendered.insert(post_id.to_owned(), Arc::new(rendered));
        html
    }

    /// `markdown` as sanitised HTML, ready to be put in a page as it is, without images of
    /// the blog's own (each shows its alt text).
    pub fn to_safe_html(&self, markdown: &str) -> String {
        self.to_safe_html_with(markdown, &PostImages::default())
    }

    /// `markdown` as sanitised HTML with `images`, the post's own images that are there. Its
    /// headings are one level down (the page's title is its only `<h1>`: a post's `#` is an
    /// `<h2>`), and a table column's alignment is a class (`align-left`, `align-center`,
    /// `align-right`) that the stylesheet aligns, since the pages' policy allows no inline
    /// style.
    pub fn to_safe_html_with(&self, markdown: &str, images: &PostImages) -> String {
        let (events, shown_images) = with_images(markdown, images);
        let events = events.into_iter().map(|event| match event {
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
        let mut clean = self
            .sanitiser
            .clean(&aligned_by_class(&unsafe_html))
            .to_string();
        for (n, img) in shown_images.iter().enumerate() {
            clean = clean.replacen(&placeholder(n), img, 1);
        }
        clean
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
        // No image a writer types as HTML loads (the pages' policy would refuse another
        // origin's anyway); the blog's own images are put in after cleaning ([`with_images`]).
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
    use super::{ALIGN_CLASSES, PostImages, RenderedPosts, image_ids};
    use crate::images::{ImageId, ImageItem};

    fn item(id: &ImageId) -> ImageItem {
        serde_json::from_value(serde_json::json!({
            "id": id.as_str(), "type": "image", "userId": "ada", "contentType": "image/png",
            "bytes": 10, "width": 1000, "height": 500, "storedBytes": 30,
            "renditions": [{"width": 480, "height": 240}, {"width": 960, "height": 480}],
            "creationDate": "2026-11-27T07:00:00.0000000Z"
        }))
        .unwrap()
    }

    #[test]
    fn the_blogs_own_images_show_sized_lazy_and_with_renditions() {
        let (there, gone) = (ImageId::generate(), ImageId::generate());
        let markdown = format!(
            "![a \"cat\"](/images/{there}) ![the dog](/tenants/t/images/{gone}) ![icon](https://elsewhere.example/i.png) ![](https://elsewhere.example/j.png)"
        );
        assert_eq!(image_ids(&markdown).len(), 2);
        let images = PostImages {
            base: "/tenants/t".into(),
            found: [(there.clone(), item(&there))].into(),
        };
        let posts = RenderedPosts::default();
        let html = posts.to_safe_html_with(&markdown, &images);
        let src = format!("/tenants/t/images/{there}");
        for expected in [
            format!(r#"src="{src}""#),
            r#"alt="a &quot;cat&quot;""#.to_owned(),
            r#"width="1000""#.to_owned(),
            r#"height="500""#.to_owned(),
            r#"loading="lazy""#.to_owned(),
            format!(r#"srcset="{src}/480 480w, {src}/960 960w, {src} 1000w""#),
            "sizes=".to_owned(),
            "the dog".to_owned(),
            r#"<a href="https://elsewhere.example/i.png" rel="nofollow ugc">icon</a>"#.to_owned(),
            r#">https://elsewhere.example/j.png</a>"#.to_owned(),
        ] {
            assert!(html.contains(&expected), "{expected} in {html}");
        }
        assert_eq!(html.matches("<img").count(), 1, "{html}");
        let first = posts.post_html("imaged-post", &markdown, &images);
        let deleted = posts.post_html(
            "imaged-post",
            &markdown,
            &PostImages {
                base: "/tenants/t".into(),
                ..Default::default()
            },
        );
        assert!(
            first.contains("<img") && !deleted.contains("<img"),
            "{deleted}"
        );
    }

    fn to_safe_html(markdown: &str) -> String {
        RenderedPosts::default().to_safe_html(markdown)
    }

    #[test]
    fn a_post_renders_once_per_content() {
        let posts = RenderedPosts::default();
        let none = PostImages::default();
        let post_html = |post_id: &str, markdown: &str| posts.post_html(post_id, markdown, &none);
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
            "<img src=\"https://evil.example/x.png\" onerror=alert(1)>",
            "<img src=\"/images/0b6f4f7e-2d55-4c5c-9a55-37c0f6a1d4b2\">",
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
