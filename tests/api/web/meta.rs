//! What search engines, feed readers and social sites read, through the pages and feeds:
//! readable post addresses and the `301`s to them, the canonical link and meta description of
//! every page, a post page's Open Graph tags, Twitter card and JSON-LD (parsed), the head's
//! feed links, plain-text excerpts, the blog's own title and description, and the Atom and
//! JSON feeds parsed by a maintained parser (`feed-rs`), agreeing with each other.

use cosmos_blog::store::Tenancy;
use serde_json::json;
use testkit::{Backend, content_type};

use super::*;

const PUBLIC: &str = "https://blog.example";
const BLOG_TITLE: &str = "Field Notes";
const BLOG_DESCRIPTION: &str = "Notes from the field, weekly.";

/// Markdown whose syntax must never reach an excerpt or a description.
const MARKDOWN: &str = "# Heading\n\nSome *emphasis* and `code`, a [link](https://example.org).\n\n\
                        | Page | What it shows |\n|:--|--:|\n| front | the feed |\n\n> a quote\n";

testkit::embedded_single_and_cosmos_multi!(
    post_pages_live_at_readable_addresses_and_others_move_there,
    every_page_has_a_canonical_link_and_a_description_and_post_pages_say_more,
    the_atom_and_json_feeds_parse_and_agree,
);

async fn spawn(backend: Backend, tenancy: Tenancy) -> TestApp {
    TestApp::spawn(backend)
        .layout(tenancy)
        .settings(|settings| {
            settings.site.public_url = Some(PUBLIC.to_owned());
            settings.site.title = Some(BLOG_TITLE.to_owned());
            settings.site.description = Some(BLOG_DESCRIPTION.to_owned());
        })
        .start()
        .await
}

/// The `301` a GET of `path` answers, and where it sends the browser.
async fn moved(reader: &Browser<'_>, path: &str) -> String {
    let response = reader.unfollowed(reader.page_url(path)).await;
    assert_eq!(response.status(), StatusCode::MOVED_PERMANENTLY, "{path}");
    location(&response)
}

fn canonical(page: &Html) -> String {
    let links = select(page, "link[rel=canonical]");
    assert_eq!(links.len(), 1, "one canonical link");
    links[0].value().attr("href").expect("href").to_owned()
}

fn meta_content(page: &Html, css: &str) -> String {
    select_attr(page, css, "content")
}

// ---- readable links --------------------------------------------------------------------------

