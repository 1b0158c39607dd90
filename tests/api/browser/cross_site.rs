//! A page of another origin that makes a signed-in reader's browser post a form to the blog
//! is refused with 403, and nothing is stored. The attacker's page is served on another
//! loopback port: addressed as `127.0.0.1` it is the same site as the blog but another origin
//! (so the reader's `SameSite` cookies go with its requests), and as `localhost` another site.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Html;
use axum::routing::get;
use fantoccini::Locator;

use testkit::TestApp;

use super::blog;
use super::chromium::Script;
use super::pages::Visitor;

pub async fn a_form_from_another_origin_is_refused(v: Visitor, app: &TestApp) {
    app.register("alice", "Alice").await;
    let post_id = blog::new_post(app, "alice", "Target", "A post to like.").await;
    let attacker = serve_attacker(app.address.clone(), post_id.clone()).await;
    v.sign_up("bob", "Bob").await;

    for host in ["127.0.0.1", "localhost"] {
        for attack in ["like", "api-like", "comment"] {
            let page = format!("http://{host}:{attacker}/{attack}");
            v.client
                .goto(&page)
                .await
                .expect("the attacker's page opens");
            let refused = v
                .client
                .wait()
                .for_element(Locator::XPath("//body[contains(., '403')]"))
                .await
                .unwrap_or_else(|e| panic!("{page}: the blog answers 403: {e}"));
            let answer = refused.text().await.expect("the answer's text");
            let landed = v.client.current_url().await.expect("a URL");
            assert!(
                landed.as_str().starts_with(&app.address),
                "{page}: the form was posted to the blog (landed on {landed}): {answer}"
            );
        }
    }

    let likes = blog::stored_items(app, &format!("/api/posts/{post_id}/likes")).await;
    assert!(likes.is_empty(), "no like was stored: {likes:?}");
    let comments = blog::stored_items(app, &format!("/api/posts/{post_id}/comments")).await;
    assert!(comments.is_empty(), "no comment was stored: {comments:?}");

    // The same reader, on the blog's own page, can like: the refusals were the origin's.
    let post = format!("/posts/{post_id}");
    v.open(&post).await;
    v.like_or_unlike(&post, "like", Script::On).await;
    let likes = blog::stored_items(app, &format!("/api/posts/{post_id}/likes")).await;
    assert_eq!(likes.len(), 1, "the blog's own form likes: {likes:?}");
}

/// Serves the attacker's pages on a port of their own; each submits its form as it loads.
async fn serve_attacker(blog: String, post_id: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let app = Router::new()
        .route("/{attack}", get(attack_page))
        .with_state((blog, post_id));
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

async fn attack_page(
    State((blog, post)): State<(String, String)>,
    Path(attack): Path<String>,
) -> Html<String> {
    let (action, fields) = match attack.as_str() {
        "like" => (
            format!("{blog}/posts/{post}/like"),
            "<input name=csrf value=guessed>",
        ),
        "api-like" => (format!("{blog}/api/posts/{post}/likes"), ""),
        _ => (
            format!("{blog}/posts/{post}/comments"),
            "<input name=csrf value=guessed><input name=content value=forged>",
        ),
    };
    Html(format!(
        "<!doctype html><title>Win a prize</title>\
         <form method=post action=\"{action}\">{fields}</form>\
         <script>document.forms[0].submit()</script>"
    ))
}
