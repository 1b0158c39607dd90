//! The bytes of every query route: each body is exactly the serialisation of the API's own
//! types (field order, numbers, dates and all), so a faster path that hands stored JSON on
//! without parsing it, or a cache of serialised items, cannot change what a caller receives.
//! Each page is read whole and in pages, so continuation tokens are covered too. The texts
//! hold the characters JSON escapes that the API takes (quotes, backslashes, line breaks,
//! tabs), which the lists copy from the stored text rather than parse.

use cosmos_blog::domain::{Comment, Like, Post, User};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use testkit::{TestApp, content_type, eventually, surface_tests};

surface_tests!(every_query_route_answers_the_bytes_of_its_types);

/// The API's page of items, as it serialises it.
#[derive(Serialize, Deserialize)]
struct PageOf<T> {
    items: Vec<T>,
    continuation: Option<String>,
}

/// The body of `GET path`, after checking that it is JSON, exactly as `T` serialises.
async fn body_of<T: Serialize + DeserializeOwned>(app: &TestApp, path: &str) -> Vec<u8> {
    let response = app.get(path).await;
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    assert_eq!(
        content_type(response.headers()),
        Some("application/json"),
        "{path}"
    );
    let body = response.bytes().await.expect("body").to_vec();
    let typed: T =
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{path}: not the API's type: {e}"));
    let expected = serde_json::to_vec(&typed).expect("serialises");
    assert_eq!(
        String::from_utf8_lossy(&body),
        String::from_utf8_lossy(&expected),
        "{path}: the body is not the serialisation of its items"
    );
    body
}

/// Every page of `path`, one item at a time, each checked as [`body_of`] checks.
async fn pages_of<T: Serialize + DeserializeOwned>(app: &TestApp, path: &str) -> usize {
    let mut seen = 0;
    let mut next = format!("{path}?limit=1");
    loop {
        let body = body_of::<PageOf<T>>(app, &next).await;
        let page: PageOf<T> = serde_json::from_slice(&body).expect("page");
        seen += page.items.len();
        match page.continuation {
            Some(token) => next = format!("{path}?limit=1&continuation={token}"),
            None => return seen,
        }
    }
}

/// Text with every kind of character that JSON escapes, and some it does not.
const AWKWARD: &str = "\"quoted\" back\\slash\ttab\r\nline é 😀 </script> \u{2028} /";

async fn every_query_route_answers_the_bytes_of_its_types(app: TestApp) {
    app.register("ada", "Ada \"the first\" Lovelace").await;
    app.register("bob", "bob \\ the second").await;
    let mut posts = Vec::new();
    for n in 0..3 {
        let post = app
            .new_post(
                "ada",
                &format!("Title {n} — ünïcode {AWKWARD}"),
                &format!("long content\n\n{}", AWKWARD.repeat(12)),
            )
            .await;
        posts.push(post["id"].as_str().expect("post id").to_owned());
    }
    let first = &posts[0];
    for caller in ["ada", "bob"] {
        assert!(
            app.comment(caller, first, &format!("a <comment> & more {AWKWARD}"))
                .await
                .status()
                .is_success()
        );
        assert!(app.like(caller, first).await.status().is_success());
    }

    body_of::<User>(&app, "/api/users/ada").await;
    body_of::<Post>(&app, &format!("/api/posts/{first}")).await;
    // The copies in the user's partition and the feed come through the change feed.
    eventually(std::time::Duration::from_secs(30), || async {
        let page = app.get_json("/api/users/ada/posts").await;
        (page["items"].as_array().map_or(0, Vec::len) == posts.len()).then_some(())
    })
    .await;
    body_of::<PageOf<Post>>(&app, "/api/users/ada/posts").await;
    assert_eq!(
        pages_of::<Post>(&app, "/api/users/ada/posts").await,
        posts.len()
    );
    body_of::<PageOf<Comment>>(&app, &format!("/api/posts/{first}/comments")).await;
    assert_eq!(
        pages_of::<Comment>(&app, &format!("/api/posts/{first}/comments")).await,
        2
    );
    body_of::<PageOf<Like>>(&app, &format!("/api/posts/{first}/likes")).await;
    assert_eq!(
        pages_of::<Like>(&app, &format!("/api/posts/{first}/likes")).await,
        2
    );
    eventually(std::time::Duration::from_secs(30), || async {
        let page = app.get_json("/api/feed").await;
        (page["items"].as_array().map_or(0, Vec::len) == posts.len()).then_some(())
    })
    .await;
    body_of::<PageOf<Post>>(&app, "/api/feed").await;
    body_of::<PageOf<Post>>(&app, "/api/feed?limit=1").await;
    // Q7, a page of the tenant's users, exists in `multi` only.
    if app.tenant.is_some() {
        body_of::<PageOf<User>>(&app, "/api/users").await;
        assert_eq!(pages_of::<User>(&app, "/api/users").await, 2);
    }
}
