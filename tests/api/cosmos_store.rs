//! What only the Cosmos DB store has: preparing the database at start-up, request-charge
//! accounting, and a smoke test against a real account when one is configured.

use std::sync::Mutex;
use std::time::Duration;

use cosmos_blog::settings::StoreSettings;
use cosmos_blog::store::cosmos::CosmosStore;
use cosmos_blog::store::{
    BatchOperation, Checkpoint, Container, PageRequest, PartitionKey, Query, SortOrder, Store,
    StoreError, charge,
};
use serde_json::json;

use testkit::emulator::{DATABASE, emulator_client, emulator_store, throttled_emulator_store};
use testkit::eventually_ok;

use crate::store_contract::count_and_child;

#[tokio::test]
async fn start_up_is_idempotent() {
    let client = emulator_client().await;
    CosmosStore::from_client(client.clone(), DATABASE)
        .await
        .expect("first start creates the database and containers");
    let store = CosmosStore::from_client(client, DATABASE)
        .await
        .expect("a restart finds them and checks them");
    assert_eq!(store.backend(), "cosmos");
}

/// An account whose database holds one container, `posts`, made by hand before any start-up
/// (partitioned by `key_path`, without time-to-live).
async fn account_with_posts_keyed_by(key_path: &str) -> azure_data_cosmos::CosmosClient {
    let client = emulator_client().await;
    client
        .create_database(DATABASE, None)
        .await
        .expect("create database");
    let posts = serde_json::from_value(json!({
        "id": "posts",
        "partitionKey": {"paths": [key_path], "kind": "Hash", "version": 2},
    }))
    .expect("container properties");
    client
        .database_client(DATABASE)
        .create_container(posts, None)
        .await
        .expect("create container");
    client
}

