//! What the pages know of the site and tell their reader: absolute URLs from the public
//! address whatever the request's host says, Atom ids that never move, both conditional GETs
//! of the feeds and an edit that moves its entry, the sign-in round trip (and no open
//! redirect), forms that outlive a restart and come back with their text when refused, error
//! pages for a visit to a form's address and for an over-long id, `dir="auto"` on user text,
//! confirmations after actions, the reader's name in the navigation, and the Nu HTML checker
//! over every kind of page.

use cosmos_blog::auth::Platform;
use cosmos_blog::store::Tenancy;
use serde_json::json;
use testkit::{Backend, binary, json_of};

use super::*;

/// The public address the tests set; the requests' hosts say otherwise.
pub(super) const PUBLIC: &str = "https://blog.example";

/// A host nobody may make the site name.
const FORGED: &str = "attacker.test";

/// Right-to-left text, as a reader of Hebrew writes it.
pub(super) const RTL: &str = "שלום עולם";

mod forms_restart;
mod nu_checker;

testkit::embedded_single_and_cosmos_multi!(
    absolute_urls_come_from_the_public_address_never_from_the_request,
    feeds_answer_both_conditional_gets_and_an_edit_moves_its_entry,
    feeds_and_the_sitemap_move_with_every_publication_edit_and_delete,
    a_signed_out_reader_is_sent_to_sign_in_and_back,
    visits_to_a_forms_address_and_over_long_ids_get_error_pages,
    user_text_is_laid_out_in_its_own_direction,
    actions_are_confirmed_and_the_navigation_names_the_reader,
);

pub(super) async fn spawn(backend: Backend, tenancy: Tenancy, public_url: Option<&str>) -> TestApp {
    let public_url = public_url.map(str::to_owned);
    TestApp::spawn(backend)
        .layout(tenancy)
        .settings(move |settings| settings.site.public_url = public_url)
        .start()
        .await
}

/// A GET of `path` (of the addressed blog) with `headers` besides a browser's.
async fn fetch_with(reader: &Browser<'_>, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut request = reader.request(Method::GET, page_url(reader.app, path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("sent")
}

// ---- item 1: the public address --------------------------------------------------------------

async fn absolute_urls_come_from_the_public_address_never_from_the_request(
    backend: Backend,
    tenancy: Tenancy,
) {
    let app = spawn(backend, tenancy, Some(PUBLIC)).await;
    app.register("ada", "Ada").await;
    let post = post_in_feed(&app, "ada", "First", "c").await;
    let post_id = post["id"].as_str().unwrap();
    let post_path = format!("/posts/{post_id}/first");
    let public = |path: &str| format!("{PUBLIC}{}", page_path(&app, path));
    let reader = Browser::new(&app, None);
    let forgeries: [&[(&str, &str)]; 3] = [
        &[("host", FORGED)],
        &[("x-forwarded-host", FORGED), ("x-forwarded-proto", "http")],
        &[("forwarded", "host=attacker.test;proto=http")],
    ];
    let mut ids = Vec::new();
    for forged in forgeries {
        for path in ["/feed.atom", "/users/ada/feed.atom"] {
            let body = fetch_with(&reader, path, forged)
                .await
                .text()
                .await
                .unwrap();
            assert!(!body.contains(FORGED), "{path} {forged:?}: {body}");
            let feed = parse_atom(&body);
            assert!(feed.id().starts_with("urn:uuid:"), "{}", feed.id());
            assert_eq!(feed.links()[0].href(), public(path));
            let entry = &feed.entries()[0];
            assert_eq!(entry.links()[0].href(), public(&post_path));
            assert_eq!(
                entry.authors()[0].uri(),
                Some(public("/users/ada").as_str())
            );
            if tenancy == Tenancy::Single {
                assert_eq!(entry.id(), format!("urn:uuid:{post_id}"));
            }
            ids.push((path, feed.id().to_owned(), entry.id().to_owned()));
        }
        let response = fetch_with(&reader, &post_path, forged).await;
        let html = response.text().await.unwrap();
        assert!(!html.contains(FORGED), "{forged:?}: {html}");
        let page = Html::parse_document(&html);
        assert_eq!(
            select_attr(&page, "meta[property='og:url']", "content"),
            public(&post_path)
        );
        assert_eq!(
            select_attr(&page, "link[rel=canonical]", "href"),
            public(&post_path)
        );
    }
    // The ids are the same whatever the host; a new title keeps them.
    app.edited(
        "ada",
        post_id,
        json!({"title": "A new title", "content": "c"}),
    )
    .await;
    let feed = eventually(WITHIN, || async {
        let body = reader.html("/feed.atom").await;
        let feed = parse_atom(&body);
        (feed.entries()[0].title().as_str() == "A new title").then_some(feed)
    })
    .await;
    ids.push((
        "/feed.atom",
        feed.id().to_owned(),
        feed.entries()[0].id().to_owned(),
    ));
    for path in ["/feed.atom", "/users/ada/feed.atom"] {
        let of_path: Vec<_> = ids.iter().filter(|(p, _, _)| *p == path).collect();
        assert!(
            of_path
                .windows(2)
                .all(|pair| pair[0].1 == pair[1].1 && pair[0].2 == pair[1].2),
            "{path}: {of_path:?}"
        );
    }
}