async fn post_pages_live_at_readable_addresses_and_others_move_there(
    backend: Backend,
    tenancy: Tenancy,
) {
    let app = spawn(backend, tenancy).await;
    app.register("ada", "Ada").await;
    let post = post_in_feed(&app, "ada", "Hello, World: Crème brûlée!", MARKDOWN).await;
    let id = post["id"].as_str().unwrap().to_owned();
    let in_blog = format!("/posts/{id}/hello-world-creme-brulee");
    let readable = page_path(&app, &in_blog);
    let reader = Browser::new(&app, None);

    // The id alone, a wrong slug and a stale one move permanently, with their query.
    assert_eq!(moved(&reader, &format!("/posts/{id}")).await, readable);
    assert_eq!(
        moved(&reader, &format!("/posts/{id}/not-its-title?comments=abc")).await,
        format!("{readable}?comments=abc")
    );
    let (status, page) = reader.follow(&readable).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(canonical(&page), format!("{PUBLIC}{readable}"));
    assert_eq!(
        select_text(&page, "h1"),
        ["Hello, World: Crème brûlée!"],
        "the post's title is the page's one h1"
    );
    // The post's own forms and pages stay under its id.
    let (_, front) = reader.follow(&page_path(&app, "/")).await;
    assert_eq!(select_attr(&front, "ol.posts h2 a", "href"), readable);
    let likes = select_attr(&page, "#like-count", "href");
    assert_eq!(likes, page_path(&app, &format!("/posts/{id}/likes")));
    let (status, _) = reader.follow(&likes).await;
    assert_eq!(status, StatusCode::OK);

    // A new title: the old address moves to the new one.
    app.edited(
        "ada",
        &id,
        json!({"title": "Renamed post", "content": MARKDOWN}),
    )
    .await;
    let renamed = page_path(&app, &format!("/posts/{id}/renamed-post"));
    assert_eq!(moved(&reader, &in_blog).await, renamed);

    // The author edits through the form and lands on the canonical page.
    let mut ada = Browser::new(&app, Some("ada"));
    let (_, edit, _) = ada.get(&format!("/posts/{id}/edit")).await;
    assert_eq!(
        select_attr(&edit, "main form", "action"),
        page_path(&app, &format!("/posts/{id}/edit"))
    );
    let edited = ada
        .post(
            &format!("/posts/{id}/edit"),
            &[("title", "Édité again"), ("content", "text")],
        )
        .await;
    assert_eq!(
        location(&edited),
        page_path(&app, &format!("/posts/{id}/edite-again"))
    );

    // A title whose slug is one of the post's own pages does not hide that page.
    let likes_post = post_in_feed(&app, "ada", "Likes", "about likes").await;
    let likes_id = likes_post["id"].as_str().unwrap();
    assert_eq!(
        moved(&reader, &format!("/posts/{likes_id}")).await,
        page_path(&app, &format!("/posts/{likes_id}/likes-post"))
    );
    let (status, likes_page, _) = Browser::new(&app, None)
        .get(&format!("/posts/{likes_id}/likes"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        select_text(&likes_page, "h1")
            .concat()
            .starts_with("Likes of")
    );

    // An unknown post is not found, slug or not.
    for path in ["/posts/missing", "/posts/missing/some-title"] {
        let response = reader.fetch(reader.page_url(path)).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
}

// ---- head metadata ---------------------------------------------------------------------------

async fn every_page_has_a_canonical_link_and_a_description_and_post_pages_say_more(
    backend: Backend,
    tenancy: Tenancy,
) {
    let app = spawn(backend, tenancy).await;
    app.register("ada", "Ada").await;
    let hostile_title = "</script><script>alert(1)</script> & \"quotes\"";
    let post = post_in_feed(&app, "ada", hostile_title, MARKDOWN).await;
    let id = post["id"].as_str().unwrap().to_owned();
    let mut ada = Browser::new(&app, Some("ada"));
    let reader = Browser::new(&app, None);
    let to_post = moved(&reader, &format!("/posts/{id}")).await;
    let post_path = to_post
        .strip_prefix(&page_path(&app, ""))
        .unwrap()
        .to_owned();

    let mut pages = Vec::new();
    for path in [
        "/",
        post_path.as_str(),
        &format!("/posts/{id}/likes"),
        "/users/ada",
        "/write",
        "/account",
        "/posts/missing",
    ] {
        let (status, page, _) = ada.get(path).await;
        pages.push((path.to_owned(), status, page));
    }
    let signed_out = reader
        .fetch(format!("{}/sign-in?return=%2F", app.address))
        .await;
    pages.push((
        "/sign-in".to_owned(),
        signed_out.status(),
        parsed(signed_out).await,
    ));
    for (path, _, page) in &pages {
        let link = canonical(page);
        assert!(link.starts_with(&format!("{PUBLIC}/")), "{path}: {link}");
        assert!(!link.contains('?'), "{path}: {link}");
        let description = meta_content(page, "meta[name=description]");
        assert!(!description.trim().is_empty(), "{path}");
        let title = select_text(page, "title").concat();
        assert!(title.ends_with(BLOG_TITLE), "{path}: {title}");
        assert_eq!(select_text(page, "header .brand"), [BLOG_TITLE], "{path}");
        assert_eq!(
            select(page, "h1").len(),
            1,
            "{path}: one h1, whatever the post's Markdown holds"
        );
    }
    let page_of = |wanted: &str| {
        &pages
            .iter()
            .find(|(path, _, _)| path == wanted)
            .expect("fetched")
            .2
    };

    // The front page: the blog's description, its feeds in the head, plain excerpts.
    let front = page_of("/");
    assert_eq!(
        meta_content(front, "meta[name=description]"),
        BLOG_DESCRIPTION
    );
    assert_eq!(
        canonical(front),
        format!("{PUBLIC}{}", page_path(&app, "/"))
    );
    let feeds = |page: &Html| -> Vec<(String, String)> {
        select(page, "link[rel=alternate]")
            .iter()
            .map(|l| {
                let attr = |name| l.value().attr(name).unwrap_or_default().to_owned();
                (attr("type"), attr("href"))
            })
            .collect()
    };
    let blog_feeds = [
        ("application/atom+xml", "/feed.atom"),
        ("application/feed+json", "/feed.json"),
    ]
    .map(|(kind, path)| (kind.to_owned(), page_path(&app, path)));
    assert_eq!(feeds(front), blog_feeds);
    let excerpt = select_text(front, "ol.posts .short").concat();
    assert!(
        excerpt.starts_with("Heading Some emphasis and code, a link."),
        "{excerpt}"
    );
    for syntax in ["#", "|", "*", "`", "](", "https://"] {
        assert!(!excerpt.contains(syntax), "{syntax} in {excerpt}");
    }
    // The author page adds the author's feeds.
    let author_feeds = feeds(page_of("/users/ada"));
    assert_eq!(author_feeds[..2], blog_feeds);
    assert_eq!(
        author_feeds[2..],
        [
            (
                "application/atom+xml".to_owned(),
                page_path(&app, "/users/ada/feed.atom")
            ),
            (
                "application/feed+json".to_owned(),
                page_path(&app, "/users/ada/feed.json")
            ),
        ]
    );

    // The post page: Open Graph, the Twitter card and JSON-LD, escaped.
    let page = page_of(&post_path);
    let url = format!("{PUBLIC}{to_post}");
    assert_eq!(canonical(page), url);
    let description = meta_content(page, "meta[name=description]");
    assert!(
        description.starts_with("Heading Some emphasis"),
        "{description}"
    );
    assert!(
        !description.contains('|') && !description.contains('#'),
        "{description}"
    );
    for (property, expected) in [
        ("og:type", "article"),
        ("og:title", hostile_title),
        ("og:description", description.as_str()),
        ("og:url", url.as_str()),
        ("og:site_name", BLOG_TITLE),
    ] {
        assert_eq!(
            meta_content(page, &format!("meta[property=\"{property}\"]")),
            expected,
            "{property}"
        );
    }
    let published = meta_content(page, "meta[property=\"article:published_time\"]");
    let modified = meta_content(page, "meta[property=\"article:modified_time\"]");
    assert!(published.starts_with(&post["creationDate"].as_str().unwrap()[..19]));
    assert_eq!(published, modified, "never edited");
    assert!(
        select(page, "meta[property=\"article:tag\"]").is_empty(),
        "no tags"
    );
    assert_eq!(meta_content(page, "meta[name=\"twitter:card\"]"), "summary");
    assert_eq!(
        meta_content(page, "meta[name=\"twitter:title\"]"),
        hostile_title
    );

    let scripts = select(page, "script[type=\"application/ld+json\"]");
    assert_eq!(scripts.len(), 1);
    let ld: Value = serde_json::from_str(&scripts[0].text().collect::<String>()).expect("JSON-LD");
    assert_eq!(ld["@context"], "https://schema.org");
    assert_eq!(ld["@type"], "BlogPosting");
    assert_eq!(ld["headline"], hostile_title);
    assert_eq!(ld["url"], url.as_str());
    assert_eq!(ld["datePublished"], published.as_str());
    assert_eq!(ld["dateModified"], modified.as_str());
    assert_eq!(ld["author"]["name"], "Ada");
    assert_eq!(
        ld["author"]["url"],
        format!("{PUBLIC}{}", page_path(&app, "/users/ada"))
    );
    assert!(ld["keywords"].is_array());
    // The title never leaves the data block: no script runs but the site's own.
    assert_inert(&ada.html(&post_path).await);
    let csp = ada
        .fetch(ada.page_url(&post_path))
        .await
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");

    // The content: the title is the one h1; `#` is an h2; alignment is a class; the quote.
    assert_eq!(select_text(page, ".content h2"), ["Heading"]);
    assert_eq!(select(page, ".content td.align-left").len(), 1);
    assert_eq!(select(page, ".content td.align-right").len(), 1);
    assert_eq!(select_text(page, ".content blockquote p"), ["a quote"]);

    // An edit moves `article:modified_time` and `dateModified`.
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    app.edited(
        "ada",
        &id,
        json!({"title": hostile_title, "content": "edited"}),
    )
    .await;
    let (_, edited, _) = ada.get(&post_path).await;
    let after = meta_content(&edited, "meta[property=\"article:modified_time\"]");
    assert!(after > published, "{after} after {published}");
}

// ---- feeds -----------------------------------------------------------------------------------

async fn the_atom_and_json_feeds_parse_and_agree(backend: Backend, tenancy: Tenancy) {
    let app = spawn(backend, tenancy).await;
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let long = format!("{MARKDOWN}\n\n{}", "many words here ".repeat(30));
    let first = post_in_feed(&app, "ada", "First post", &long).await;
    let second = post_in_feed(&app, "bob", "Second post", "short *text*").await;
    let reader = Browser::new(&app, None);
    let post_url = |post: &Value, slug: &str| {
        format!(
            "{PUBLIC}{}",
            page_path(
                &app,
                &format!("/posts/{}/{slug}", post["id"].as_str().unwrap())
            )
        )
    };

    let get = |path: &'static str| {
        let url = reader.page_url(path);
        let reader = &reader;
        async move {
            let response = reader.fetch(url).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let kind = content_type(response.headers())
                .unwrap_or_default()
                .to_owned();
            (kind, response.bytes().await.expect("body"))
        }
    };
    let (atom_type, atom) = get("/feed.atom").await;
    let (json_type, json) = get("/feed.json").await;
    assert!(atom_type.starts_with("application/atom+xml"), "{atom_type}");
    assert!(
        json_type.starts_with("application/feed+json"),
        "{json_type}"
    );
    let atom = feed_rs::parser::parse(&atom[..]).expect("Atom parses");
    let json_feed = feed_rs::parser::parse(&json[..]).expect("JSON Feed parses");
    assert_eq!(atom.feed_type, feed_rs::model::FeedType::Atom);
    assert_eq!(json_feed.feed_type, feed_rs::model::FeedType::JSON);
    let raw: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(raw["version"], "https://jsonfeed.org/version/1.1");
    assert_eq!(raw["description"], BLOG_DESCRIPTION);
    assert_eq!(
        raw["feed_url"],
        format!("{PUBLIC}{}", page_path(&app, "/feed.json"))
    );
    assert_eq!(
        raw["home_page_url"],
        format!("{PUBLIC}{}", page_path(&app, "/"))
    );

    for feed in [&atom, &json_feed] {
        let title = feed.title.as_ref().expect("a title").content.clone();
        assert_eq!(title, format!("{BLOG_TITLE}: latest posts"));
        let links: Vec<_> = feed
            .entries
            .iter()
            .map(|e| e.links.first().expect("a link").href.clone())
            .collect();
        assert_eq!(
            links,
            [
                post_url(&second, "second-post"),
                post_url(&first, "first-post")
            ]
        );
        let summaries: Vec<_> = feed
            .entries
            .iter()
            .map(|e| e.summary.as_ref().expect("a summary").content.clone())
            .collect();
        assert_eq!(summaries[0], "short text");
        assert!(
            summaries[1].starts_with("Heading Some emphasis"),
            "{}",
            summaries[1]
        );
        assert!(summaries[1].ends_with('…'), "cut: {}", summaries[1]);
        for syntax in ["#", "|", "*", "`", "]("] {
            assert!(
                !summaries[1].contains(syntax),
                "{syntax} in {}",
                summaries[1]
            );
        }
        assert_eq!(feed.entries[1].authors[0].name.as_deref(), Some("Ada"));
        assert!(feed.entries[1].published.is_some() && feed.entries[1].updated.is_some());
    }
    let ids = |feed: &feed_rs::model::Feed| -> Vec<String> {
        feed.entries.iter().map(|e| e.id.clone()).collect()
    };
    assert_eq!(
        ids(&atom),
        ids(&json_feed),
        "one post, one id, in both feeds"
    );

    // The author's feeds: their posts alone.
    let (_, author_json) = get("/users/ada/feed.json").await;
    let (_, author_atom) = get("/users/ada/feed.atom").await;
    for body in [author_json, author_atom] {
        let feed = feed_rs::parser::parse(&body[..]).expect("parses");
        assert_eq!(
            feed.title.unwrap().content,
            format!("{BLOG_TITLE}: posts by Ada")
        );
        let links: Vec<_> = feed
            .entries
            .iter()
            .map(|e| e.links[0].href.clone())
            .collect();
        assert_eq!(links, [post_url(&first, "first-post")]);
    }
    let missing = reader
        .fetch(reader.page_url("/users/nobody/feed.json"))
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}