/// Why a `single` store's start-up on `client`'s account refused; panics if it started.
pub(crate) async fn start_up_error(client: azure_data_cosmos::CosmosClient) -> String {
    match CosmosStore::from_client(client, DATABASE).await {
        Ok(_) => panic!("start-up must fail"),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn start_up_refuses_a_container_with_another_partition_key() {
    let client = account_with_posts_keyed_by("/id").await;
    let error = start_up_error(client).await;
    assert!(error.contains("posts"), "{error}");
    assert!(error.contains("/postId"), "{error}");
}

#[tokio::test]
async fn request_charges_are_recorded() {
    let store = emulator_store().await;
    let pk = PartitionKey::single("u1");
    let (result, total) = charge::measure(async {
        store
            .upsert_item(
                Container::Users,
                &pk,
                json!({"id": "u1", "type": "user", "userId": "u1", "username": "ada"}),
            )
            .await?;
        store.read_item(Container::Users, &pk, "u1").await
    })
    .await;
    assert!(result.expect("write and read").is_some());
    assert!(total > 0.0, "the RU charge of both requests is counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_surfaces_with_its_retry_after() {
    let store = throttled_emulator_store(400).await;
    // Far more than 400 RU in one go: big items, all at once.
    let content = "x".repeat(50_000);
    let writes = (0..200).map(|n| {
        let store = store.clone();
        let id = format!("u{n}");
        let item =
            json!({"id": id, "type": "user", "userId": id, "username": "ada", "bio": content});
        async move {
            store
                .upsert_item(Container::Users, &PartitionKey::single(id.as_str()), item)
                .await
        }
    });
    let results = futures::future::join_all(writes).await;
    let throttled: Vec<_> = results
        .iter()
        .filter_map(|r| match r {
            Err(StoreError::Throttled { retry_after }) => Some(*retry_after),
            _ => None,
        })
        .collect();
    assert!(!throttled.is_empty(), "no request was throttled");
    assert!(
        throttled
            .iter()
            .all(|after| after.is_some_and(|d| d > Duration::ZERO)),
        "the service's x-ms-retry-after-ms reaches the caller: {throttled:?}"
    );
    assert!(StoreError::Throttled { retry_after: None }.is_transient());
    let unexpected: Vec<_> = results
        .iter()
        .filter(|r| !matches!(r, Ok(_) | Err(StoreError::Throttled { .. })))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
}

/// Runs only with `COSMOS_TEST_ENDPOINT` and `COSMOS_TEST_KEY` set (a real account or the
/// Cosmos DB emulator, e.g. `https://localhost:8081/`). Writes under fresh ids, in the
/// database `COSMOS_TEST_DATABASE` (default `blog-test`), so it can run again and again.
#[tokio::test]
async fn live_account_smoke_test() {
    let (Ok(endpoint), Ok(key)) = (
        std::env::var("COSMOS_TEST_ENDPOINT"),
        std::env::var("COSMOS_TEST_KEY"),
    ) else {
        eprintln!(
            "skipped: set COSMOS_TEST_ENDPOINT and COSMOS_TEST_KEY to run against a real account"
        );
        return;
    };
    let settings = StoreSettings {
        cosmos_connection: Some(format!("AccountEndpoint={endpoint};AccountKey={key};")),
        database: std::env::var("COSMOS_TEST_DATABASE").unwrap_or_else(|_| "blog-test".into()),
        ..testkit::app::store_settings(std::env::temp_dir())
    };
    let store = CosmosStore::connect(&settings)
        .await
        .expect("connect to the test account");

    // Position the change feed at the end before writing.
    let mut checkpoint: Option<Checkpoint> = None;
    loop {
        let batch = store
            .read_changes(Container::Posts, checkpoint.as_ref(), 1_000)
            .await
            .expect("read changes");
        let done = batch.items.is_empty();
        checkpoint = Some(batch.checkpoint);
        if done {
            break;
        }
    }

    let post_id = format!("live-{}", uuid::Uuid::new_v4());
    let pk = PartitionKey::single(post_id.as_str());
    let post = json!({
        "id": post_id, "type": "post", "postId": post_id, "userId": "live", "userUsername": "live",
        "title": "t", "content": "c", "commentCount": 0, "likeCount": 0,
        "creationDate": "2026-01-01T00:00:00.0000000Z",
    });
    let (etag, charged) =
        charge::measure(store.create_item(Container::Posts, &pk, post.clone())).await;
    let etag = etag.expect("create");
    assert!(charged > 0.0);
    assert!(matches!(
        store.create_item(Container::Posts, &pk, post.clone()).await,
        Err(StoreError::Conflict)
    ));

    let mut counted = post.clone();
    counted["commentCount"] = json!(1);
    let comment = json!({
        "id": "c1", "type": "comment", "postId": post_id, "userId": "live",
        "userUsername": "live", "content": "hi", "creationDate": "2026-01-01T00:00:01.0000000Z",
    });
    store
        .execute_batch(
            Container::Posts,
            &pk,
            count_and_child(counted.clone(), etag.clone(), comment.clone()),
        )
        .await
        .expect("batch");
    let stale = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![BatchOperation::Replace {
                item: counted,
                if_match: Some(etag),
            }],
        )
        .await;
    assert!(
        matches!(&stale, Err(StoreError::BatchOperationFailed { index: 0, cause }) if matches!(**cause, StoreError::PreconditionFailed)),
        "{stale:?}"
    );

    let query = Query::in_partition(pk.clone())
        .of_type("comment")
        .order_by("creationDate", SortOrder::Ascending);
    let page = store
        .query(Container::Posts, &query, PageRequest::first(10))
        .await
        .expect("query");
    assert_eq!(page.items, vec![comment]);

    let checkpoint = Mutex::new(checkpoint);
    eventually_ok(Duration::from_secs(10), || async {
        let since = checkpoint.lock().unwrap().clone();
        let batch = store
            .read_changes(Container::Posts, since.as_ref(), 1_000)
            .await
            .expect("read changes");
        let seen = batch.items.iter().any(|i| i["id"] == post_id.as_str());
        *checkpoint.lock().unwrap() = Some(batch.checkpoint);
        seen.then_some(())
            .ok_or("the new post does not show in the change feed")
    })
    .await;

    for id in ["c1", post_id.as_str()] {
        store
            .delete_item(Container::Posts, &pk, id)
            .await
            .expect("clean up");
    }
}

/// Tombstones carry a `ttl`, which Cosmos DB only honours in containers with time-to-live
/// on: the store turns it on ("on, no default": -1) in new containers and in existing ones.
#[tokio::test]
async fn start_up_turns_time_to_live_on_in_new_and_existing_containers() {
    // Made as an earlier version made it: without time-to-live.
    let client = account_with_posts_keyed_by("/postId").await;
    CosmosStore::from_client(client.clone(), DATABASE)
        .await
        .expect("start-up");
    for container in [Container::Users, Container::Posts, Container::Feed] {
        let properties: serde_json::Value = client
            .database_client(DATABASE)
            .container_client(container.name(), None)
            .await
            .expect("open container")
            .read(None)
            .await
            .expect("read container")
            .into_model()
            .map(|p: azure_data_cosmos::models::ContainerProperties| {
                serde_json::to_value(p).expect("properties as JSON")
            })
            .expect("container properties");
        assert_eq!(
            properties["defaultTtl"],
            json!(-1),
            "{}: {properties}",
            container.name()
        );
    }
}
