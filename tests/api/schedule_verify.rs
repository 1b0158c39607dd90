//! The schedule under `verify`: each scheduled post has its entry, each entry its scheduled
//! post, and in `multi` the publisher's directory lists every tenant with entries. Damage done
//! by hand is found and repaired.

use std::time::Duration;

use cosmos_blog::blog::schedule_partition;
use cosmos_blog::store::{Container, PartitionKey, Tenancy};
use cosmos_blog::verify::{ViolationKind, verify, verify_and_repair};
use serde_json::{Value, json};

use crate::drafts::in_seconds;
use testkit::{TestApp, eventually, operation_tests};

operation_tests!(verify_finds_and_repairs_every_damage_to_the_schedule);

/// The directory's item in `leases` (not scoped by tenant).
const DIRECTORY: &str = "schedule.tenants";

async fn entry(app: &TestApp, id: &str) -> Option<Value> {
    let schedule = schedule_partition();
    let found = app.store.read_item(Container::Feed, &schedule, id).await;
    found.unwrap().map(|document| document.item)
}

async fn verify_finds_and_repairs_every_damage_to_the_schedule(app: TestApp) {
    app.register("ada", "Ada").await;
    let body = json!({"title": "later", "content": "x", "status": "scheduled",
        "publishAt": in_seconds(3_600)});
    let scheduled = app.written("ada", body).await;
    let scheduled = scheduled["id"].as_str().unwrap().to_owned();
    let published = app.new_post("ada", "now", "x").await;
    let published = published["id"].as_str().unwrap().to_owned();
    let held = eventually(Duration::from_secs(30), || entry(&app, &scheduled)).await;
    app.assert_verifies().await;

    // The damage: the scheduled post's entry gone, an entry for a published post and one for
    // a post that never was, and in `multi` the tenant out of the publisher's directory.
    let store = &app.store;
    let schedule = schedule_partition();
    store
        .delete_item(Container::Feed, &schedule, &scheduled)
        .await
        .unwrap();
    let never = "00000000-0000-4000-8000-000000000001";
    for id in [published.as_str(), never] {
        let mut stray = held.clone();
        for field in ["id", "postId"] {
            stray[field] = json!(id);
        }
        store
            .upsert_item(Container::Feed, &schedule, stray)
            .await
            .unwrap();
    }
    let multi = app.whole_store.tenancy() == Tenancy::Multi;
    if multi {
        let directory = json!({"id": DIRECTORY, "tenants": []});
        let pk = PartitionKey::single(DIRECTORY);
        let whole = &app.whole_store;
        whole
            .upsert_item(Container::Leases, &pk, directory)
            .await
            .unwrap();
    }

    let report = verify(&app.whole_store).await.unwrap();
    let count = |kind| report.of_kind(kind).count();
    assert_eq!(count(ViolationKind::MissingScheduleEntry), 1, "{report:?}");
    assert_eq!(count(ViolationKind::OrphanScheduleEntry), 2, "{report:?}");
    let directory = usize::from(multi);
    assert_eq!(
        count(ViolationKind::TenantNotInScheduleDirectory),
        directory,
        "{report:?}"
    );
    assert_eq!(report.total_violations, 3 + directory, "{report:?}");

    let repaired = verify_and_repair(&app.whole_store, &mut |_| {}, &mut |_| {})
        .await
        .unwrap();
    assert!(repaired.after.holds(), "{:?}", repaired.after);
    assert_eq!(entry(&app, &scheduled).await, Some(held));
    assert_eq!(entry(&app, &published).await, None);
    assert_eq!(entry(&app, never).await, None);
    app.assert_verifies().await;
}
