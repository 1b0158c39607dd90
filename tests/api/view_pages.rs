//! The pages of the views: tag links, `/tags/{tag}` and its Atom feed, `/archive` and a
//! month's page, the front page's way to the archive, `/sitemap.xml` and `/robots.txt`.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use scraper::{Html, Selector};
use serde_json::{Value, json};

use testkit::{TestApp, eventually, surface_tests};

surface_tests!(tags_and_the_archive_are_reached_by_links_and_drafts_are_in_no_page_or_sitemap,);

fn page_path(app: &TestApp, path: &str) -> String {
    match &app.tenant {
        Some(tenant) => {
            let mut url = reqwest::Url::parse("http://x/").unwrap();
            url.path_segments_mut()
                .unwrap()
                .extend(["tenants", tenant.as_str()]);
            format!("{}{path}", url.path())
        }
        None => path.to_owned(),
    }
}

async fn page(app: &TestApp, path: &str) -> (StatusCode, String) {
    let response = app.get_raw(&page_path(app, path)).await;
    (response.status(), response.text().await.unwrap())
}

fn hrefs(html: &str, css: &str) -> Vec<String> {
    let document = Html::parse_document(html);
    let selector = Selector::parse(css).unwrap();
    document
        .select(&selector)
        .filter_map(|a| a.value().attr("href").map(str::to_owned))
        .collect()
}

async fn write(app: &TestApp, body: Value) -> String {
    let response = app
        .send(Method::POST, "/api/posts", Some("ada"), Some(body))
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let post: Value = response.json().await.unwrap();
    post["id"].as_str().unwrap().to_owned()
}

