//! Drafts and scheduled posts: C2's `status` and `publishAt`, what the post item carries,
//! who sees an unpublished post, the drafts list, the lists' order by `publishedDate`, and
//! publication at the scheduled time with no request.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use testkit::{TestApp, eventually, ids, operation_tests};

operation_tests!(
    a_post_carries_its_status_and_publication_dates,
    status_and_publish_at_are_validated_and_refusals_store_nothing,
    an_edit_publishes_unpublishes_or_keeps_the_status,
    an_unpublished_posts_comments_and_likes_are_its_authors_alone,
    a_later_page_outlives_no_unpublishing_and_no_delete,
    strangers_writes_to_an_unpublished_post_answer_as_for_no_post,
);

/// A date-time `seconds` from now, in the canonical form.
pub(crate) fn in_seconds(seconds: i64) -> String {
    let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds);
    cosmos_blog::domain::Timestamp::normalise(
        &at.format(&time::format_description::well_known::Rfc3339)
            .unwrap(),
    )
    .unwrap()
}

async fn a_post_carries_its_status_and_publication_dates(app: TestApp) {
    app.register("ada", "Ada").await;
    let published = new_post(&app, "ada", "t", json!({"status": "published"})).await;
    assert_eq!(published["status"], "published");
    assert_eq!(published["publishedDate"], published["creationDate"]);
    assert!(published.get("publishAt").is_none());

    let draft = new_post(&app, "ada", "t", json!({"status": "draft"})).await;
    assert_eq!(draft["status"], "draft");
    assert!(draft.get("publishedDate").is_none() && draft.get("publishAt").is_none());

    let at = in_seconds(3_600);
    let scheduled = new_post(
        &app,
        "ada",
        "t",
        json!({"status": "scheduled", "publishAt": at}),
    )
    .await;
    assert_eq!(scheduled["status"], "scheduled");
    assert_eq!(scheduled["publishAt"], at.as_str());
    assert!(scheduled.get("publishedDate").is_none());
}

async fn status_and_publish_at_are_validated_and_refusals_store_nothing(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "kept", "as it was").await;
    let post_id = post["id"].as_str().unwrap();
    let cases = [
        (json!({"status": "Draft"}), "status"),
        (json!({"status": "hidden"}), "status"),
        (json!({"status": 3}), ""),
        (json!({"status": "scheduled"}), "publishAt"),
        (
            json!({"status": "scheduled", "publishAt": "tomorrow"}),
            "publishAt",
        ),
        (
            json!({"status": "scheduled", "publishAt": in_seconds(-60)}),
            "publishAt",
        ),
        (
            json!({"status": "draft", "publishAt": in_seconds(3_600)}),
            "publishAt",
        ),
        (json!({"publishAt": in_seconds(3_600)}), "publishAt"),
    ];
    for (fields, field) in cases {
        let mut body = json!({"title": "t", "content": "c"});
        for (key, value) in fields.as_object().unwrap() {
            body[key] = value.clone();
        }
        for response in [
            app.write_post("ada", body.clone()).await,
            app.edit_post("ada", post_id, body.clone()).await,
        ] {
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
            let problem: Value = response.json().await.unwrap();
            if !field.is_empty() {
                assert_eq!(problem["code"], "invalid-field", "{problem}");
                assert!(
                    problem["detail"].as_str().unwrap().contains(field),
                    "{problem}"
                );
            }
        }
    }
    let posts = app.all_pages("/api/users/ada/posts", 100).await;
    assert!(posts.len() <= 1, "{posts:?}");
    assert_eq!(app.get_json(&format!("/api/posts/{post_id}")).await, post);
}

