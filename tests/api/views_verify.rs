//! The views (`tags`, `archive`) under `verify`: drafts stay out of them, unpublishing and
//! publishing move posts in and out, and every damage done by hand is found and repaired.

use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::domain::Timestamp;
use cosmos_blog::store::{Container, PartitionKey, Store};
use cosmos_blog::verify::{ViolationKind, verify, verify_and_repair};
use serde_json::{Value, json};

use testkit::{TestApp, eventually, ids, operation_tests};

use crate::tags::tagged_post;

operation_tests!(
    drafts_stay_out_of_the_views_until_published,
    verify_finds_and_repairs_every_damage_to_the_views,
);

fn this_month() -> (String, String) {
    let now = Timestamp::now().to_string();
    (now[..4].to_owned(), now[5..7].to_owned())
}

/// Waits until `path` lists `expected` (ids).
async fn lists(app: &TestApp, path: &str, expected: &[&str]) {
    eventually(Duration::from_secs(30), || async {
        let page = app.get_json(path).await;
        (ids(page["items"].as_array().unwrap()) == expected).then_some(())
    })
    .await;
}

/// Damages a copy behind the change feed's back: the item at `(container, partition, id)`,
/// changed by `change`, written to `to` (its own partition, or another).
async fn rewrite(
    store: &Arc<dyn Store>,
    (container, partition, id): (Container, PartitionKey, &str),
    to: &PartitionKey,
    change: impl FnOnce(&mut Value),
) {
    let mut item = store
        .read_item(container, &partition, id)
        .await
        .unwrap()
        .unwrap()
        .item;
    change(&mut item);
    store.upsert_item(container, to, item).await.unwrap();
}

async fn drafts_stay_out_of_the_views_until_published(app: TestApp) {
    app.register("ada", "Ada").await;
    let (year, month) = this_month();
    let month_path = format!("/api/archive/{year}/{month}/posts");
    let published = tagged_post(&app, "ada", "out", json!(["rust"])).await;
    let published = published["id"].as_str().unwrap().to_owned();
    let draft = app
        .written(
            "ada",
            json!({"title": "draft", "content": "x", "tags": ["rust"], "status": "draft"}),
        )
        .await;
    let draft = draft["id"].as_str().unwrap().to_owned();
    lists(&app, "/api/tags/rust/posts", &[&published]).await;
    lists(&app, &month_path, &[&published]).await;
    app.assert_verifies().await;
    let archive = app.get_json("/api/archive").await;
    assert_eq!(archive["items"][0]["postCount"], 1);

    // Published today, the draft comes first; put back to draft, the other leaves every view.
    app.edited(
        "ada",
        &draft,
        json!({"title": "draft", "content": "x", "status": "published"}),
    )
    .await;
    lists(&app, "/api/tags/rust/posts", &[&draft, &published]).await;
    lists(&app, &month_path, &[&draft, &published]).await;
    app.edited(
        "ada",
        &published,
        json!({"title": "out", "content": "x", "status": "draft"}),
    )
    .await;
    lists(&app, "/api/tags/rust/posts", &[&draft]).await;
    lists(&app, &month_path, &[&draft]).await;
    eventually(Duration::from_secs(30), || async {
        let archive = app.get_json("/api/archive").await;
        (archive["items"][0]["postCount"] == 1).then_some(())
    })
    .await;
    app.assert_verifies().await;
}

async fn verify_finds_and_repairs_every_damage_to_the_views(app: TestApp) {
    app.register("ada", "Ada").await;
    let (year, month) = this_month();
    let key = format!("{year}-{month}");
    let a = tagged_post(&app, "ada", "a", json!(["rust", "db"])).await;
    let b = tagged_post(&app, "ada", "b", json!(["rust"])).await;
    let (a, b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    lists(&app, "/api/tags/db/posts", &[a]).await;
    lists(&app, &format!("/api/archive/{year}/{month}/posts"), &[b, a]).await;
    app.assert_verifies().await;

    // The damage: a copy gone, a copy where its post has no such tag, a copy changed, a
    // month's count and the index's both wrong.
    let store = &app.store;
    let tag = |name: &str| PartitionKey::single(name);
    store
        .delete_item(Container::Tags, &tag("db"), a)
        .await
        .unwrap();
    let stray = (Container::Tags, tag("rust"), b);
    rewrite(store, stray, &tag("go"), |copy| copy["tag"] = json!("go")).await;
    let changed = (Container::Tags, tag("rust"), a);
    rewrite(store, changed, &tag("rust"), |copy| {
        copy["title"] = json!("not the title");
    })
    .await;
    let count_id = format!("count-{key}");
    for partition in [key.as_str(), "index"] {
        let pk = PartitionKey::single(partition);
        let count = (Container::Archive, pk.clone(), count_id.as_str());
        rewrite(store, count, &pk, |count| count["postCount"] = json!(7)).await;
    }

    let report = verify(&app.whole_store).await.unwrap();
    for kind in [
        ViolationKind::MissingViewCopy,
        ViolationKind::OrphanViewCopy,
        ViolationKind::ViewCopyDiffers,
        ViolationKind::MonthCountMismatch,
    ] {
        assert_eq!(report.of_kind(kind).count(), 1, "{kind}: {report:?}");
    }
    let repaired = verify_and_repair(&app.whole_store, &mut |_| {}, &mut |_| {})
        .await
        .unwrap();
    assert!(repaired.after.holds(), "{:?}", repaired.after);
    lists(&app, "/api/tags/db/posts", &[a]).await;
    lists(&app, "/api/tags/go/posts", &[]).await;
    let archive = app.get_json("/api/archive").await;
    assert_eq!(archive["items"], json!([{"month": key, "postCount": 2}]));
    app.assert_verifies().await;
}