async fn tags_and_the_archive_are_reached_by_links_and_drafts_are_in_no_page_or_sitemap(
    app: TestApp,
) {
    app.register("ada", "Ada").await;
    let public = write(
        &app,
        json!({"title": "Tagged", "content": "text", "tags": ["Rust", "Cosmos DB"]}),
    )
    .await;
    let draft = write(
        &app,
        json!({"title": "Secret draft", "content": "text", "tags": ["rust"], "status": "draft"}),
    )
    .await;
    let tag_href = page_path(&app, "/tags/rust");
    // Every link is the post's canonical, slugged address.
    let post_href = page_path(&app, &format!("/posts/{public}/tagged"));

    // The post page and the front page link the tags; the front page links the archive. The
    // post page's metadata names the tags.
    let (status, post_page) = page(&app, &format!("/posts/{public}/tagged")).await;
    assert_eq!(status, StatusCode::OK);
    let tags = hrefs(&post_page, "a[rel=tag]");
    assert_eq!(tags, [tag_href.clone(), page_path(&app, "/tags/cosmos-db")]);
    let article_tags: Vec<String> = Html::parse_document(&post_page)
        .select(&Selector::parse("meta[property='article:tag']").unwrap())
        .filter_map(|meta| meta.value().attr("content").map(str::to_owned))
        .collect();
    assert_eq!(article_tags, ["rust", "cosmos-db"]);
    let json_ld = Html::parse_document(&post_page)
        .select(&Selector::parse("script[type='application/ld+json']").unwrap())
        .next()
        .map(|script| script.inner_html())
        .unwrap();
    let json_ld: Value = serde_json::from_str(&json_ld).unwrap();
    assert_eq!(json_ld["keywords"], json!(["rust", "cosmos-db"]));
    let front = eventually(Duration::from_secs(30), || async {
        let (_, front) = page(&app, "/").await;
        front.contains(&post_href).then_some(front)
    })
    .await;
    assert!(hrefs(&front, "a[rel=tag]").contains(&tag_href));
    let archive_href = page_path(&app, "/archive");
    assert!(hrefs(&front, ".pager a").contains(&archive_href), "{front}");

    // The tag's page lists the post (not the draft) and links its Atom feed, which parses.
    let tag_page = eventually(Duration::from_secs(30), || async {
        let (status, html) = page(&app, "/tags/rust").await;
        (status == StatusCode::OK && html.contains(&post_href)).then_some(html)
    })
    .await;
    assert!(!tag_page.contains("Secret draft"));
    let canonical = hrefs(&tag_page, "link[rel=canonical]");
    assert!(
        canonical.len() == 1 && canonical[0].ends_with(&tag_href),
        "{canonical:?}"
    );
    let feeds = hrefs(&tag_page, "link[rel=alternate]");
    for stem in [page_path(&app, "/tags/rust/feed"), page_path(&app, "/feed")] {
        for format in ["atom", "json"] {
            let href = format!("{stem}.{format}");
            assert!(feeds.iter().any(|h| h.ends_with(&href)), "{feeds:?}");
        }
    }
    // The tag's Atom feed and JSON Feed, parsed by a maintained parser: the post, no draft,
    // at its canonical address, with its tags.
    for path in ["/tags/rust/feed.atom", "/tags/rust/feed.json"] {
        let (status, body) = page(&app, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let feed = feed_rs::parser::parse(body.as_bytes()).expect("the feed parses");
        assert_eq!(feed.entries.len(), 1, "{path}");
        let entry = &feed.entries[0];
        assert_eq!(
            entry.title.as_ref().map(|t| t.content.as_str()),
            Some("Tagged")
        );
        assert!(
            entry.links[0].href.ends_with(&post_href),
            "{path}: {:?}",
            entry.links
        );
        assert!(!body.contains("Secret draft"), "{path}");
    }
    let (_, json_feed) = page(&app, "/tags/rust/feed.json").await;
    let json_feed: Value = serde_json::from_str(&json_feed).unwrap();
    assert_eq!(json_feed["items"][0]["tags"], json!(["rust", "cosmos-db"]));

    // The archive lists the month with its count and links its page, which lists the post.
    let now = cosmos_blog::domain::Timestamp::now().to_string();
    let month_path = format!("/archive/{}/{}", &now[..4], &now[5..7]);
    // The month's index entry is a copy of its own, which the change feed may write after
    // the tag's: waited for like the tag's page above.
    let archive = eventually(Duration::from_secs(30), || async {
        let (status, html) = page(&app, "/archive").await;
        (status == StatusCode::OK && !hrefs(&html, "ul.archive a").is_empty()).then_some(html)
    })
    .await;
    assert_eq!(
        hrefs(&archive, "ul.archive a"),
        [page_path(&app, &month_path)]
    );
    assert!(archive.contains("1 post"), "{archive}");
    let (status, month) = page(&app, &month_path).await;
    assert_eq!(status, StatusCode::OK);
    assert!(month.contains(&post_href) && !month.contains("Secret draft"));
    assert_eq!(
        page(&app, "/archive/2026/13").await.0,
        StatusCode::BAD_REQUEST
    );

    // The sitemap has the published post with its lastmod, never the draft; robots.txt
    // names it.
    let (status, sitemap) = page(&app, "/sitemap.xml").await;
    assert_eq!(status, StatusCode::OK);
    assert!(sitemap.contains("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"));
    assert!(
        sitemap.contains(&format!("{post_href}</loc><lastmod>")),
        "{sitemap}"
    );
    assert!(!sitemap.contains(&draft), "{sitemap}");
    let (status, robots) = page(&app, "/robots.txt").await;
    assert_eq!(status, StatusCode::OK);
    let sitemap_path = page_path(&app, "/sitemap.xml");
    assert!(
        robots
            .lines()
            .any(|line| line.starts_with("Sitemap: http") && line.ends_with(&sitemap_path)),
        "{robots}"
    );
    let (status, month_map) = page(&app, &format!("/sitemaps/{}/{}", &now[..4], &now[5..7])).await;
    assert_eq!(status, StatusCode::OK);
    assert!(month_map.contains(&post_href) && !month_map.contains(&draft));
    app.assert_verifies().await;
}