/// Without the setting, on a laptop: the loopback address the server listens on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_public_address_links_name_the_loopback_server() {
    let app = spawn(Backend::Embedded, Tenancy::Single, None).await;
    app.register("ada", "Ada").await;
    let post = post_in_feed(&app, "ada", "First", "c").await;
    let reader = Browser::new(&app, None);
    let body = fetch_with(&reader, "/feed.atom", &[("host", FORGED)])
        .await
        .text()
        .await
        .unwrap();
    let feed = parse_atom(&body);
    assert_eq!(
        feed.entries()[0].links()[0].href(),
        format!("{}{}", app.address, readable_path(&app, &post))
    );
    assert!(!body.contains(FORGED));
}

/// Bound beyond loopback without the setting, the server says at start-up that its links
/// name a machine no reader reaches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_says_when_it_serves_others_without_a_public_address() {
    let env = [("BLOG_BIND_ADDRESS", "0.0.0.0"), ("BLOG_AUTH", "header")];
    for (public_url, warned) in [(None, true), (Some(PUBLIC), false)] {
        let mut binary = binary!().on_fresh_data().envs(&env).logged();
        if let Some(url) = public_url {
            binary = binary.env("BLOG_PUBLIC_URL", url);
        }
        let mut served = binary.serve().ready().await;
        served.kill();
        let log = served.log();
        let said = log.contains("BLOG_PUBLIC_URL is not set");
        assert_eq!(said, warned, "BLOG_PUBLIC_URL {public_url:?}: {log}");
    }
}

// ---- item 12: conditional GETs of the feeds, and edits -------------------------------------

