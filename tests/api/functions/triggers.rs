//! The change-feed triggers: the host's batches replayed byte for byte, answered and copied.

use super::*;

#[tokio::test]
async fn on_post_changed_answers_the_host_and_copies_posts() {
    let h = Harness::new();
    // A user copy and a feed copy each, and the month's archive: four copies, its count and
    // its index entry.
    let body = h
        .deliver(
            "OnPostChanged",
            "on_post_changed.json",
            "OnPostChanged: 4 processed, 14 written, 0 skipped",
        )
        .await;
    assert_eq!(body["Outputs"], json!({}));
    assert_eq!(body["ReturnValue"], Value::Null);

    let feed = h.get("/api/feed").await;
    assert_eq!(ids(&feed), ["p-c", "p-d", "p-b", "p-a"]);
    let mine = h.get("/api/users/u-ada/posts").await;
    assert_eq!(ids(&mine), ["p-c", "p-d", "p-b", "p-a"]);
}

#[tokio::test]
async fn dates_reformatted_by_the_host_come_out_canonical() {
    let h = Harness::new();
    h.invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    let expected = [
        ("p-c", "2026-11-22T09:15:03.0000000Z"),
        ("p-d", "2026-11-22T09:15:02.5000000Z"),
        ("p-b", "2026-11-22T09:15:02.1234567Z"),
        ("p-a", "2026-11-22T09:15:02.1200000Z"),
    ];
    for page in [
        h.get("/api/feed").await,
        h.get("/api/users/u-ada/posts").await,
    ] {
        let got: Vec<(String, String)> = page["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().unwrap_or_default().to_owned(),
                    p["creationDate"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = expected
            .iter()
            .map(|(id, date)| (id.to_string(), date.to_string()))
            .collect();
        assert_eq!(got, want);
    }
    // Copies carry no system properties and the text survives both layers of escaping.
    let feed = h.get("/api/feed").await;
    let a = &feed["items"][3];
    assert_eq!(
        a["content"],
        "Dawn over the harbour, café au lait ☕ and \"quotes\"."
    );
    assert!(a.get("_etag").is_none() && a.get("_lsn").is_none());
}

#[tokio::test]
async fn redelivering_a_batch_changes_nothing() {
    let h = Harness::new();
    h.invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    let users_log = h.changes(Container::Users).await;
    let feed_log = h.changes(Container::Feed).await;
    let feed = h.get("/api/feed").await;

    h.deliver(
        "OnPostChanged",
        "on_post_changed.json",
        "OnPostChanged: 4 processed, 0 written, 0 skipped",
    )
    .await;
    // Not one write: the change logs (with etags and positions) are exactly as before.
    assert_eq!(h.changes(Container::Users).await, users_log);
    assert_eq!(h.changes(Container::Feed).await, feed_log);
    assert_eq!(h.get("/api/feed").await, feed);
}

#[tokio::test]
async fn an_invalid_document_is_logged_and_skipped_without_losing_the_others() {
    let h = Harness::new();
    // A user copy and a feed copy each; two archive copies, the month's count and index entry.
    let body = h
        .deliver(
            "OnPostChanged",
            "on_post_changed_with_invalid_document.json",
            "OnPostChanged: 2 processed, 8 written, 1 skipped",
        )
        .await;
    let logs = logs(&body);
    assert!(
        logs[1].starts_with("OnPostChanged: skipped post \"p-bad\""),
        "{logs:?}"
    );
    assert_eq!(ids(&h.get("/api/feed").await), ["p-f", "p-e"]);
}

#[tokio::test]
async fn on_user_changed_renames_the_users_items() {
    let h = Harness::new();
    let store = h.dyn_store();
    let pk = PartitionKey::single("p-a");
    for item in [
        json!({"id": "p-a", "type": "post", "postId": "p-a", "userId": "u-ada",
               "userUsername": "ada", "title": "First light", "content": "Dawn",
               "commentCount": 1, "likeCount": 0,
               "creationDate": "2026-11-22T09:15:02.1200000Z"}),
        json!({"id": "c-1", "type": "comment", "postId": "p-a", "userId": "u-ada",
               "userUsername": "ada", "content": "Replying to myself",
               "creationDate": "2026-11-22T09:16:00.0000000Z"}),
    ] {
        store
            .upsert_item(Container::Posts, &pk, item)
            .await
            .expect("seed");
    }
    h.deliver(
        "OnUserChanged",
        "on_user_changed.json",
        "OnUserChanged: 1 processed, 2 written, 0 skipped",
    )
    .await;
    assert_eq!(
        h.get("/api/posts/p-a").await["userUsername"],
        "ada.lovelace"
    );
    let comments = h.get("/api/posts/p-a/comments").await;
    assert_eq!(comments["items"][0]["userUsername"], "ada.lovelace");

    h.deliver(
        "OnUserChanged",
        "on_user_changed.json",
        "OnUserChanged: 1 processed, 0 written, 0 skipped",
    )
    .await;
}

#[tokio::test]
async fn a_plain_array_of_documents_is_accepted() {
    let h = Harness::new();
    let body = json!({
        "Data": {"documents": [{
            "id": "p-x", "type": "post", "postId": "p-x", "userId": "u-ada",
            "userUsername": "ada", "title": "Plain", "content": "No encoding",
            "commentCount": 0, "likeCount": 0, "creationDate": "2026-11-22T09:15:02Z",
            "_rid": "9TZrALpFOV8BAAAAAAAAAA==", "_etag": "\"00000000-0000-0000-0000-000000000000\"",
            "_ts": 1795338902, "_lsn": 5
        }]},
        "Metadata": {"sys": {"MethodName": "OnPostChanged",
            "UtcNow": "2026-11-22T09:15:03Z", "RandGuid": "35e6e68c-5583-436c-a277-5aec2b416ba8"}}
    });
    let (status, _, _) = h.invoke("OnPostChanged", body.to_string().into()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&h.get("/api/feed").await), ["p-x"]);
}

#[tokio::test]
async fn an_undecodable_body_is_a_bad_request() {
    let h = Harness::new();
    for body in [
        "not json at all".to_owned(),
        json!({"Metadata": {}}).to_string(),
        json!({"Data": {}}).to_string(),
        json!({"Data": {"documents": "\"[{\\\"id\\\": "}}).to_string(),
        json!({"Data": {"documents": {"id": "p-a"}}}).to_string(),
    ] {
        let (status, content_type, problem) = h.invoke("OnPostChanged", body.clone().into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(content_type, "application/problem+json");
        assert_eq!(problem["code"], "invalid-invocation");
    }
}

#[tokio::test]
async fn a_transient_store_failure_fails_the_invocation_so_the_host_retries() {
    let h = Harness::new();
    h.store.down.store(true, Ordering::SeqCst);
    let (status, content_type, problem) = h
        .invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(content_type, "application/problem+json");
    assert!(
        !problem.to_string().contains("test: store is down"),
        "internals leaked"
    );
    let (status, _, _) = h
        .invoke("OnUserChanged", fixture("on_user_changed.json"))
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);

    // The host's retry delivers the same batch once the store is back.
    h.store.down.store(false, Ordering::SeqCst);
    let (status, _, _) = h
        .invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&h.get("/api/feed").await), ["p-c", "p-d", "p-b", "p-a"]);
}
