//! Point operations: Cosmos DB's semantics, system properties stripped, items in the
//! partition addressed.

use super::*;

async fn point_operations_keep_cosmos_semantics(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    let item = post("p1", "u1", "ada", &date(1));

    let created = store
        .create_item(Container::Posts, &pk, item.clone())
        .await
        .expect("create");
    let read = stored(&store, Container::Posts, &pk, "p1")
        .await
        .expect("the item exists");
    assert_eq!(read.item, item);
    assert_eq!(read.etag, created);

    assert!(matches!(
        store.create_item(Container::Posts, &pk, item.clone()).await,
        Err(StoreError::Conflict)
    ));

    let mut edited = item.clone();
    edited["title"] = json!("edited");
    let upserted = store
        .upsert_item(Container::Posts, &pk, edited.clone())
        .await
        .expect("upsert");
    assert_ne!(upserted, created, "every write changes the etag");

    // Replace against the stale etag fails; against the current one it succeeds.
    edited["title"] = json!("replaced");
    assert!(matches!(
        store
            .replace_item(Container::Posts, &pk, edited.clone(), Some(&created))
            .await,
        Err(StoreError::PreconditionFailed)
    ));
    let replaced = store
        .replace_item(Container::Posts, &pk, edited.clone(), Some(&upserted))
        .await
        .expect("replace with the current etag");
    assert_ne!(replaced, upserted);
    let unconditional = store
        .replace_item(Container::Posts, &pk, edited.clone(), None)
        .await
        .expect("replace without precondition");
    let read = stored(&store, Container::Posts, &pk, "p1")
        .await
        .expect("exists");
    assert_eq!(read.item["title"], "replaced");
    assert_eq!(read.etag, unconditional);

    let missing = post("p2", "u1", "ada", &date(2));
    assert!(matches!(
        store
            .replace_item(Container::Posts, &PartitionKey::single("p2"), missing, None)
            .await,
        Err(StoreError::NotFound)
    ));
    assert!(
        stored(&store, Container::Posts, &PartitionKey::single("p2"), "p2")
            .await
            .is_none()
    );

    store
        .delete_item(Container::Posts, &pk, "p1")
        .await
        .expect("delete");
    assert!(matches!(
        store.delete_item(Container::Posts, &pk, "p1").await,
        Err(StoreError::NotFound)
    ));
    assert!(stored(&store, Container::Posts, &pk, "p1").await.is_none());
}

async fn reads_strip_system_properties_and_keep_unicode(store: Arc<dyn Store>) {
    // A partition key with quotes and non-ASCII text travels in an HTTP header on Cosmos DB.
    let user = "zoë \"the\" 🦀";
    let pk = PartitionKey::single(user);
    let mut item = json!({
        "id": "ünïcode-1", "type": "user", "userId": user, "username": "Zoë",
        "nested": {"list": [1, 2.5, true, null, "x"]},
    });
    store
        .upsert_item(Container::Users, &pk, item.clone())
        .await
        .expect("upsert");
    let read = stored(&store, Container::Users, &pk, "ünïcode-1")
        .await
        .expect("exists");
    assert_eq!(read.item, item);
    assert!(
        read.item
            .as_object()
            .is_some_and(|fields| fields.keys().all(|k| !k.starts_with('_'))),
        "system properties are stripped"
    );

    // System properties handed back in (e.g. from the change feed) are not stored.
    item["_etag"] = json!("\"stale\"");
    item["_ts"] = json!(1);
    store
        .upsert_item(Container::Users, &pk, item)
        .await
        .expect("upsert with system properties");
    let query = Query::in_partition(pk.clone()).of_type("user");
    let page = store
        .query(Container::Users, &query, PageRequest::first(10))
        .await
        .expect("query");
    assert_eq!(page.items.len(), 1);
    assert!(page.items[0].get("_etag").is_none());
    assert!(page.items[0].get("_rid").is_none());
    assert_eq!(page.items[0]["username"], "Zoë");
}

async fn items_must_belong_to_the_partition_addressed(store: Arc<dyn Store>) {
    let item = post("p1", "u1", "ada", &date(1));
    let elsewhere = PartitionKey::single("p2");
    assert!(matches!(
        store
            .create_item(Container::Posts, &elsewhere, item.clone())
            .await,
        Err(StoreError::BadRequest(_))
    ));
    assert!(matches!(
        store
            .upsert_item(Container::Posts, &elsewhere, item.clone())
            .await,
        Err(StoreError::BadRequest(_))
    ));
    let no_id = json!({"postId": "p2", "type": "post"});
    assert!(matches!(
        store.create_item(Container::Posts, &elsewhere, no_id).await,
        Err(StoreError::BadRequest(_))
    ));
    // A hierarchical key on a container partitioned by one path addresses no partition of it.
    let hierarchical = PartitionKey::hierarchical(vec![
        cosmos_blog::store::PartitionKeyValue::String("p1".into()),
        cosmos_blog::store::PartitionKeyValue::String("x".into()),
    ])
    .expect("two-level key");
    assert!(matches!(
        store
            .create_item(Container::Posts, &hierarchical, item)
            .await,
        Err(StoreError::BadRequest(_))
    ));
    assert!(
        stored(&store, Container::Posts, &PartitionKey::single("p1"), "p1")
            .await
            .is_none(),
        "nothing was written"
    );
}

contract_tests!(
    point_operations_keep_cosmos_semantics,
    reads_strip_system_properties_and_keep_unicode,
    items_must_belong_to_the_partition_addressed,
);
