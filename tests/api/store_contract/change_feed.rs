//! The change feed: resumed from its checkpoint, latest version once, bounded pages.

use super::*;

async fn change_feed_resumes_from_its_checkpoint(store: Arc<dyn Store>) {
    let (initial, checkpoint) = drain_changes(&store, Container::Users, None, 100).await;
    assert!(initial.is_empty());

    for n in 1..=3u32 {
        let id = format!("u{n}");
        store
            .create_item(
                Container::Users,
                &PartitionKey::single(id.as_str()),
                json!({"id": id, "type": "user", "userId": id, "username": format!("user {n}")}),
            )
            .await
            .expect("user");
    }
    let (changes, checkpoint) = drain_changes(&store, Container::Users, checkpoint, 100).await;
    let mut changed = ids(&changes);
    changed.sort();
    assert_eq!(changed, ["u1", "u2", "u3"]);
    for item in &changes {
        for field in ["_etag", "_ts"] {
            assert!(item.get(field).is_some(), "{field} missing from {item}");
        }
        // The service puts `_lsn` on every change; the SDK's in-memory emulator does not
        // (nor in the change's metadata), so only the embedded store is held to it here.
        if store.backend() == "embedded" {
            assert!(item.get("_lsn").is_some(), "_lsn missing from {item}");
        }
    }

    // Nothing new: nothing delivered, however often one asks.
    let (again, checkpoint) = drain_changes(&store, Container::Users, checkpoint, 100).await;
    assert!(again.is_empty(), "already delivered: {again:?}");

    store
        .upsert_item(
            Container::Users,
            &PartitionKey::single("u2"),
            json!({"id": "u2", "type": "user", "userId": "u2", "username": "renamed"}),
        )
        .await
        .expect("rename");
    let (renamed, _) = drain_changes(&store, Container::Users, checkpoint, 100).await;
    assert_eq!(ids(&renamed), ["u2"]);
    assert_eq!(renamed[0]["username"], "renamed");
}

async fn change_feed_delivers_the_latest_version_once(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    let mut item = post("p1", "u1", "ada", &date(1));
    store
        .create_item(Container::Posts, &pk, item.clone())
        .await
        .expect("create");
    for count in 1..=3 {
        item["likeCount"] = json!(count);
        store
            .upsert_item(Container::Posts, &pk, item.clone())
            .await
            .expect("update");
    }
    let (changes, _) = drain_changes(&store, Container::Posts, None, 100).await;
    assert_eq!(ids(&changes), ["p1"], "one item, once");
    assert_eq!(changes[0]["likeCount"], 3, "its latest version");
}

async fn change_feed_pages_are_bounded(store: Arc<dyn Store>) {
    for n in 0..7u32 {
        let id = format!("p{n}");
        store
            .create_item(
                Container::Posts,
                &PartitionKey::single(id.as_str()),
                post(&id, "u1", "ada", &date(n)),
            )
            .await
            .expect("post");
    }
    let (changes, _) = drain_changes(&store, Container::Posts, None, 2).await;
    let mut changed = ids(&changes);
    changed.sort();
    assert_eq!(
        changed,
        ["p0", "p1", "p2", "p3", "p4", "p5", "p6"],
        "each once"
    );
}

contract_tests!(
    change_feed_resumes_from_its_checkpoint,
    change_feed_delivers_the_latest_version_once,
    change_feed_pages_are_bounded,
);
