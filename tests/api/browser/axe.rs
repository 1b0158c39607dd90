//! axe-core, the accessibility engine, over the main pages in the light and the dark theme:
//! the front page, a post page (signed out and signed in, with its forms), an author's page,
//! a tag's page, the archive and one of its months, the write, sign-in and account pages, a
//! draft's preview, and an error page. No violation of any impact may
//! remain.
//!
//! axe-core is npm's `axe-core` (`.ci/run` installs it into `node_modules/` at the project's
//! root; `AXE_CORE` may name its `axe.min.js` elsewhere). Its script is injected through
//! WebDriver into each page, which runs it outside the page's own policy; the dark theme is
//! the reader's `prefers-color-scheme`, emulated through Chromium's DevTools protocol (which
//! chromedriver forwards). Without axe-core the test says so and passes, except where `CI`
//! is set.

use std::io::Write;
use std::path::PathBuf;

use fantoccini::Client;
use fantoccini::wd::WebDriverCompatibleCommand;
use serde_json::{Value, json};
use testkit::TestApp;

use super::blog;
use super::pages::Visitor;

const INSTALL_HINT: &str = "npm install --no-save axe-core (at the project's root)";

/// axe-core's script, or `None` (after saying so) when it is not installed and `CI` is not
/// set.
pub fn axe_source_or_skip(test_name: &str) -> Option<String> {
    let path = std::env::var_os("AXE_CORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            [
                env!("CARGO_MANIFEST_DIR"),
                "node_modules",
                "axe-core",
                "axe.min.js",
            ]
            .iter()
            .collect()
        });
    match std::fs::read_to_string(&path) {
        Ok(source) => Some(source),
        Err(e) => {
            let message = format!(
                "browser test `{test_name}` needs axe-core at {} ({e}); install it with: \
                 {INSTALL_HINT}",
                path.display()
            );
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set, so a test that cannot run fails: {message}"
            );
            let _ = writeln!(std::io::stderr(), "skipped: {message}");
            None
        }
    }
}

/// The reader's colour scheme, as the pages' stylesheet reads it.
#[derive(Debug, Clone, Copy)]
enum Theme {
    Light,
    Dark,
}

impl Theme {
    fn name(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }
}

/// A DevTools command sent through chromedriver (`/session/{id}/goog/cdp/execute`).
#[derive(Debug)]
struct DevTools {
    command: &'static str,
    params: Value,
}

impl WebDriverCompatibleCommand for DevTools {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        let body = json!({ "cmd": self.command, "params": self.params });
        (axum::http::Method::POST, Some(body.to_string()))
    }
}

async fn use_theme(client: &Client, theme: Theme) {
    client
        .issue_cmd(DevTools {
            command: "Emulation.setEmulatedMedia",
            params: json!({
                "features": [{ "name": "prefers-color-scheme", "value": theme.name() }]
            }),
        })
        .await
        .expect("Chromium emulates the colour scheme");
}

/// axe-core's violations on the page shown now, one line per element.
async fn violations(client: &Client, axe: &str) -> Vec<String> {
    client
        .execute(axe, vec![])
        .await
        .expect("axe-core's script is injected");
    let found = client
        .execute_async(
            r"const done = arguments[arguments.length - 1];
              axe.run(document, { resultTypes: ['violations'] })
                .then(r => done(r.violations.flatMap(v => v.nodes.map(n =>
                    `${v.id} (${v.impact}): ${v.help} at ${n.target.join(' ')}: ${n.failureSummary}`))))
                .catch(e => done([`axe-core failed: ${e}`]));",
            vec![],
        )
        .await
        .expect("axe-core runs");
    serde_json::from_value(found).expect("a list of violations")
}

pub async fn the_main_pages_have_no_accessibility_violation(v: Visitor, app: &TestApp, axe: &str) {
    // The check can fail: a page with an image without a text alternative, and grey on grey
    // in the dark theme, is reported.
    use_theme(&v.client, Theme::Dark).await;
    v.client
        .goto(
            "data:text/html,<!doctype html><html lang=en><title>t</title><style>@media \
             (prefers-color-scheme: dark) { p { color: %23555; background: %23333 } }</style>\
             <main><img src=x.png><p>faint</p></main>",
        )
        .await
        .expect("a data: page opens");
    let known = violations(&v.client, axe).await.join("\n");
    assert!(
        known.contains("image-alt") && known.contains("color-contrast"),
        "axe-core reports what it should: {known}"
    );
    app.register("ada", "Ada Lovelace").await;
    app.register("grace", "Grace Hopper").await;
    let post = blog::new_post_with(
        app,
        "ada",
        json!({
            "title": "Tables, quotes and headings",
            "content": "# A heading\n\nSome *text* with a [link](https://example.org).\n\n\
                | Left | Centre | Right |\n|:--|:-:|--:|\n| a | b | c |\n\n\
                > A quote, as quotes look.\n\n```\ncode\n```\n",
            "tags": ["rust", "cosmos-db"],
        }),
    )
    .await;
    let draft = blog::new_post_with(
        app,
        "ada",
        json!({ "title": "A draft", "content": "Not yet *out*.", "status": "draft" }),
    )
    .await;
    blog::comment(app, "grace", &post, "A comment.").await;
    blog::like(app, "grace", &post).await;
    let post_page = v
        .reload_until(&v.in_blog("/"), "the post", |text| {
            text.contains("Tables, quotes and headings")
        })
        .await;
    assert!(!post_page.is_empty());
    // The tag's and the month's views are copies of their own, kept by the change feed.
    let tag = v.in_blog("/tags/rust");
    v.reload_until(&tag, "the post", |text| text.contains("Tables, quotes"))
        .await;
    let now = time::OffsetDateTime::now_utc();
    let month = v.in_blog(&format!(
        "/archive/{}/{:02}",
        now.year(),
        u8::from(now.month())
    ));
    v.reload_until(&month, "the post", |text| text.contains("Tables, quotes"))
        .await;

    let signed_out = [
        v.in_blog("/"),
        v.in_blog(&format!("/posts/{post}")),
        v.in_blog("/users/ada"),
        "/sign-in".to_owned(),
        v.in_blog("/posts/no-such-post"),
        tag,
        v.in_blog("/archive"),
        month,
    ];
    let signed_in = [
        v.in_blog("/write"),
        v.in_blog("/account"),
        v.in_blog(&format!("/posts/{post}")),
        // A draft's page is a preview, for its author alone.
        v.in_blog(&format!("/posts/{draft}")),
        // Her own page, with her drafts marked.
        v.in_blog("/users/ada"),
    ];
    let mut found = Vec::new();
    let mut checked = 0;
    for theme in [Theme::Light, Theme::Dark] {
        use_theme(&v.client, theme).await;
        for (signed, pages) in [(false, &signed_out[..]), (true, &signed_in[..])] {
            if signed {
                v.sign_in("ada").await;
            }
            for page in pages {
                v.open(page).await;
                let dark: bool = serde_json::from_value(
                    v.client
                        .execute(
                            "return matchMedia('(prefers-color-scheme: dark)').matches",
                            vec![],
                        )
                        .await
                        .expect("the media query"),
                )
                .expect("a boolean");
                assert_eq!(dark, matches!(theme, Theme::Dark), "{page}");
                for violation in violations(&v.client, axe).await {
                    found.push(format!("{} {page}: {violation}", theme.name()));
                }
                checked += 1;
            }
            if signed {
                v.sign_out().await;
            }
        }
    }
    assert_eq!(checked, 26);
    assert!(found.is_empty(), "axe-core found:\n{}", found.join("\n"));
}