async fn feeds_answer_both_conditional_gets_and_an_edit_moves_its_entry(
    backend: Backend,
    tenancy: Tenancy,
) {
    let app = spawn(backend, tenancy, None).await;
    app.register("ada", "Ada").await;
    let post = post_in_feed(&app, "ada", "First", "c").await;
    let post_id = post["id"].as_str().unwrap();
    let reader = Browser::new(&app, None);
    for path in ["/feed.atom", "/users/ada/feed.atom"] {
        let first = fetch_with(&reader, path, &[]).await;
        let last_modified = first.headers()[header::LAST_MODIFIED]
            .to_str()
            .unwrap()
            .to_owned();
        let lm = last_modified.as_str();
        for (headers, expected) in [
            (vec![("if-modified-since", lm)], StatusCode::NOT_MODIFIED),
            (
                vec![("if-modified-since", "Thu, 01 Jan 1970 00:00:00 GMT")],
                StatusCode::OK,
            ),
            // The obsolete forms RFC 9110 makes recipients read.
            (
                vec![("if-modified-since", "Sun Nov  6 08:49:37 2101")],
                StatusCode::NOT_MODIFIED,
            ),
            (vec![("if-modified-since", "not a date")], StatusCode::OK),
            // If-None-Match decides when both are sent.
            (
                vec![("if-modified-since", lm), ("if-none-match", "\"other\"")],
                StatusCode::OK,
            ),
        ] {
            let response = fetch_with(&reader, path, &headers).await;
            assert_eq!(response.status(), expected, "{path} {headers:?}");
            if expected == StatusCode::NOT_MODIFIED {
                assert_eq!(response.headers()[header::LAST_MODIFIED], lm);
                assert!(response.headers().contains_key(header::ETAG));
                assert!(response.bytes().await.unwrap().is_empty());
            }
        }
    }
    let before = fetch_with(&reader, "/feed.atom", &[]).await;
    let last_modified = before.headers()[header::LAST_MODIFIED].clone();
    // An HTTP date counts whole seconds: the edit comes in a later one.
    after_the_second_of(last_modified_of(&before)).await;
    let edited = app
        .edited(
            "ada",
            post_id,
            json!({"title": "First", "content": "changed"}),
        )
        .await;
    let modified = edited["modifiedDate"].as_str().expect("an edit's date");
    for path in ["/feed.atom", "/users/ada/feed.atom"] {
        let entry = eventually(WITHIN, || async {
            let feed = parse_atom(&reader.html(path).await);
            let entry = feed.entries()[0].clone();
            (entry.summary().map(|s| s.as_str()) == Some("changed")).then_some(entry)
        })
        .await;
        assert_eq!(
            entry.updated().timestamp_nanos_opt(),
            atom_syndication::FixedDateTime::parse_from_rfc3339(modified)
                .unwrap()
                .timestamp_nanos_opt(),
            "{path}"
        );
        assert!(entry.updated() > &entry.published().copied().unwrap());
        let since_before = fetch_with(
            &reader,
            path,
            &[("if-modified-since", last_modified.to_str().unwrap())],
        )
        .await;
        assert_eq!(
            since_before.status(),
            StatusCode::OK,
            "{path}: edited since"
        );
    }
    let (_, page, _) = Browser::new(&app, None)
        .get(&format!("/posts/{post_id}"))
        .await;
    assert!(select_text(&page, "article .meta")[0].contains("edited"));
}

/// A response's `Last-Modified`.
fn last_modified_of(response: &Response) -> std::time::SystemTime {
    let value = response.headers()[header::LAST_MODIFIED].to_str().unwrap();
    httpdate::parse_http_date(value).expect("an HTTP date")
}

/// Returns once the second of `second` (a `Last-Modified`) has passed: an HTTP date counts
/// whole seconds, so a change a test makes then is dated in a later one.
async fn after_the_second_of(second: std::time::SystemTime) {
    eventually(WITHIN, || async {
        (std::time::SystemTime::now() >= second + Duration::from_secs(1)).then_some(())
    })
    .await;
}

// ---- feeds and the sitemap move with every change a reader sees ----------------------------

/// What a reader of `path` last saw: the response's `Last-Modified` and `ETag`.
struct Seen {
    path: &'static str,
    last_modified: String,
    etag: String,
}

impl Seen {
    fn last_modified(&self) -> std::time::SystemTime {
        httpdate::parse_http_date(&self.last_modified).expect("an HTTP date")
    }
}

/// What a reader sees of `path` once its body shows `text`, and the body.
async fn seen_showing(reader: &Browser<'_>, path: &'static str, text: &str) -> (Seen, String) {
    eventually(WITHIN, || async {
        let response = fetch_with(reader, path, &[]).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let header = |name| response.headers()[name].to_str().unwrap().to_owned();
        let seen = Seen {
            path,
            last_modified: header(header::LAST_MODIFIED),
            etag: header(header::ETAG),
        };
        let body = response.text().await.unwrap();
        body.contains(text).then_some((seen, body))
    })
    .await
}

