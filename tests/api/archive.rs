//! Q9, a month's posts, and the archive's months with their counts, from the `archive` view
//! the change feed keeps.

use std::time::Duration;

use cosmos_blog::copies::{Source, on_post_changed, rebuild};
use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use testkit::{TestApp, eventually, ids, operation_tests};

operation_tests!(
    the_archive_lists_months_with_counts_and_each_months_posts,
    repeated_batches_and_rebuilds_never_skew_the_months_counts,
);

/// A post written straight into `posts` with the date given (the API dates posts now): the
/// change feed files it like any other.
async fn dated_post(app: &TestApp, id: &str, date: &str) {
    let item = json!({
        "id": id, "type": "post", "postId": id, "userId": "ada", "userUsername": "Ada",
        "title": format!("post {id}"), "content": "text", "commentCount": 0, "likeCount": 0,
        "creationDate": date, "tags": ["old"]
    });
    app.store
        .create_item(Container::Posts, &PartitionKey::single(id), item)
        .await
        .unwrap();
}

/// The archive's months once they are `expected` (`yyyy-mm`, count), newest first.
async fn months_become(app: &TestApp, expected: &[(String, u64)]) -> Value {
    let expected: Vec<Value> = expected
        .iter()
        .map(|(month, count)| json!({"month": month, "postCount": count}))
        .collect();
    eventually(Duration::from_secs(30), || async {
        let archive = app.get_json("/api/archive").await;
        (archive["items"] == json!(expected)).then_some(archive)
    })
    .await
}

fn this_month() -> String {
    let now = cosmos_blog::domain::Timestamp::now().to_string();
    now[..7].to_owned()
}

async fn the_archive_lists_months_with_counts_and_each_months_posts(app: TestApp) {
    app.register("ada", "Ada").await;
    let recent = app.new_posts("ada", 3, "now", "x").await;
    dated_post(&app, "march-a", "2025-03-02T10:00:00.0000000Z").await;
    dated_post(&app, "march-b", "2025-03-30T23:59:59.9999999Z").await;
    dated_post(&app, "december", "2024-12-31T00:00:00.0000000Z").await;
    let archive = months_become(
        &app,
        &[
            (this_month(), 3),
            ("2025-03".to_owned(), 2),
            ("2024-12".to_owned(), 1),
        ],
    )
    .await;
    assert_eq!(archive["continuation"], json!(null));

    let march = app.get_json("/api/archive/2025/03/posts").await;
    assert_eq!(
        ids(march["items"].as_array().unwrap()),
        ["march-b", "march-a"]
    );
    assert!(march["items"][0].get("month").is_none());
    let (year, month) = this_month()
        .split_once('-')
        .map(|(y, m)| (y.to_owned(), m.to_owned()))
        .unwrap();
    let newest_first: Vec<String> = recent.iter().rev().cloned().collect();
    let paged = app
        .all_pages(&format!("/api/archive/{year}/{month}/posts"), 2)
        .await;
    assert_eq!(ids(&paged), newest_first);
    let empty = app.get_json("/api/archive/1999/01/posts").await;
    assert_eq!(empty["items"], json!([]));
    for bad in ["2025/3", "2025/13", "2025/00", "25/03", "2025/0x"] {
        let response = app.get(&format!("/api/archive/{bad}/posts")).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
    }

    // A delete leaves its month; the last post of a month takes the month off the list.
    let deleted = app
        .send(Method::DELETE, "/api/posts/december", Some("ada"), None)
        .await;
    assert!(deleted.status().is_success(), "{}", deleted.status());
    months_become(&app, &[(this_month(), 3), ("2025-03".to_owned(), 2)]).await;
    let gone = app
        .delete_as("ada", &format!("/api/posts/{}", recent[0]))
        .await;
    assert!(gone.status().is_success());
    months_become(&app, &[(this_month(), 2), ("2025-03".to_owned(), 2)]).await;
    app.assert_verifies().await;
}

async fn repeated_batches_and_rebuilds_never_skew_the_months_counts(app: TestApp) {
    app.register("ada", "Ada").await;
    for n in 0..4 {
        dated_post(
            &app,
            &format!("p{n}"),
            &format!("2025-0{}-01T00:00:00.0000000Z", n % 2 + 1),
        )
        .await;
    }
    let expected = [("2025-02".to_owned(), 2), ("2025-01".to_owned(), 2)];
    months_become(&app, &expected).await;

    // The same posts handed to the handler again, several times and side by side, as a
    // redelivered or retried batch would be: the counts stay.
    let query = Query::cross_partition().of_type("post");
    let posts = app
        .store
        .query(Container::Posts, &query, PageRequest::first(100))
        .await
        .unwrap()
        .items;
    let store = &app.store;
    let again = futures::future::join_all((0..4).map(|_| on_post_changed(store, &posts))).await;
    for report in again {
        assert_eq!(report.unwrap().skipped, Vec::<String>::new());
    }
    assert!(Source::Posts.handle(&app.whole_store, &[]).await.is_ok());
    rebuild(&app.whole_store).await.unwrap();
    rebuild(&app.whole_store).await.unwrap();
    months_become(&app, &expected).await;
    app.assert_verifies().await;
}
