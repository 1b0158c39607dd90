//! The publisher's timer function: a host tick publishes the scheduled posts that are due,
//! once, however often it comes; what is not due waits.

use super::*;

/// A post of u-ada scheduled for `publish_at`, as C2 stores it.
fn scheduled_post(id: &str, publish_at: &str) -> Value {
    json!({
        "id": id, "type": "post", "postId": id, "userId": "u-ada", "userUsername": "ada",
        "title": format!("Scheduled {id}"), "content": "later", "commentCount": 0,
        "likeCount": 0, "creationDate": "2026-11-22T09:00:00.0000000Z",
        "status": "scheduled", "publishAt": publish_at, "tags": ["rust"]
    })
}

/// The change-feed batch the host would send for `documents` (double-encoded, as it does).
fn batch(documents: &[Value]) -> Vec<u8> {
    let inner = serde_json::to_string(documents).expect("documents");
    let body = json!({
        "Data": {"documents": serde_json::to_string(&inner).expect("encoded")},
        "Metadata": {"sys": {"MethodName": "OnPostChanged", "UtcNow": "2026-11-22T09:15:00Z"}}
    });
    serde_json::to_vec(&body).expect("body")
}

/// One replayed tick of the timer; its log lines.
async fn tick(h: &Harness) -> Vec<String> {
    let (status, content_type, body) = h
        .invoke("PublishScheduled", fixture("recheck_timer.json"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(body["Outputs"], json!({}));
    logs(&body)
}

/// The posts as they are stored now, delivered to `OnPostChanged` as the change feed would.
async fn deliver_posts(h: &Harness, ids: &[&str]) {
    let store = h.dyn_store();
    let mut documents = Vec::new();
    for id in ids {
        let item = store
            .read_item(Container::Posts, &PartitionKey::single(*id), id)
            .await
            .expect("read")
            .expect("the post");
        documents.push(item.item);
    }
    let (status, _, body) = h.invoke("OnPostChanged", batch(&documents)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn publish_timer_ticks_publish_what_is_due_once() {
    let h = Harness::new();
    let store = h.dyn_store();
    h.store_ada().await;
    for post in [
        scheduled_post("p-due", "2026-01-01T00:00:00.0000000Z"),
        scheduled_post("p-later", "2099-01-01T00:00:00.0000000Z"),
    ] {
        let id = post["id"].as_str().expect("id").to_owned();
        store
            .upsert_item(Container::Posts, &PartitionKey::single(&id), post)
            .await
            .expect("post");
    }
    // The change feed files both in the schedule; neither is in a list yet.
    deliver_posts(&h, &["p-due", "p-later"]).await;
    assert!(ids(&h.get("/api/feed").await).is_empty());

    assert_eq!(
        tick(&h).await[0],
        "PublishScheduled: 1 published, 0 done already"
    );
    // The published post's change reaches the lists through the change feed.
    deliver_posts(&h, &["p-due"]).await;
    assert_eq!(ids(&h.get("/api/feed").await), ["p-due"]);
    assert_eq!(ids(&h.get("/api/tags/rust/posts").await), ["p-due"]);
    let post = h.get("/api/posts/p-due").await;
    assert_eq!(post["status"], "published");
    assert!(post.get("publishAt").is_none(), "{post}");

    // Ticks again: nothing more is due, and the later post still waits.
    assert_eq!(
        tick(&h).await[0],
        "PublishScheduled: 0 published, 0 done already"
    );
    assert_eq!(ids(&h.get("/api/feed").await), ["p-due"]);
    let report = cosmos_blog::verify::verify(&store).await.expect("verify");
    assert!(report.holds(), "{}", report.violation_lines(10).join("\n"));
}