async fn an_edit_publishes_unpublishes_or_keeps_the_status(app: TestApp) {
    app.register("ada", "Ada").await;
    let draft = new_post(&app, "ada", "t", json!({"status": "draft"})).await;
    let post_id = draft["id"].as_str().unwrap();

    // Without a status, an edit keeps the post's.
    let edited = app
        .edited("ada", post_id, json!({"title": "t2", "content": "c"}))
        .await;
    assert_eq!(edited["status"], "draft");

    let published = app
        .edited(
            "ada",
            post_id,
            json!({"title": "t2", "content": "c", "status": "published"}),
        )
        .await;
    assert_eq!(published["status"], "published");
    let published_date = published["publishedDate"].as_str().unwrap().to_owned();
    assert!(published_date.as_str() > draft["creationDate"].as_str().unwrap());
    // A status change alone is no edit of the text.
    assert_eq!(published["modifiedDate"], edited["modifiedDate"]);

    // Published again with new text: the date of publication stays.
    let again = app
        .edited(
            "ada",
            post_id,
            json!({"title": "t3", "content": "c", "status": "published"}),
        )
        .await;
    assert_eq!(again["publishedDate"], published_date.as_str());

    let unpublished = app
        .edited(
            "ada",
            post_id,
            json!({"title": "t3", "content": "c", "status": "draft"}),
        )
        .await;
    assert_eq!(unpublished["status"], "draft");
    assert!(unpublished.get("publishedDate").is_none());

    // Another user may not change the status either: of a draft, which is not theirs to
    // see, they are told there is no such post; of a published post, that it is not theirs.
    app.register("bob", "Bob").await;
    let body = json!({"title": "t3", "content": "c", "status": "published"});
    let refused = app.edit_post("bob", post_id, body.clone()).await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    set_status(&app, post_id, "t3", "published").await;
    let refused = app.edit_post("bob", post_id, body).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}

/// What a stranger's write about post `target` is answered: its status and problem code.
async fn strangers_writes(
    app: &TestApp,
    target: &str,
    comment_id: &str,
) -> Vec<(String, StatusCode, Value)> {
    let post = format!("/api/posts/{target}");
    let writes = [
        (
            Method::PUT,
            post.clone(),
            Some(json!({"title": "t", "content": "c"})),
        ),
        (Method::DELETE, post.clone(), None),
        (Method::POST, format!("{post}/likes"), None),
        (Method::DELETE, format!("{post}/likes"), None),
        (
            Method::POST,
            format!("{post}/comments"),
            Some(json!({"content": "hi"})),
        ),
        (
            Method::DELETE,
            format!("{post}/comments/{comment_id}"),
            None,
        ),
    ];
    let mut answers = Vec::new();
    for (method, path, body) in writes {
        let response = app.send(method.clone(), &path, Some("bob"), body).await;
        let status = response.status();
        let problem: Value = response.json().await.unwrap_or(Value::Null);
        answers.push((format!("{method} {path}"), status, problem["code"].clone()));
    }
    answers
}

/// A stranger's writes to a draft or scheduled post (edit, delete, like, unlike, comment,
/// delete the author's comment) are answered exactly as for a post that never was, so that
/// no write tells more than a read; and none of them changes anything.
async fn strangers_writes_to_an_unpublished_post_answer_as_for_no_post(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let post = new_post(&app, "ada", "soon hidden", json!({})).await;
    let id = post["id"].as_str().unwrap().to_owned();
    let authors = app.commented("ada", &id, "the author's remark").await;
    let authors = authors["id"].as_str().unwrap().to_owned();
    let bobs = app.commented("bob", &id, "a remark of bob's").await;
    let bobs = bobs["id"].as_str().unwrap().to_owned();
    app.liked("bob", &id).await;
    let never = "3f0c7e3e-8a5b-4e59-9d3c-2f4d1c6a7b80";
    let unpublished = [
        json!({"status": "draft"}),
        json!({"status": "scheduled", "publishAt": in_seconds(3_600)}),
    ];
    for status in unpublished {
        let mut body = json!({"title": "soon hidden", "content": "soon hidden body"});
        body.as_object_mut()
            .unwrap()
            .extend(status.as_object().unwrap().clone());
        app.edited("ada", &id, body).await;
        let on_hidden = strangers_writes(&app, &id, &authors).await;
        let on_nothing = strangers_writes(&app, never, &authors).await;
        for ((write, status, code), (_, never_status, never_code)) in
            on_hidden.iter().zip(&on_nothing)
        {
            assert_eq!(*status, StatusCode::NOT_FOUND, "{write}: {code}");
            assert_eq!(
                (status, code),
                (never_status, never_code),
                "{write} as for no post"
            );
        }
        // Bob's own comment is his to know of, but not the post: still no such post.
        let own = app
            .delete_as("bob", &format!("/api/posts/{id}/comments/{bobs}"))
            .await;
        assert_eq!(own.status(), StatusCode::NOT_FOUND);
        let problem: Value = own.json().await.unwrap();
        assert_eq!(problem["code"], "post-not-found", "{problem}");
        // Nothing changed: the post, its two comments and bob's like are as they were.
        let seen = app.get_json_as("ada", &format!("/api/posts/{id}")).await;
        assert_eq!(
            (&seen["title"], &seen["commentCount"], &seen["likeCount"]),
            (&json!("soon hidden"), &json!(2), &json!(1)),
            "{seen}"
        );
    }
    // Published again, the post is bob's to see: his like is his to take back, and the post
    // is not his to edit.
    set_status(&app, &id, "soon hidden", "published").await;
    let unlike = app
        .delete_as("bob", &format!("/api/posts/{id}/likes"))
        .await;
    assert_eq!(unlike.status(), StatusCode::NO_CONTENT);
    let edit = app
        .edit_post("bob", &id, json!({"title": "t", "content": "c"}))
        .await;
    assert_eq!(edit.status(), StatusCode::FORBIDDEN);
    app.assert_verifies().await;
}

