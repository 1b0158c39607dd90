//! The `multi` layout at the store level, on both backends: hierarchical keys, queries on a
//! key prefix, one tenant's view of the store, and the refusal to open the other layout.

use std::collections::BTreeSet;
use std::sync::Arc;

use cosmos_blog::blog::Blog;
use cosmos_blog::copies::{Source, rebuild};
use cosmos_blog::domain::TenantId;
use cosmos_blog::domain::{PostContent, Title, UserId, Username};
use cosmos_blog::store::cosmos::CosmosStore;
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::tenant::{self, TenantStore};
use cosmos_blog::store::{
    Container, PageRequest, PartitionKey, PartitionKeyValue, Query, Store, StoreError, Tenancy,
};
use cosmos_blog::verify::{ViolationKind, verify};
use serde_json::{Value, json};
use testkit::metered::meter;

use crate::store_contract::{all_pages, drain_changes, stored};
use testkit::emulator::{DATABASE, emulator_client, emulator_store_in};

/// Declares each test twice: on a `multi` embedded store and on a `multi` Cosmos DB store
/// (the SDK's in-memory emulator, MultiHash containers).
macro_rules! multi_store_tests {
    ($($name:ident),* $(,)?) => {
        testkit::test_module!(
            #[tokio::test] embedded,
            (testkit::open_backend(
                testkit::Backend::Embedded,
                super::Tenancy::Multi,
                &crate::store_contract::temporary_dir(),
            )
            .await): $($name),*
        );
        testkit::test_module!(
            #[tokio::test] cosmos, (super::emulator_store_in(super::Tenancy::Multi).await): $($name),*
        );
    };
}

multi_store_tests!(
    prefix_queries_return_exactly_the_tenants_partitions,
    a_tenant_view_stamps_and_confines_its_items,
    metering_counts_a_prefix_query_as_its_own_scope,
    the_change_feed_rebuild_and_verify_work_tenant_by_tenant,
);

fn key(tenant: &str, id: &str) -> PartitionKey {
    PartitionKey::hierarchical(vec![
        PartitionKeyValue::String(tenant.into()),
        PartitionKeyValue::String(id.into()),
    ])
    .expect("two-level key")
}

fn user(tenant: &str, id: &str) -> Value {
    json!({"id": id, "type": "user", "userId": id, "tenantId": tenant, "username": id})
}

async fn put_users(store: &Arc<dyn Store>) {
    // "t1" and "t10" share a text prefix; "t1" and "t1\"" a JSON one.
    for (tenant, id) in [
        ("t1", "a"),
        ("t1", "b"),
        ("t1", "c"),
        ("t10", "a"),
        ("t1\"", "z"),
        ("t2", "b"),
    ] {
        store
            .create_item(Container::Users, &key(tenant, id), user(tenant, id))
            .await
            .expect("create user");
    }
}

