//! Forms outlive a restart and are shared by instances: the key that signs their tokens is
//! kept beside the embedded store, or set once for every instance; a form refused for its
//! token (another deployment's key) comes back with what was typed, and nothing is stored.

use cosmos_blog::store::Tenancy;
use tempfile::TempDir;
use testkit::{binary, form_token, json_of, register_at};

use super::super::*;

// ---- item 4: forms across restarts and instances --------------------------------------------

/// The page `path` of a served binary as `user`'s browser: its body and its form token
/// (the cookie's and the field's).
async fn open_form(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    user: &str,
) -> (String, String) {
    let response = client
        .get(format!("{base}{path}"))
        .header(header::ACCEPT, "text/html")
        .header(header::COOKIE, format!("blog_dev_user={user}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    let token = form_token(response.headers()).expect("the form token's cookie");
    let page = parsed(response).await;
    let field = select_attr(&page, "input[name=csrf]", "value");
    assert_eq!(token, field);
    (format!("blog_csrf={token}"), field)
}

async fn send_post(
    client: &reqwest::Client,
    base: &str,
    (cookie, token): &(String, String),
    title: &str,
) -> Response {
    client
        .post(format!("{base}/write"))
        .header(header::ACCEPT, "text/html")
        .header("sec-fetch-site", "same-origin")
        .header(header::COOKIE, format!("blog_dev_user=ada; {cookie}"))
        .form(&[
            ("csrf", token.as_str()),
            ("title", title),
            ("content", "typed **words**"),
        ])
        .send()
        .await
        .unwrap()
}

async fn register_ada(client: &reqwest::Client, base: &str) {
    register_at(client, &format!("{base}/api"), "ada", "Ada").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_opened_before_a_restart_is_taken_after_it() {
    let data = TempDir::new().unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut before = binary!().on_data(data.path()).serve();
    let base = before.base().await;
    register_ada(&client, &base).await;
    let form = open_form(&client, &base, "/write", "ada").await;
    before.terminate().await;

    // No key set: the one kept beside the store signs the restarted server's forms too.
    let mut after = binary!().on_data(data.path()).serve();
    let base = after.base().await;
    let sent = send_post(&client, &base, &form, "written before the restart").await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    let post_path = location(&sent);
    let (post_path, _slug) = post_path.rsplit_once('/').unwrap();
    let post = json_of(client.get(format!("{base}/api{post_path}"))).await;
    assert_eq!(post["title"], "written before the restart");
    after.terminate().await;

    // Another key (a new deployment's): refused once, with what was typed, nothing stored.
    let mut rekeyed = binary!()
        .on_data(data.path())
        .env("BLOG_CSRF_KEY", "a key of another deployment, long enough")
        .serve();
    let base = rekeyed.base().await;
    let refused = send_post(&client, &base, &form, "typed before the deployment").await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let page = parsed(refused).await;
    assert_eq!(
        select_attr(&page, "#title", "value"),
        "typed before the deployment"
    );
    assert_eq!(select_text(&page, "#content"), ["typed **words**"]);
    assert!(!select_text(&page, "main [role=alert]").is_empty());
    let posts = json_of(client.get(format!("{base}/api/users/ada/posts"))).await;
    assert!(
        posts["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["title"] != "typed before the deployment"),
        "nothing stored: {posts}"
    );
    rekeyed.kill();
    testkit::assert_store_verifies(
        &(std::sync::Arc::new(
            cosmos_blog::store::embedded::EmbeddedStore::open_with(
                &data.path().join("blog.sqlite3"),
                Tenancy::Single,
            )
            .unwrap(),
        ) as std::sync::Arc<dyn cosmos_blog::store::Store>),
        WITHIN,
    )
    .await;
}

/// Two instances with one key (as the template sets it) take each other's forms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_sharing_the_key_take_each_others_forms() {
    let key = ("BLOG_CSRF_KEY", "one secret for every instance of the site");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut one = binary!().on_fresh_data().envs(&[key]).serve().ready().await;
    let mut other = binary!().on_fresh_data().envs(&[key]).serve().ready().await;
    let (one_base, other_base) = (one.url(""), other.url(""));
    register_ada(&client, &one_base).await;
    register_ada(&client, &other_base).await;
    let form = open_form(&client, &one_base, "/write", "ada").await;
    let sent = send_post(
        &client,
        &other_base,
        &form,
        "served by one, sent to another",
    )
    .await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    one.kill();
    other.kill();
}