/// Runs each named test body on both backends in both layouts, on an application that
/// publishes scheduled posts every 200 ms.
macro_rules! publishing_tests {
    ($($name:ident),* $(,)?) => {
        mod publishing {
            use cosmos_blog::store::Tenancy;
            use testkit::{Backend, TestApp};

            async fn spawn(backend: Backend, tenancy: Tenancy) -> TestApp {
                TestApp::spawn(backend)
                    .layout(tenancy)
                    .settings(|settings| settings.publish_step_ms = 200)
                    .start()
                    .await
            }
            $(
                mod $name {
                    use super::*;

                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn embedded() {
                        super::super::$name(spawn(Backend::Embedded, Tenancy::Single).await).await;
                    }

                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn cosmos() {
                        super::super::$name(spawn(Backend::Cosmos, Tenancy::Single).await).await;
                    }

                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn multi_embedded() {
                        super::super::$name(spawn(Backend::Embedded, Tenancy::Multi).await).await;
                    }

                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn multi_cosmos() {
                        super::super::$name(spawn(Backend::Cosmos, Tenancy::Multi).await).await;
                    }
                }
            )*
        }
    };
}

publishing_tests!(
    unpublished_posts_are_seen_by_their_author_alone,
    a_late_publication_tops_the_lists_and_unpublishing_takes_the_post_out,
    a_scheduled_post_publishes_itself_at_its_time,
);

const WITHIN: Duration = Duration::from_secs(30);

async fn new_post(app: &TestApp, caller: &str, title: &str, extra: Value) -> Value {
    let mut body = json!({"title": title, "content": format!("{title} body")});
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    app.written(caller, body).await
}

/// Edits ada's post `id` to `status` alone: the title and text stay as [`new_post`] wrote
/// them, so the edit is a change of status and nothing else.
async fn set_status(app: &TestApp, id: &str, title: &str, status: &str) -> Value {
    let body = json!({"title": title, "content": format!("{title} body"), "status": status});
    app.edited("ada", id, body).await
}

async fn get_as(app: &TestApp, caller: Option<&str>, path: &str) -> reqwest::Response {
    app.send(Method::GET, path, caller, None).await
}

/// What an unpublished post shows at `path` to anyone but its author (no one signed in, and
/// bob): the 404 `post-not-found` Q2 answers for a post that does not exist, so a stranger
/// cannot tell a draft from nothing, and not a word of `secret`.
async fn assert_hidden_from_strangers(app: &TestApp, path: &str, secret: &str) {
    for stranger in [None, Some("bob")] {
        let response = get_as(app, stranger, path).await;
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "{path} {stranger:?}"
        );
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["code"], "post-not-found", "{problem}");
        assert!(!problem.to_string().contains(secret), "{problem}");
    }
}

/// The ids of a list's first page as `caller` reads it.
async fn listed(app: &TestApp, caller: Option<&str>, path: &str) -> Vec<String> {
    let response = get_as(app, caller, path).await;
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    let page: Value = response.json().await.unwrap();
    ids(page["items"].as_array().unwrap())
}