/// Waits until each of `seen`'s feeds answers a conditional GET with what its reader saw in
/// full, with a body where `shows` holds, and a later `Last-Modified` (and each validator
/// alone gets the full answer: `If-Modified-Since`, then `If-None-Match`).
async fn moved(reader: &Browser<'_>, seen: &[Seen], shows: impl Fn(&str) -> bool) {
    for before in seen {
        let path = before.path;
        let body = eventually(WITHIN, || async {
            let since = [("if-modified-since", before.last_modified.as_str())];
            let response = fetch_with(reader, path, &since).await;
            if response.status() != StatusCode::OK {
                assert_eq!(response.status(), StatusCode::NOT_MODIFIED, "{path}");
                return None;
            }
            let later = last_modified_of(&response) > before.last_modified();
            let body = response.text().await.unwrap();
            (later && shows(&body)).then_some(body)
        })
        .await;
        let matching = [("if-none-match", before.etag.as_str())];
        let response = fetch_with(reader, path, &matching).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}: {body}");
    }
}

/// Every entry's `updated` (Atom) and `date_modified` (JSON Feed) of the feeds at `paths`,
/// with its `published`: none is before it. Answers the Atom entries by title.
async fn entries_are_updated_after_published(
    reader: &Browser<'_>,
) -> Vec<(String, atom_syndication::Entry)> {
    let atom = parse_atom(&reader.html("/feed.atom").await);
    for entry in atom.entries() {
        let published = entry.published().copied().expect("a published date");
        assert!(entry.updated() >= &published, "{}", entry.title().as_str());
    }
    let json: Value = serde_json::from_str(&reader.html("/feed.json").await).unwrap();
    for item in json["items"].as_array().unwrap() {
        let published = item["date_published"].as_str().unwrap();
        assert!(
            item["date_modified"].as_str().unwrap() >= published,
            "{item}"
        );
    }
    atom.entries()
        .iter()
        .map(|entry| (entry.title().as_str().to_owned(), entry.clone()))
        .collect()
}

async fn feeds_and_the_sitemap_move_with_every_publication_edit_and_delete(
    backend: Backend,
    tenancy: Tenancy,
) {
    let app = TestApp::spawn(backend)
        .layout(tenancy)
        .settings(|settings| {
            settings.site.public_url = Some(PUBLIC.to_owned());
            settings.publish_step_ms = 200;
        })
        .start()
        .await;
    app.register("ada", "Ada").await;
    let reader = Browser::new(&app, None);
    let feeds = ["/feed.atom", "/feed.json", "/users/ada/feed.atom"];

    // Empty feeds are dated from when they were served, not 1970.
    let a_year_ago = std::time::SystemTime::now() - Duration::from_secs(365 * 24 * 3600);
    for path in feeds {
        let (seen, body) = seen_showing(&reader, path, "").await;
        assert!(seen.last_modified() > a_year_ago, "{path}");
        if path.ends_with(".atom") {
            let feed = parse_atom(&body);
            assert!(feed.entries().is_empty(), "{path}");
            assert!(feed.updated().timestamp() > 1_700_000_000, "{path}");
        }
    }

    // An old draft, and a published post the readers see.
    let draft = app
        .written(
            "ada",
            json!({"title": "Old draft", "content": "written long ago", "status": "draft"}),
        )
        .await;
    let draft_id = draft["id"].as_str().unwrap().to_owned();
    let first = post_in_feed(&app, "ada", "First", "c").await;
    let mut before = Vec::new();
    for path in feeds {
        before.push(seen_showing(&reader, path, "First").await.0);
    }
    for seen in &before {
        after_the_second_of(seen.last_modified()).await;
    }

    // The draft is published: every feed moves, and its entry is dated by its publication.
    let published = app
        .edited(
            "ada",
            &draft_id,
            json!({"title": "Old draft", "content": "written long ago", "status": "published"}),
        )
        .await;
    let published_date = published["publishedDate"].as_str().unwrap().to_owned();
    assert!(published_date.as_str() > draft["creationDate"].as_str().unwrap());
    moved(&reader, &before, |body| body.contains("Old draft")).await;
    let entries = entries_are_updated_after_published(&reader).await;
    let (_, entry) = entries.iter().find(|(t, _)| t == "Old draft").unwrap();
    let at = |date: &str| atom_syndication::FixedDateTime::parse_from_rfc3339(date).unwrap();
    assert_eq!(entry.published().copied(), Some(at(&published_date)));
    assert!(entry.updated() >= &at(&published_date));

    // A scheduled post publishes itself: its entry is dated by its publication too.
    let publish_at = crate::drafts::in_seconds(2);
    let scheduled = app
        .written(
            "ada",
            json!({"title": "Scheduled", "content": "soon", "status": "scheduled",
                   "publishAt": publish_at}),
        )
        .await;
    let entries = eventually(WITHIN, || async {
        let html = reader.html("/feed.atom").await;
        html.contains("Scheduled").then_some(())?;
        Some(entries_are_updated_after_published(&reader).await)
    })
    .await;
    let (_, entry) = entries.iter().find(|(t, _)| t == "Scheduled").unwrap();
    assert_eq!(entry.published().copied(), Some(at(&publish_at)));
    assert!(entry.updated() > &at(scheduled["creationDate"].as_str().unwrap()));

    // The sitemap dates the late-published draft by its publication, not its writing.
    let draft_url = format!("{PUBLIC}{}", readable_path(&app, &published));
    let lastmod = eventually(WITHIN, || async {
        let sitemap = reader.html("/sitemap.xml").await;
        let (_, after) = sitemap.split_once(&format!("<loc>{draft_url}</loc><lastmod>"))?;
        after
            .split_once("</lastmod>")
            .map(|(lastmod, _)| lastmod.to_owned())
    })
    .await;
    assert_eq!(lastmod, format!("{}Z", &published_date[..19]));

    // A post deleted (the oldest, so no other entry's date moves) moves every feed as well.
    let mut before = Vec::new();
    for path in feeds {
        before.push(seen_showing(&reader, path, "Scheduled").await.0);
    }
    for seen in &before {
        after_the_second_of(seen.last_modified()).await;
    }
    let first_id = first["id"].as_str().unwrap();
    let deleted = app
        .delete_as("ada", &format!("/api/posts/{first_id}"))
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    moved(&reader, &before, |body| !body.contains("First")).await;
    app.assert_verifies().await;
}

