//! Queries: paging in order in one partition, filtering across partitions, offsets, malformed
//! continuations, and `IN` filters.

use super::*;

async fn single_partition_queries_page_in_order(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    store
        .create_item(Container::Posts, &pk, post("p1", "u1", "ada", &date(0)))
        .await
        .expect("post");
    // Written out of order; another partition holds comments too.
    for n in [5u32, 1, 7, 3, 2, 6, 4] {
        store
            .create_item(
                Container::Posts,
                &pk,
                comment("p1", &format!("c{n}"), &date(n)),
            )
            .await
            .expect("comment");
    }
    store
        .create_item(
            Container::Posts,
            &PartitionKey::single("p2"),
            comment("p2", "other", &date(9)),
        )
        .await
        .expect("comment elsewhere");

    let oldest_first = Query::in_partition(pk.clone())
        .of_type("comment")
        .order_by("creationDate", SortOrder::Ascending);
    let items = all_pages(&store, Container::Posts, &oldest_first, 3).await;
    assert_eq!(ids(&items), ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]);

    let newest_first = Query::in_partition(pk.clone())
        .of_type("comment")
        .order_by("creationDate", SortOrder::Descending);
    let items = all_pages(&store, Container::Posts, &newest_first, 2).await;
    assert_eq!(ids(&items), ["c7", "c6", "c5", "c4", "c3", "c2", "c1"]);

    let first = store
        .query(Container::Posts, &newest_first, PageRequest::first(3))
        .await
        .expect("first page");
    assert_eq!(ids(&first.items), ["c7", "c6", "c5"]);
    assert!(first.continuation.is_some());
    let everything = store
        .query(Container::Posts, &newest_first, PageRequest::first(100))
        .await
        .expect("one page");
    assert_eq!(everything.items.len(), 7);
    assert_eq!(
        everything.continuation, None,
        "nothing more after the last item"
    );
}

async fn cross_partition_queries_filter_every_partition(store: Arc<dyn Store>) {
    for n in 0..6u32 {
        let id = format!("p{n}");
        let (user, name) = if n % 2 == 0 {
            ("u1", "old")
        } else {
            ("u2", "old")
        };
        let pk = PartitionKey::single(id.as_str());
        store
            .create_item(Container::Posts, &pk, post(&id, user, name, &date(n)))
            .await
            .expect("post");
        store
            .create_item(
                Container::Posts,
                &pk,
                json!({"id": format!("l{n}"), "type": "like", "postId": id, "userId": "u1",
                       "userUsername": if n == 0 { "new" } else { "old" }, "creationDate": date(n)}),
            )
            .await
            .expect("like");
    }
    // What the username fan-out asks: everything of u1 not already renamed, in any partition.
    let query = Query::cross_partition()
        .filter("userId", FilterOp::Eq, "u1")
        .filter("userUsername", FilterOp::Ne, "new");
    let items = all_pages(&store, Container::Posts, &query, 2).await;
    let found: BTreeSet<String> = ids(&items).into_iter().collect();
    let expected: BTreeSet<String> = ["p0", "p2", "p4", "l1", "l2", "l3", "l4", "l5"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(found, expected);
    assert_eq!(items.len(), expected.len(), "no item twice");

    // What `rebuild` asks: every item of one type.
    let posts = all_pages(
        &store,
        Container::Posts,
        &Query::cross_partition().of_type("post"),
        4,
    )
    .await;
    assert_eq!(posts.len(), 6);
}

async fn offset_skips_the_first_items(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("post");
    for n in 1..=5u32 {
        let mut item = post(&format!("p{n}"), "u1", "ada", &date(n));
        item["postId"] = json!(format!("p{n}"));
        // The feed container is partitioned by type: all posts share one partition.
        store
            .create_item(Container::Feed, &pk, item)
            .await
            .expect("feed item");
    }
    let beyond = Query::in_partition(pk)
        .of_type("post")
        .order_by("creationDate", SortOrder::Descending)
        .skip(2);
    let page = store
        .query(Container::Feed, &beyond, PageRequest::first(1_000))
        .await
        .expect("offset query");
    assert_eq!(ids(&page.items), ["p3", "p2", "p1"]);
    assert_eq!(page.continuation, None);
}

async fn malformed_continuations_are_refused(store: Arc<dyn Store>) {
    let query = Query::in_partition(PartitionKey::single("p1")).of_type("comment");
    let result = store
        .query(
            Container::Posts,
            &query,
            PageRequest {
                max_items: 10,
                continuation: Some("not a token".into()),
            },
        )
        .await;
    assert!(
        matches!(result, Err(StoreError::BadRequest(_))),
        "{result:?}"
    );
}

async fn an_in_filter_matches_any_of_its_values(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    for (id, kind, date) in [
        ("c1", "comment", "2026-01-01T00:00:02.0000000Z"),
        ("l1", "like", "2026-01-01T00:00:03.0000000Z"),
        ("t1", "tombstone", "2026-01-01T00:00:01.0000000Z"),
        ("c2", "comment", "2026-01-01T00:00:04.0000000Z"),
    ] {
        let item = json!({"id": id, "postId": "p1", "type": kind, "creationDate": date});
        store
            .create_item(Container::Posts, &pk, item)
            .await
            .unwrap();
    }
    let query = Query::in_partition(pk)
        .of_types(&["comment", "tombstone"])
        .order_by("creationDate", SortOrder::Ascending);
    let page = store
        .query(Container::Posts, &query, PageRequest::first(10))
        .await
        .unwrap();
    let ids: Vec<&str> = page
        .items
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["t1", "c1", "c2"]);
}

contract_tests!(
    single_partition_queries_page_in_order,
    cross_partition_queries_filter_every_partition,
    offset_skips_the_first_items,
    malformed_continuations_are_refused,
    an_in_filter_matches_any_of_its_values,
);