async fn unpublished_posts_are_seen_by_their_author_alone(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let draft = new_post(&app, "ada", "draft", json!({"status": "draft"})).await;
    let scheduled = new_post(
        &app,
        "ada",
        "scheduled",
        json!({"status": "scheduled", "publishAt": in_seconds(3_600)}),
    )
    .await;
    let published = new_post(&app, "ada", "published", json!({})).await;
    let (draft_id, scheduled_id) = (
        draft["id"].as_str().unwrap(),
        scheduled["id"].as_str().unwrap(),
    );
    let published_id = published["id"].as_str().unwrap().to_owned();

    for id in [draft_id, scheduled_id] {
        let path = format!("/api/posts/{id}");
        assert_hidden_from_strangers(&app, &path, "draft body").await;
        let own = get_as(&app, Some("ada"), &path).await;
        assert_eq!(own.status(), StatusCode::OK);
        for caller in ["bob", "ada"] {
            assert_eq!(
                app.comment(caller, id, "hi").await.status(),
                StatusCode::NOT_FOUND
            );
            assert_eq!(app.like(caller, id).await.status(), StatusCode::NOT_FOUND);
        }
    }
    // The published post's copies arrive; the others never do.
    eventually(WITHIN, || async {
        let feed = listed(&app, None, "/api/feed").await;
        let posts = listed(&app, None, "/api/users/ada/posts").await;
        let drafts = listed(&app, Some("ada"), "/api/users/ada/drafts").await;
        (feed == [published_id.clone()]
            && posts == [published_id.clone()]
            && drafts == [scheduled_id.to_owned(), draft_id.to_owned()])
        .then_some(())
    })
    .await;
    let drafts = get_as(&app, None, "/api/users/ada/drafts").await;
    assert_eq!(drafts.status(), StatusCode::UNAUTHORIZED);
    let drafts = get_as(&app, Some("bob"), "/api/users/ada/drafts").await;
    assert_eq!(drafts.status(), StatusCode::FORBIDDEN);
    assert!(
        listed(&app, Some("bob"), "/api/users/bob/drafts")
            .await
            .is_empty()
    );
    // Paged like Q3.
    let paged = app
        .send(
            Method::GET,
            "/api/users/ada/drafts?limit=1",
            Some("ada"),
            None,
        )
        .await;
    let page: Value = paged.json().await.unwrap();
    assert_eq!(ids(page["items"].as_array().unwrap()), [scheduled_id]);
    assert!(page["continuation"].is_string());
    app.assert_verifies().await;
}