// ---- item 3: signing in and back ------------------------------------------------------------

async fn a_signed_out_reader_is_sent_to_sign_in_and_back(backend: Backend, tenancy: Tenancy) {
    let app = spawn(backend, tenancy, None).await;
    app.register("ada", "Ada").await;
    let mut reader = Browser::new(&app, None);
    for page in ["/write", "/account", "/account/delete"] {
        let response = fetch_with(&reader, page, &[]).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{page}");
        let back = page_path(&app, page);
        assert_eq!(
            location(&response),
            format!("/sign-in?return={}", encode_query(&back))
        );
        // The sign-in page carries the way back, and signing in takes it.
        let (status, form, _) = reader
            .get_site(&format!("/sign-in?return={}", encode_query(&back)))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(select_attr(&form, "input[name=return]", "value"), back);
        let signed_in = reader
            .post_site("/sign-in", &[("user_id", "ada"), ("return", &back)])
            .await;
        assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&signed_in), back);
    }
    // Only a path of this site: anything a browser could read as another site's goes home.
    for elsewhere in [
        "https://elsewhere.example/",
        "//elsewhere.example/x",
        "/\t/elsewhere.example",
        "/\\elsewhere.example",
        "/\n/elsewhere.example",
        " //elsewhere.example",
        "javascript:alert(1)",
    ] {
        let refused = reader
            .post_site("/sign-in", &[("user_id", "ada"), ("return", elsewhere)])
            .await;
        assert_eq!(location(&refused), "/", "{elsewhere:?}");
    }
    // A form sent signed out (its sign-in expired) keeps the words of a reader, and the text.
    let post = app.new_post("ada", "t", "c").await;
    let post_path = format!("/posts/{}", post["id"].as_str().unwrap());
    let mut signed_out = Browser::new(&app, None);
    signed_out.get_site("/sign-in").await;
    let refused = signed_out
        .post(
            &format!("{post_path}/comments"),
            &[("content", "kept words")],
        )
        .await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let html = refused.text().await.unwrap();
    assert!(!html.contains("x-ms-client-principal"), "{html}");
    assert!(!html.contains("BLOG_AUTH"), "{html}");
    let page = Html::parse_document(&html);
    assert_eq!(select_text(&page, "#comment-content"), ["kept words"]);

    // Under App Service Authentication: its own sign-in, and back.
    let easy = TestApp::spawn(backend)
        .layout(tenancy)
        .settings(|settings| settings.auth.platform = Platform::functions_host(Some("true")))
        .start()
        .await;
    let reader = Browser::new(&easy, None);
    let response = fetch_with(&reader, "/write", &[]).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        location(&response),
        format!(
            "/.auth/login/aad?post_login_redirect_uri={}",
            encode_query(&page_path(&easy, "/write"))
        )
    );
}

