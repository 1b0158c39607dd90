//! Transactional batches: atomic, naming the failing operation.

use super::*;

async fn batches_are_atomic_and_name_the_failing_operation(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    let etag = store
        .create_item(Container::Posts, &pk, post("p1", "u1", "ada", &date(1)))
        .await
        .expect("create post");

    // Count and comment change together.
    let mut counted = post("p1", "u1", "ada", &date(1));
    counted["commentCount"] = json!(1);
    let etags = store
        .execute_batch(
            Container::Posts,
            &pk,
            count_and_child(counted.clone(), etag.clone(), comment("p1", "c1", &date(2))),
        )
        .await
        .expect("batch");
    assert_eq!(etags.len(), 2);
    assert!(etags.iter().all(Option::is_some));
    let current = stored(&store, Container::Posts, &pk, "p1")
        .await
        .expect("exists");
    assert_eq!(current.item["commentCount"], 1);
    assert_eq!(Some(&current.etag), etags[0].as_ref());

    // A stale etag on the first operation: nothing happens, and the error says which.
    counted["commentCount"] = json!(2);
    let stale = store
        .execute_batch(
            Container::Posts,
            &pk,
            count_and_child(counted.clone(), etag, comment("p1", "c2", &date(3))),
        )
        .await;
    match stale {
        Err(StoreError::BatchOperationFailed { index: 0, cause }) => {
            assert!(
                matches!(*cause, StoreError::PreconditionFailed),
                "{cause:?}"
            );
        }
        other => panic!("expected operation 0 to fail, got {other:?}"),
    }
    assert!(
        stored(&store, Container::Posts, &pk, "c2").await.is_none(),
        "the batch was rolled back"
    );

    // A conflict on the second operation rolls back the first.
    let conflict = store
        .execute_batch(
            Container::Posts,
            &pk,
            count_and_child(
                counted.clone(),
                current.etag.clone(),
                comment("p1", "c1", &date(2)),
            ),
        )
        .await;
    match conflict {
        Err(StoreError::BatchOperationFailed { index: 1, cause }) => {
            assert!(matches!(*cause, StoreError::Conflict), "{cause:?}");
        }
        other => panic!("expected operation 1 to fail, got {other:?}"),
    }
    let unchanged = stored(&store, Container::Posts, &pk, "p1")
        .await
        .expect("exists");
    assert_eq!(unchanged.item["commentCount"], 1);
    assert_eq!(unchanged.etag, current.etag);

    // A missing item to delete, after an upsert that must not stay.
    let missing = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Upsert {
                    item: comment("p1", "c3", &date(4)),
                },
                BatchOperation::Delete {
                    id: "nope".into(),
                    if_match: None,
                },
            ],
        )
        .await;
    match missing {
        Err(StoreError::BatchOperationFailed { index: 1, cause }) => {
            assert!(matches!(*cause, StoreError::NotFound), "{cause:?}");
        }
        other => panic!("expected operation 1 to fail, got {other:?}"),
    }
    assert!(stored(&store, Container::Posts, &pk, "c3").await.is_none());

    // An item of another partition is refused as the operation it is.
    let misplaced = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Upsert {
                    item: comment("p1", "c4", &date(5)),
                },
                BatchOperation::Create {
                    item: comment("p2", "c5", &date(6)),
                },
            ],
        )
        .await;
    assert!(
        matches!(
            misplaced,
            Err(StoreError::BatchOperationFailed { index: 1, .. })
        ),
        "{misplaced:?}"
    );

    // Deletes succeed without an etag.
    let deleted = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![BatchOperation::Delete {
                id: "c1".into(),
                if_match: None,
            }],
        )
        .await
        .expect("delete batch");
    assert_eq!(deleted, vec![None::<ETag>]);
}

/// A delete with an etag deletes only the version of that etag: a stale one fails the batch
/// at that operation, with nothing written, and the current one deletes.
async fn a_delete_with_an_etag_deletes_only_that_version(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    let first = store
        .create_item(Container::Posts, &pk, comment("p1", "c1", &date(1)))
        .await
        .expect("create");
    let mut edited = comment("p1", "c1", &date(1));
    edited["content"] = json!("edited");
    let current = store
        .replace_item(Container::Posts, &pk, edited, Some(&first))
        .await
        .expect("replace");
    let delete = |etag: &ETag| BatchOperation::Delete {
        id: "c1".into(),
        if_match: Some(etag.clone()),
    };
    let stale = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Upsert {
                    item: comment("p1", "c2", &date(2)),
                },
                delete(&first),
            ],
        )
        .await;
    match stale {
        Err(StoreError::BatchOperationFailed { index: 1, cause }) => {
            assert!(
                matches!(*cause, StoreError::PreconditionFailed),
                "{cause:?}"
            );
        }
        other => panic!("expected operation 1 to fail, got {other:?}"),
    }
    assert!(stored(&store, Container::Posts, &pk, "c1").await.is_some());
    assert!(stored(&store, Container::Posts, &pk, "c2").await.is_none());

    store
        .execute_batch(Container::Posts, &pk, vec![delete(&current)])
        .await
        .expect("delete of the current version");
    assert!(stored(&store, Container::Posts, &pk, "c1").await.is_none());
    let gone = store
        .execute_batch(Container::Posts, &pk, vec![delete(&current)])
        .await;
    assert!(
        matches!(
            &gone,
            Err(StoreError::BatchOperationFailed { index: 0, cause })
                if matches!(**cause, StoreError::NotFound)
        ),
        "{gone:?}"
    );
}

contract_tests!(
    batches_are_atomic_and_name_the_failing_operation,
    a_delete_with_an_etag_deletes_only_that_version,
);