async fn a_late_publication_tops_the_lists_and_unpublishing_takes_the_post_out(app: TestApp) {
    app.register("ada", "Ada").await;
    let draft = new_post(&app, "ada", "written first", json!({"status": "draft"})).await;
    let draft_id = draft["id"].as_str().unwrap().to_owned();
    let first = new_post(&app, "ada", "one", json!({})).await;
    let second = new_post(&app, "ada", "two", json!({})).await;
    let (first_id, second_id) = (
        first["id"].as_str().unwrap().to_owned(),
        second["id"].as_str().unwrap().to_owned(),
    );
    let lists = ["/api/feed", "/api/users/ada/posts"];
    let expect = |wanted: Vec<String>| {
        let app = &app;
        async move {
            eventually(WITHIN, || {
                let wanted = wanted.clone();
                async move {
                    for path in lists {
                        if listed(app, None, path).await != wanted {
                            return None;
                        }
                    }
                    Some(())
                }
            })
            .await
        }
    };
    expect(vec![second_id.clone(), first_id.clone()]).await;

    let out = set_status(&app, &draft_id, "written first", "published").await;
    assert!(out["publishedDate"].as_str() > second["creationDate"].as_str());
    expect(vec![draft_id.clone(), second_id.clone(), first_id.clone()]).await;
    app.assert_verifies().await;

    // Back to draft: out of every list, and the others keep their order.
    set_status(&app, &draft_id, "written first", "draft").await;
    expect(vec![second_id.clone(), first_id.clone()]).await;
    assert_eq!(
        get_as(&app, None, &format!("/api/posts/{draft_id}"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    eventually(WITHIN, || async {
        (listed(&app, Some("ada"), "/api/users/ada/drafts").await == [draft_id.clone()])
            .then_some(())
    })
    .await;
    app.assert_verifies().await;
}

async fn a_scheduled_post_publishes_itself_at_its_time(app: TestApp) {
    app.register("ada", "Ada").await;
    let at = in_seconds(3);
    let scheduled = new_post(
        &app,
        "ada",
        "soon",
        json!({"status": "scheduled", "publishAt": at}),
    )
    .await;
    let id = scheduled["id"].as_str().unwrap().to_owned();
    let path = format!("/api/posts/{id}");
    assert_eq!(
        get_as(&app, None, &path).await.status(),
        StatusCode::NOT_FOUND
    );
    let published = eventually(WITHIN, || async {
        let response = get_as(&app, None, &path).await;
        (response.status() == StatusCode::OK).then_some(())?;
        response.json::<Value>().await.ok()
    })
    .await;
    assert_eq!(published["status"], "published");
    assert_eq!(published["publishedDate"], at.as_str());
    assert!(published.get("publishAt").is_none());
    eventually(WITHIN, || async {
        let feed = listed(&app, None, "/api/feed").await;
        let drafts = listed(&app, Some("ada"), "/api/users/ada/drafts").await;
        (feed == [id.clone()] && drafts.is_empty()).then_some(())
    })
    .await;
    // The publisher runs again and again: nothing changes.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(app.get_json(&path).await, published);
    app.assert_verifies().await;
}

/// Q4 and Q5 of a post put back to `draft`: 404 to anyone but its author, as Q2 answers,
/// without a word of its comments; its author still lists them; published again, everyone
/// does.
async fn an_unpublished_posts_comments_and_likes_are_its_authors_alone(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let post = new_post(&app, "ada", "soon hidden", json!({})).await;
    let id = post["id"].as_str().unwrap().to_owned();
    app.commented("bob", &id, "a secret remark").await;
    app.liked("bob", &id).await;
    let (comments, likes) = (
        format!("/api/posts/{id}/comments"),
        format!("/api/posts/{id}/likes"),
    );
    set_status(&app, &id, "soon hidden", "draft").await;

    for path in [&comments, &likes] {
        assert_hidden_from_strangers(&app, path, "secret").await;
        assert_eq!(listed(&app, Some("ada"), path).await.len(), 1, "{path}");
        // The author's page is not kept for anyone else.
        let again = get_as(&app, Some("bob"), path).await;
        assert_eq!(again.status(), StatusCode::NOT_FOUND, "{path}");
    }

    set_status(&app, &id, "soon hidden", "published").await;
    for path in [&comments, &likes] {
        for reader in [None, Some("bob"), Some("ada")] {
            assert_eq!(
                listed(&app, reader, path).await.len(),
                1,
                "{path} {reader:?}"
            );
        }
    }
    app.assert_verifies().await;
}

/// The second page of Q4 and Q5, reached with a token taken while the post was published:
/// once the post is put back to `draft`, 404 to anyone but its author (the token does not
/// outlive the publication), whether the page was kept or not; once deleted, 404 to all.
async fn a_later_page_outlives_no_unpublishing_and_no_delete(app: TestApp) {
    for user in ["ada", "bob", "cy"] {
        app.register(user, user).await;
    }
    let post = new_post(&app, "ada", "soon hidden", json!({})).await;
    let id = post["id"].as_str().unwrap().to_owned();
    for reader in ["bob", "cy"] {
        let remark = format!("a secret remark of {reader}");
        app.commented(reader, &id, &remark).await;
        app.liked(reader, &id).await;
    }
    let mut later_pages = Vec::new();
    for list in ["comments", "likes"] {
        let first = get_as(&app, None, &format!("/api/posts/{id}/{list}?limit=1")).await;
        assert_eq!(first.status(), StatusCode::OK, "{list}");
        let first: Value = first.json().await.unwrap();
        let token = first["continuation"].as_str().expect("a second page");
        let path = format!("/api/posts/{id}/{list}?limit=1&continuation={token}");
        // Read twice while published: the second answer may be the kept page.
        for _ in 0..2 {
            assert_eq!(listed(&app, None, &path).await.len(), 1, "{path}");
        }
        later_pages.push(path);
    }

    set_status(&app, &id, "soon hidden", "draft").await;
    for path in &later_pages {
        assert_hidden_from_strangers(&app, path, "secret").await;
        assert_eq!(listed(&app, Some("ada"), path).await.len(), 1, "{path}");
    }

    let response = app.delete_as("ada", &format!("/api/posts/{id}")).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    for path in &later_pages {
        for reader in [None, Some("ada")] {
            let response = get_as(&app, reader, path).await;
            assert_eq!(
                response.status(),
                StatusCode::NOT_FOUND,
                "{path} {reader:?}"
            );
        }
    }
    app.assert_verifies().await;
}