/// `text` percent-encoded as the pages encode a query value.
fn encode_query(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Browser<'_> {
    /// GET a page of the site (not of a blog: the sign-in page).
    async fn get_site(&mut self, path: &str) -> (StatusCode, Html, HeaderMap) {
        let response = self.fetch(format!("{}{path}", self.app.address)).await;
        self.keep_token(response.headers());
        let status = response.status();
        let headers = response.headers().clone();
        (status, parsed(response).await, headers)
    }

    /// POST a form to a page of the site, with a token.
    async fn post_site(&mut self, path: &str, fields: &[(&str, &str)]) -> Response {
        let token = self.token().await;
        let mut form: Vec<(&str, &str)> = vec![("csrf", &token)];
        form.extend_from_slice(fields);
        self.request(Method::POST, format!("{}{path}", self.app.address))
            .form(&form)
            .send()
            .await
            .expect("sent")
    }
}

// ---- item 7: error pages -----------------------------------------------------------------------

async fn visits_to_a_forms_address_and_over_long_ids_get_error_pages(
    backend: Backend,
    tenancy: Tenancy,
) {
    let app = spawn(backend, tenancy, None).await;
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "t", "c").await;
    let post_path = format!("/posts/{}", post["id"].as_str().unwrap());
    let mut reader = Browser::new(&app, Some("ada"));
    for path in [
        format!("{post_path}/like"),
        format!("{post_path}/unlike"),
        format!("{post_path}/comments"),
        format!("{post_path}/delete"),
    ] {
        let (status, page, headers) = reader.get(&path).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
        assert_eq!(select_text(&page, "main code"), ["method-not-allowed"]);
        assert!(headers[header::ALLOW].to_str().unwrap().contains("POST"));
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
    }
    let sign_out = reader.fetch(format!("{}/sign-out", app.address)).await;
    assert_eq!(sign_out.status(), StatusCode::METHOD_NOT_ALLOWED);

    // An over-long id: the page's status is the API's, for each cause.
    for id in ["i".repeat(300), "i".repeat(9000)] {
        let api = app.get(&format!("/api/posts/{id}")).await.status();
        let (status, page, headers) = reader.get(&format!("/posts/{id}")).await;
        assert_eq!(status, api, "{} bytes", id.len());
        assert!(status.is_client_error());
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert_eq!(select(&page, "main code").len(), 1);
    }
}

// ---- item 10: right-to-left text --------------------------------------------------------------

