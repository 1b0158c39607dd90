//! What a post page tells search engines and social sites about itself, besides its canonical
//! link and meta description: Open Graph (`og:*`, `article:*`), a Twitter summary card (the
//! template writes both from [`OpenGraph`]) and a JSON-LD `BlogPosting` ([`json_ld`]).

use serde_json::json;

use super::markdown::replace_chars;

/// A post page's Open Graph and Twitter card: every value is text the template escapes.
pub struct OpenGraph {
    pub title: String,
    pub description: String,
    /// The post's canonical absolute URL.
    pub url: String,
    pub site_name: String,
    /// RFC 3339 dates: when it was first published and last changed.
    pub published_time: String,
    pub modified_time: String,
    /// One `article:tag` each.
    pub tags: Vec<String>,
}

/// What a post's structured data says about it.
pub struct Posting<'a> {
    pub og: &'a OpenGraph,
    pub author: &'a str,
    pub author_url: &'a str,
}

/// The post's JSON-LD `BlogPosting` (schema.org), ready to stand between
/// `<script type="application/ld+json">` and `</script>` as it is.
pub fn json_ld(posting: &Posting<'_>) -> String {
    let og = posting.og;
    let document = json!({
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": og.title,
        "description": og.description,
        "datePublished": og.published_time,
        "dateModified": og.modified_time,
        "author": {
            "@type": "Person",
            "name": posting.author,
            "url": posting.author_url,
        },
        "url": og.url,
        "mainEntityOfPage": og.url,
        "keywords": og.tags,
        "publisher": { "@type": "Organization", "name": og.site_name },
    });
    script_safe(&document.to_string())
}

/// JSON text that no HTML parser reads past: inside a `<script>` element the parser looks only
/// for `</script` (and `<!--`), so every `<` is written as the JSON escape `\u003c`, and `>` and
/// `&` likewise for good measure. The JSON means the same; a title holding `</script>` stays
/// text.
fn script_safe(json: &str) -> String {
    replace_chars(json, |c| match c {
        '<' => Some("\\u003c"),
        '>' => Some("\\u003e"),
        '&' => Some("\\u0026"),
        // Line and paragraph separators end lines in older script parsers.
        '\u{2028}' => Some("\\u2028"),
        '\u{2029}' => Some("\\u2029"),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_that_closes_the_script_stays_inside_the_json() {
        let og = OpenGraph {
            title: "</script><script>alert(1)</script> & <!--".to_owned(),
            description: "d".to_owned(),
            url: "https://blog.example/posts/p/t".to_owned(),
            site_name: "Blog".to_owned(),
            published_time: "2026-11-27T01:41:07.298Z".to_owned(),
            modified_time: "2026-11-27T01:41:07.298Z".to_owned(),
            tags: vec!["rust".to_owned()],
        };
        let text = json_ld(&Posting {
            og: &og,
            author: "Ada",
            author_url: "https://blog.example/users/ada",
        });
        assert!(!text.contains('<') && !text.contains('>'), "{text}");
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["headline"], og.title);
        assert_eq!(parsed["keywords"][0], "rust");
    }
}