/// `(tenantId, id)` of every item `query` finds in `users`, in pages of `page_size`.
async fn all_in(store: &Arc<dyn Store>, query: &Query, page_size: u32) -> Vec<(String, String)> {
    all_pages(store, Container::Users, query, page_size)
        .await
        .iter()
        .map(|item| {
            (
                item["tenantId"].as_str().unwrap_or_default().to_owned(),
                item["id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

async fn prefix_queries_return_exactly_the_tenants_partitions(store: Arc<dyn Store>) {
    put_users(&store).await;
    let t1 = Query::in_prefix(PartitionKey::single("t1")).of_type("user");
    for page_size in [1, 2, 100] {
        let found: BTreeSet<_> = all_in(&store, &t1, page_size).await.into_iter().collect();
        let expected: BTreeSet<_> = ["a", "b", "c"]
            .into_iter()
            .map(|id| ("t1".to_owned(), id.to_owned()))
            .collect();
        assert_eq!(found, expected, "pages of {page_size}");
    }
    let t10 = Query::in_prefix(PartitionKey::single("t10"));
    assert_eq!(all_in(&store, &t10, 10).await, [("t10".into(), "a".into())]);
    let none = Query::in_prefix(PartitionKey::single("t3"));
    assert!(all_in(&store, &none, 10).await.is_empty());
}

async fn a_tenant_view_stamps_and_confines_its_items(store: Arc<dyn Store>) {
    let tenant = |id: &str| -> Arc<dyn Store> {
        Arc::new(TenantStore::new(
            Arc::clone(&store),
            TenantId::parse(id).expect("tenant id"),
        ))
    };
    let (one, two) = (tenant("one"), tenant("two"));
    assert_eq!(one.tenancy(), Tenancy::Single, "a tenant sees the V3 model");
    let ada = json!({"id": "ada", "type": "user", "userId": "ada", "username": "Ada"});
    let pk = PartitionKey::single("ada");
    one.create_item(Container::Users, &pk, ada.clone())
        .await
        .expect("create in one");
    // The same id in another tenant is another item.
    two.create_item(Container::Users, &pk, ada.clone())
        .await
        .expect("create in two");
    let mut renamed = ada.clone();
    renamed["username"] = json!("Ada Two");
    two.replace_item(Container::Users, &pk, renamed, None)
        .await
        .expect("replace in two");

    let read = stored(&one, Container::Users, &pk, "ada")
        .await
        .expect("ada in one");
    assert_eq!(read.item, ada, "a tenant sees its items as written");
    let whole = stored(&store, Container::Users, &key("two", "ada"), "ada")
        .await
        .expect("ada under two's key");
    assert_eq!(
        whole.item["username"], "Ada Two",
        "untouched by the other tenant"
    );
    assert_eq!(whole.item["tenantId"], "two", "stamped with its tenant");

    // A tenant's queries across its partitions stay within it.
    let everyone = Query::cross_partition().of_type("user");
    let seen = one
        .query(Container::Users, &everyone, PageRequest::first(10))
        .await
        .expect("query");
    assert_eq!(seen.items, [ada]);

    // An item naming another tenant is written into the view's own tenant.
    let forged = json!({"id": "eve", "type": "user", "userId": "eve", "tenantId": "two"});
    one.create_item(Container::Users, &PartitionKey::single("eve"), forged)
        .await
        .expect("create");
    assert!(
        stored(&two, Container::Users, &PartitionKey::single("eve"), "eve")
            .await
            .is_none(),
        "nothing reaches another tenant"
    );
    let tenants = tenant::tenants(&*store).await.expect("scan");
    let names: Vec<&str> = tenants.iter().map(TenantId::as_str).collect();
    assert_eq!(names, ["one", "two"]);

    // The whole store refuses a key without its tenant level.
    let flat = store
        .create_item(
            Container::Users,
            &PartitionKey::single("x"),
            json!({"id": "x", "userId": "x"}),
        )
        .await;
    assert!(matches!(flat, Err(StoreError::BadRequest(_))), "{flat:?}");
}

async fn metering_counts_a_prefix_query_as_its_own_scope(store: Arc<dyn Store>) {
    put_users(&store).await;
    let metered = meter(Arc::clone(&store));
    metered
        .query(
            Container::Users,
            &Query::in_prefix(PartitionKey::single("t1")),
            PageRequest::first(100),
        )
        .await
        .expect("query");
    let metrics = metered.take();
    assert_eq!(metrics.requests, 1);
    assert_eq!(metrics.prefix_queries, 1);
    assert_eq!(metrics.fan_out_queries, 0);
    assert_eq!(
        metrics.partitions, 3,
        "the three users of t1, each its own partition"
    );
}

#[tokio::test]
async fn the_embedded_store_refuses_the_other_layout() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("blog.sqlite3");
    drop(EmbeddedStore::open_with(&path, Tenancy::Multi).expect("a new multi store"));
    let error = EmbeddedStore::open(&path).err().expect("single refused");
    assert!(error.to_string().contains("multi layout"), "{error}");
    drop(EmbeddedStore::open_with(&path, Tenancy::Multi).expect("multi again"));

    let legacy = dir.path().join("legacy.sqlite3");
    let single = EmbeddedStore::open(&legacy).expect("single store");
    single
        .create_item(
            Container::Users,
            &PartitionKey::single("a"),
            json!({"id": "a", "userId": "a"}),
        )
        .await
        .expect("create");
    drop(single);
    let error = EmbeddedStore::open_with(&legacy, Tenancy::Multi)
        .err()
        .expect("multi refused");
    assert!(error.to_string().contains("single layout"), "{error}");
}

#[tokio::test]
async fn the_cosmos_store_refuses_containers_of_the_other_layout() {
    let client = emulator_client().await;
    CosmosStore::from_client_with(client.clone(), DATABASE, Tenancy::Multi)
        .await
        .expect("creates MultiHash containers");
    CosmosStore::from_client_with(client.clone(), DATABASE, Tenancy::Multi)
        .await
        .expect("and finds them again");
    let error = crate::cosmos_store::start_up_error(client).await;
    assert!(error.contains("the multi layout"), "{error}");
    assert!(error.contains("BLOG_TENANCY"), "{error}");
}

/// A user and a post in `tenant`, written through the tenant's view like the API does.
async fn user_with_post(store: &Arc<dyn Store>, tenant: &str, username: &str) -> Value {
    let blog = Blog::new(tenant::scoped(
        store,
        &TenantId::parse(tenant).expect("tenant"),
    ));
    let ada = UserId::parse("ada").expect("user id");
    blog.put_user(
        &ada,
        ada.clone(),
        Username::parse(username).expect("username"),
    )
    .await
    .expect("put user");
    let post = blog
        .create_post(
            &ada,
            Title::parse(&format!("{tenant} news")).expect("title"),
            PostContent::parse("content").expect("content"),
        )
        .await
        .expect("create post");
    serde_json::to_value(post).expect("post JSON")
}

async fn the_change_feed_rebuild_and_verify_work_tenant_by_tenant(store: Arc<dyn Store>) {
    let post_a = user_with_post(&store, "a", "Ada A").await;
    let post_b = user_with_post(&store, "b", "Ada B").await;
    // One batch of the whole container's change feed, mixing the tenants, as the pump and
    // the Functions trigger receive it.
    let (documents, _) = drain_changes(&store, Container::Posts, None, 100).await;
    assert_eq!(documents.len(), 2);
    Source::Posts
        .handle(&store, &documents)
        .await
        .expect("handled");
    let report = verify(&store).await.expect("verify");
    assert!(report.holds(), "{:?}", report.violation_lines(10));
    assert_eq!(report.scanned.users, 2);
    assert_eq!(
        report.scanned.feed_items, 2,
        "one feed copy in each tenant's feed"
    );
    for (tenant, post) in [("a", &post_a), ("b", &post_b)] {
        let copy = stored(
            &store,
            Container::Feed,
            &key(tenant, "post"),
            post["id"].as_str().expect("id"),
        )
        .await
        .expect("the copy is in its own tenant's feed");
        assert_eq!(copy.item["tenantId"], tenant);
    }

    // verify reads a multi store once, as it reads a single one: seven scans across
    // partitions (users, erasure markers, posts, users again for the copies, the feeds, the
    // tag and the archive views), nothing per tenant.
    let metered = Arc::new(meter(Arc::clone(&store)));
    let whole: Arc<dyn Store> = metered.clone();
    assert!(verify(&whole).await.expect("verify").holds());
    let metrics = metered.take();
    assert_eq!(
        (
            metrics.requests,
            metrics.fan_out_queries,
            metrics.prefix_queries
        ),
        (7, 7, 0),
        "{metrics:?}"
    );

    // Tenant b loses its feed copy: verify names it by its key in the store...
    store
        .delete_item(
            Container::Feed,
            &key("b", "post"),
            post_b["id"].as_str().expect("id"),
        )
        .await
        .expect("delete the copy");
    let report = verify(&store).await.expect("verify");
    assert_eq!(
        report.total_violations,
        1,
        "{:?}",
        report.violation_lines(10)
    );
    let violation = &report.violations[0];
    assert_eq!(violation.kind, ViolationKind::MissingFromFeed);
    assert!(violation.partition.starts_with("[\"b\""), "{violation}");
    // ... and rebuild, tenant by tenant, puts it back.
    rebuild(&store).await.expect("rebuild");
    let report = verify(&store).await.expect("verify");
    assert!(report.holds(), "{:?}", report.violation_lines(10));
}