async fn user_text_is_laid_out_in_its_own_direction(backend: Backend, tenancy: Tenancy) {
    let app = spawn(backend, tenancy, None).await;
    app.register("ada", RTL).await;
    let post = post_in_feed(&app, "ada", RTL, RTL).await;
    let post_id = post["id"].as_str().unwrap();
    app.comment("ada", post_id, RTL).await;
    app.like("ada", post_id).await;
    let mut ada = Browser::new(&app, Some("ada"));
    let post_path = format!("/posts/{post_id}");
    for (path, selectors) in [
        ("/", vec!["ol.posts h2", "ol.posts .meta a", ".short"]),
        (
            post_path.as_str(),
            vec![
                "article h1",
                "article .meta a[href*='/users/']",
                ".content",
                ".comments .meta a",
                ".comment-text",
                "#comment-content",
            ],
        ),
        (&format!("{post_path}/likes"), vec!["ol.likes a"]),
        ("/users/ada", vec!["main h1", "ol.posts h2"]),
        ("/write", vec!["#title", "#content"]),
        (&format!("{post_path}/edit"), vec!["#title", "#content"]),
        ("/account", vec!["#username"]),
    ] {
        let (status, page, _) = ada.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        for selector in selectors {
            let found = select(&page, selector);
            assert!(!found.is_empty(), "{path}: {selector}");
            for element in found {
                assert_eq!(
                    element.value().attr("dir"),
                    Some("auto"),
                    "{path}: {selector}"
                );
            }
        }
        // Text inside other text is isolated (the navigation's name, "Likes of …").
        assert!(
            select(&page, "nav bdi")
                .iter()
                .all(|e| e.text().collect::<String>() == RTL)
        );
    }
}

// ---- item 11: what happened ---------------------------------------------------------------------

async fn actions_are_confirmed_and_the_navigation_names_the_reader(
    backend: Backend,
    tenancy: Tenancy,
) {
    let app = spawn(backend, tenancy, None).await;
    app.register("carol", "Carol").await;
    app.register("bob", "Bob").await;
    let post = post_in_feed(&app, "carol", "t", "c").await;
    let post_id = post["id"].as_str().unwrap();
    let post_path = format!("/posts/{post_id}");
    app.comment("bob", post_id, "a comment").await;
    let mut carol = Browser::new(&app, Some("carol"));
    let (_, page, _) = carol.get("/").await;
    assert_eq!(
        select_text(
            &page,
            &format!("nav a[href='{}']", page_path(&app, "/account"))
        ),
        ["Account (Carol)"]
    );

    // A like in place (the script asks for JSON): the count in words.
    let token = carol.token().await;
    let like = carol
        .client
        .post(carol.page_url(&format!("{post_path}/like")))
        .header(header::ACCEPT, "application/json")
        .header("sec-fetch-site", "same-origin")
        .header(header::COOKIE, carol.cookies().expect("cookies"))
        .form(&[("csrf", token.as_str())]);
    let liked = json_of(like).await;
    assert_eq!(liked["likeText"], "1 like");
    let (_, page, _) = carol.get(&post_path).await;
    assert_eq!(select_text(&page, "#like-count"), ["1 like"]);

    let (_, page, _) = carol.get(&post_path).await;
    let delete = select_attr(&page, "ol.comments form", "action");
    let deleted = carol
        .post(
            delete.strip_prefix(&page_path(&app, "")).unwrap_or(&delete),
            &[],
        )
        .await;
    assert_confirmed(
        &mut carol,
        &deleted,
        "comment-deleted",
        "comment is deleted",
    )
    .await;

    let renamed = carol
        .post("/account", &[("username", "Carol K."), ("return", "")])
        .await;
    assert_confirmed(&mut carol, &renamed, "renamed", "username is changed").await;
    let (_, page, _) = carol.get("/").await;
    assert!(
        select_text(&page, "nav")
            .concat()
            .contains("Account (Carol K.)")
    );

    let erased = carol.post("/account/delete", &[("confirm", "yes")]).await;
    assert_confirmed(
        &mut carol,
        &erased,
        "account-deleted",
        "within a few seconds",
    )
    .await;
}

/// `response` leads to a page that says, once, as a status message, what was done.
async fn assert_confirmed(browser: &mut Browser<'_>, response: &Response, done: &str, says: &str) {
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let to = location(response);
    assert!(to.contains(&format!("?done={done}")), "{to}");
    let path = to
        .strip_prefix(&page_path(browser.app, ""))
        .unwrap_or(&to)
        .to_owned();
    let (status, page, _) = browser.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{path}");
    let status_messages = select_text(&page, "main [role=status]");
    assert!(
        status_messages.iter().any(|m| m.contains(says)),
        "{path}: {status_messages:?}"
    );
}
