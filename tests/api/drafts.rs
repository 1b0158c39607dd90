//! Drafts and scheduled posts: C2's `status` and `publishAt`, what the post item carries.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use testkit::{TestApp, operation_tests};

operation_tests!(
    a_post_carries_its_status_and_publication_dates,
    status_and_publish_at_are_validated_and_refusals_store_nothing,
    an_edit_publishes_unpublishes_or_keeps_the_status,
);

/// A date-time `seconds` from now, in the canonical form.
fn in_seconds(seconds: i64) -> String {
    let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds);
    cosmos_blog::domain::Timestamp::normalise(
        &at.format(&time::format_description::well_known::Rfc3339)
            .unwrap(),
    )
    .unwrap()
}

async fn write(app: &TestApp, caller: &str, body: Value) -> reqwest::Response {
    app.send(Method::POST, "/api/posts", Some(caller), Some(body))
        .await
}

async fn edit(app: &TestApp, caller: &str, post_id: &str, body: Value) -> reqwest::Response {
    app.send(
        Method::PUT,
        &format!("/api/posts/{post_id}"),
        Some(caller),
        Some(body),
    )
    .await
}

async fn a_post_carries_its_status_and_publication_dates(app: TestApp) {
    app.register("ada", "Ada").await;
    let published = write(
        &app,
        "ada",
        json!({"title": "t", "content": "c", "status": "published"}),
    )
    .await;
    assert_eq!(published.status(), StatusCode::CREATED);
    let published: Value = published.json().await.unwrap();
    assert_eq!(published["status"], "published");
    assert_eq!(published["publishedDate"], published["creationDate"]);
    assert!(published.get("publishAt").is_none());

    let draft = write(
        &app,
        "ada",
        json!({"title": "t", "content": "c", "status": "draft"}),
    )
    .await;
    assert_eq!(draft.status(), StatusCode::CREATED);
    let draft: Value = draft.json().await.unwrap();
    assert_eq!(draft["status"], "draft");
    assert!(draft.get("publishedDate").is_none() && draft.get("publishAt").is_none());

    let at = in_seconds(3_600);
    let scheduled = write(
        &app,
        "ada",
        json!({"title": "t", "content": "c", "status": "scheduled", "publishAt": at}),
    )
    .await;
    assert_eq!(scheduled.status(), StatusCode::CREATED);
    let scheduled: Value = scheduled.json().await.unwrap();
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
            write(&app, "ada", body.clone()).await,
            edit(&app, "ada", post_id, body.clone()).await,
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
    let draft: Value = write(
        &app,
        "ada",
        json!({"title": "t", "content": "c", "status": "draft"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let post_id = draft["id"].as_str().unwrap();

    // Without a status, an edit keeps the post's.
    let edited = edit(&app, "ada", post_id, json!({"title": "t2", "content": "c"})).await;
    assert_eq!(edited.status(), StatusCode::OK);
    let edited: Value = edited.json().await.unwrap();
    assert_eq!(edited["status"], "draft");

    let published: Value = edit(
        &app,
        "ada",
        post_id,
        json!({"title": "t2", "content": "c", "status": "published"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(published["status"], "published");
    let published_date = published["publishedDate"].as_str().unwrap().to_owned();
    assert!(published_date.as_str() > draft["creationDate"].as_str().unwrap());
    // A status change alone is no edit of the text.
    assert_eq!(published["modifiedDate"], edited["modifiedDate"]);

    // Published again with new text: the date of publication stays.
    let again: Value = edit(
        &app,
        "ada",
        post_id,
        json!({"title": "t3", "content": "c", "status": "published"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(again["publishedDate"], published_date.as_str());

    let unpublished: Value = edit(
        &app,
        "ada",
        post_id,
        json!({"title": "t3", "content": "c", "status": "draft"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(unpublished["status"], "draft");
    assert!(unpublished.get("publishedDate").is_none());

    // Another user may not change the status either.
    app.register("bob", "Bob").await;
    let refused = edit(
        &app,
        "bob",
        post_id,
        json!({"title": "t3", "content": "c", "status": "published"}),
    )
    .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}
