//! Deletes through HTTP: each route with its 401, 403 and 404, counts that never drift under
//! racing likes and unlikes, and what a deleted post or account stops answering at once.

use std::time::Duration;

use cosmos_blog::copies::{on_post_changed, on_user_changed};
use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query};
use futures::future::join_all;
use reqwest::{Method, Response, StatusCode};
use serde_json::Value;

use testkit::{TestApp, content_type, eventually, ids, operation_tests};

use crate::interactions::assert_neither_comment_nor_like;

operation_tests!(
    only_the_author_deletes_a_post_and_it_is_gone_at_once,
    a_comment_is_deleted_by_its_author_or_the_posts_author,
    an_unlike_lowers_the_count_and_liking_again_works,
    racing_likes_and_unlikes_keep_the_count_equal_to_the_likes,
    repeated_unlikes_lower_the_count_once,
    a_deleted_account_is_gone_at_once_and_can_register_again,
    deletes_of_what_does_not_exist_are_404_and_write_nothing,
    a_deleted_posts_copies_comments_and_likes_go,
    the_feed_refills_after_deleting_posts_in_it,
    an_erased_account_takes_its_content_and_its_counts_with_it,
    redelivered_deletes_write_nothing,
);

async fn delete(app: &TestApp, path: &str, caller: Option<&str>) -> Response {
    app.send(Method::DELETE, path, caller, None).await
}

async fn problem_code(response: Response) -> String {
    let body: Value = response.json().await.expect("problem JSON");
    body["code"].as_str().expect("problem code").to_owned()
}

async fn post_by_ada(app: &TestApp) -> String {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let post = app.new_post("ada", "Hello", "World").await;
    post["id"].as_str().expect("post id").to_owned()
}

async fn counts(app: &TestApp, post_id: &str) -> (u64, u64) {
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    (
        post["commentCount"].as_u64().expect("commentCount"),
        post["likeCount"].as_u64().expect("likeCount"),
    )
}

async fn listed(app: &TestApp, path: &str) -> usize {
    app.all_pages(path, 100).await.len()
}

async fn only_the_author_deletes_a_post_and_it_is_gone_at_once(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.commented("bob", &post_id, "hi").await;
    app.liked("bob", &post_id).await;
    let path = format!("/api/posts/{post_id}");

    let anonymous = delete(&app, &path, None).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let stranger = delete(&app, &path, Some("bob")).await;
    assert_eq!(stranger.status(), StatusCode::FORBIDDEN);
    assert_eq!(problem_code(stranger).await, "forbidden");
    assert_eq!(
        counts(&app, &post_id).await,
        (1, 1),
        "refusals wrote nothing"
    );

    let deleted = delete(&app, &path, Some("ada")).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    for read in [
        path.clone(),
        format!("{path}/comments"),
        format!("{path}/likes"),
    ] {
        let response = app.get(&read).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "GET {read}");
        assert_eq!(problem_code(response).await, "post-not-found");
    }
    assert_neither_comment_nor_like(&app, "bob", &post_id).await;
    assert_neither_comment_nor_like(&app, "ada", &post_id).await;
    let edit = app
        .edit_post(
            "ada",
            &post_id,
            serde_json::json!({"title": "back", "content": "again"}),
        )
        .await;
    assert_eq!(
        edit.status(),
        StatusCode::NOT_FOUND,
        "a deleted post cannot be edited"
    );
    let again = delete(&app, &path, Some("ada")).await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND, "already deleted");
    app.assert_verifies().await;
}

async fn a_comment_is_deleted_by_its_author_or_the_posts_author(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.register("eve", "Eve").await;
    let mut comment_ids = Vec::new();
    for n in 0..3 {
        let comment = app
            .commented("bob", &post_id, &format!("comment {n}"))
            .await;
        comment_ids.push(comment["id"].as_str().expect("id").to_owned());
    }
    let comment_path = |id: &str| format!("/api/posts/{post_id}/comments/{id}");

    assert_eq!(
        delete(&app, &comment_path(&comment_ids[0]), None)
            .await
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        delete(&app, &comment_path(&comment_ids[0]), Some("eve"))
            .await
            .status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(counts(&app, &post_id).await.0, 3);

    let by_author = delete(&app, &comment_path(&comment_ids[0]), Some("bob")).await;
    assert_eq!(by_author.status(), StatusCode::NO_CONTENT);
    let by_post_author = delete(&app, &comment_path(&comment_ids[1]), Some("ada")).await;
    assert_eq!(by_post_author.status(), StatusCode::NO_CONTENT);
    assert_eq!(counts(&app, &post_id).await.0, 1);
    let comments = app
        .all_pages(&format!("/api/posts/{post_id}/comments"), 10)
        .await;
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0]["id"], comment_ids[2].as_str());

    let twice = delete(&app, &comment_path(&comment_ids[0]), Some("bob")).await;
    assert_eq!(twice.status(), StatusCode::NOT_FOUND);
    assert_eq!(problem_code(twice).await, "not-found");
    assert_eq!(
        counts(&app, &post_id).await.0,
        1,
        "a second delete lowers nothing"
    );
    app.assert_verifies().await;
}

async fn an_unlike_lowers_the_count_and_liking_again_works(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let likes = format!("/api/posts/{post_id}/likes");
    assert_eq!(
        delete(&app, &likes, None).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let not_liked = delete(&app, &likes, Some("bob")).await;
    assert_eq!(not_liked.status(), StatusCode::NOT_FOUND);

    app.liked("bob", &post_id).await;
    app.liked("ada", &post_id).await;
    assert_eq!(counts(&app, &post_id).await.1, 2);
    assert_eq!(
        delete(&app, &likes, Some("bob")).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(counts(&app, &post_id).await.1, 1);
    let remaining = app.all_pages(&likes, 10).await;
    assert_eq!(remaining.len(), 1);
    assert_eq!(
        remaining[0]["userId"], "ada",
        "only the caller's own like went"
    );

    assert_eq!(
        app.like("bob", &post_id).await.status(),
        StatusCode::CREATED,
        "liking again after an unlike is a new like"
    );
    assert_eq!(counts(&app, &post_id).await.1, 2);
    app.assert_verifies().await;
}

async fn racing_likes_and_unlikes_keep_the_count_equal_to_the_likes(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let users = app.register_many("fan-", 50).await;
    // Half of them like first, so their unlikes have something to remove; then everyone
    // likes or unlikes at once: 25 unlikes of existing likes racing 25 new likes.
    for user in &users[..25] {
        app.liked(user, &post_id).await;
    }
    let likes = format!("/api/posts/{post_id}/likes");
    let racing = users.iter().enumerate().map(|(n, user)| {
        let (app, likes, post_id) = (&app, &likes, &post_id);
        async move {
            if n < 25 {
                delete(app, likes, Some(user)).await.status()
            } else {
                app.like(user, post_id).await.status()
            }
        }
    });
    let statuses = join_all(racing).await;
    for (n, status) in statuses.iter().enumerate() {
        let expected = if n < 25 {
            StatusCode::NO_CONTENT
        } else {
            StatusCode::CREATED
        };
        assert_eq!(*status, expected, "request {n}");
    }
    let (_, like_count) = counts(&app, &post_id).await;
    assert_eq!(like_count as usize, listed(&app, &likes).await);
    assert_eq!(like_count, 25);
    app.assert_verifies().await;
}

async fn repeated_unlikes_lower_the_count_once(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.liked("bob", &post_id).await;
    app.liked("ada", &post_id).await;
    let likes = format!("/api/posts/{post_id}/likes");
    let statuses: Vec<StatusCode> = join_all((0..10).map(|_| delete(&app, &likes, Some("bob"))))
        .await
        .iter()
        .map(Response::status)
        .collect();
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::NO_CONTENT)
            .count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::NO_CONTENT || *s == StatusCode::NOT_FOUND),
        "{statuses:?}"
    );
    assert_eq!(counts(&app, &post_id).await.1, 1);
    assert_eq!(listed(&app, &likes).await, 1);
    app.assert_verifies().await;
}

async fn a_deleted_account_is_gone_at_once_and_can_register_again(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    assert_eq!(
        delete(&app, "/api/users/bob", None).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        delete(&app, "/api/users/bob", Some("ada")).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(app.get("/api/users/bob").await.status(), StatusCode::OK);

    let erased = delete(&app, "/api/users/bob", Some("bob")).await;
    assert_eq!(erased.status(), StatusCode::ACCEPTED);
    let gone = app.get("/api/users/bob").await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    assert_eq!(problem_code(gone).await, "user-not-found");
    assert_eq!(
        app.comment("bob", &post_id, "still here?").await.status(),
        StatusCode::NOT_FOUND,
        "an erased caller cannot write"
    );
    assert_eq!(
        app.like("bob", &post_id).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.create_post("bob", "t", "c").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        delete(&app, "/api/users/bob", Some("bob")).await.status(),
        StatusCode::NOT_FOUND,
        "already deleted"
    );

    assert_eq!(
        app.put_user("bob", "Bob again").await.status(),
        StatusCode::CREATED
    );
    app.liked("bob", &post_id).await;
    app.assert_verifies().await;
}

async fn deletes_of_what_does_not_exist_are_404_and_write_nothing(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    for path in [
        "/api/posts/no-such-post".to_owned(),
        "/api/posts/no-such-post/likes".to_owned(),
        "/api/posts/no-such-post/comments/c1".to_owned(),
        format!("/api/posts/{post_id}/comments/no-such-comment"),
    ] {
        let response = delete(&app, &path, Some("ada")).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "DELETE {path}");
        assert_eq!(
            content_type(response.headers()),
            Some("application/problem+json")
        );
    }
    // A like's id asked for as a comment is no comment.
    app.liked("bob", &post_id).await;
    let like_id = app
        .all_pages(&format!("/api/posts/{post_id}/likes"), 10)
        .await[0]["id"]
        .as_str()
        .expect("like id")
        .to_owned();
    let wrong_kind = delete(
        &app,
        &format!("/api/posts/{post_id}/comments/{like_id}"),
        Some("ada"),
    )
    .await;
    assert_eq!(wrong_kind.status(), StatusCode::NOT_FOUND);
    assert_eq!(counts(&app, &post_id).await, (0, 1));
    assert_eq!(
        delete(&app, "/api/users/nobody", Some("nobody"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    app.assert_verifies().await;
}

/// The items of one partition of `posts` (a post, its tombstone, comments, likes).
pub async fn partition_items(app: &TestApp, post_id: &str) -> Vec<Value> {
    app.store
        .query(
            Container::Posts,
            &Query::in_partition(PartitionKey::single(post_id)),
            PageRequest::first(1_000),
        )
        .await
        .expect("query")
        .items
}

pub(crate) async fn feed_ids(app: &TestApp) -> Vec<String> {
    ids(app.get_json("/api/feed").await["items"]
        .as_array()
        .expect("feed items"))
}

async fn a_deleted_posts_copies_comments_and_likes_go(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let kept = app.new_post("ada", "Kept", "x").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for n in 0..5 {
        app.commented("bob", &post_id, &format!("c{n}")).await;
    }
    app.liked("bob", &post_id).await;
    eventually(Duration::from_secs(30), || async {
        (feed_ids(&app).await.len() == 2).then_some(())
    })
    .await;

    let deleted = delete(&app, &format!("/api/posts/{post_id}"), Some("ada")).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    eventually(Duration::from_secs(30), || async {
        let mine = ids(&app.all_pages("/api/users/ada/posts", 100).await);
        let feed = feed_ids(&app).await;
        let left = partition_items(&app, &post_id).await;
        (mine == [kept.clone()] && feed == [kept.clone()] && left.len() == 1).then_some(())
    })
    .await;
    let left = partition_items(&app, &post_id).await;
    assert_eq!(left[0]["type"], "tombstone", "only the tombstone is left");
    assert!(
        left[0].get("title").is_none(),
        "the tombstone keeps no content"
    );
    assert!(left[0]["ttl"].as_u64().is_some_and(|ttl| ttl > 0));
    app.assert_verifies().await;
}

async fn the_feed_refills_after_deleting_posts_in_it(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut created = app.new_posts("ada", 104, "post", "x").await;
    let newest_first =
        |posts: &[String]| -> Vec<String> { posts.iter().rev().take(100).cloned().collect() };
    let expected = newest_first(&created);
    eventually(Duration::from_secs(60), || async {
        (feed_ids(&app).await == expected).then_some(())
    })
    .await;

    // Three posts inside the feed (newest, middle, oldest of it) and one already outside.
    for at in [103, 50, 4, 0] {
        let id = created[at].clone();
        let deleted = delete(&app, &format!("/api/posts/{id}"), Some("ada")).await;
        assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    }
    for at in [103, 50, 4, 0] {
        created.remove(at);
    }
    assert_eq!(created.len(), 100);
    let expected = newest_first(&created);
    eventually(Duration::from_secs(60), || async {
        (feed_ids(&app).await == expected).then_some(())
    })
    .await;
    app.assert_verifies().await;
}

async fn an_erased_account_takes_its_content_and_its_counts_with_it(app: TestApp) {
    let adas_post = post_by_ada(&app).await;
    app.register("cyd", "Cyd").await;
    // Bob writes three posts, which others comment on and like, and comments on and likes
    // Ada's post.
    let mut bobs_posts = Vec::new();
    for n in 0..3 {
        let post = app.new_post("bob", &format!("bob {n}"), "x").await;
        let id = post["id"].as_str().expect("id").to_owned();
        app.commented("cyd", &id, "nice").await;
        app.liked("ada", &id).await;
        bobs_posts.push(id);
    }
    for n in 0..4 {
        app.commented("bob", &adas_post, &format!("bob says {n}"))
            .await;
    }
    app.commented("cyd", &adas_post, "cyd says").await;
    app.liked("bob", &adas_post).await;
    app.liked("cyd", &adas_post).await;
    assert_eq!(counts(&app, &adas_post).await, (5, 2));
    eventually(Duration::from_secs(30), || async {
        (feed_ids(&app).await.len() == 4).then_some(())
    })
    .await;

    assert_eq!(
        delete(&app, "/api/users/bob", Some("bob")).await.status(),
        StatusCode::ACCEPTED
    );
    eventually(Duration::from_secs(60), || async {
        let paths: Vec<String> = bobs_posts
            .iter()
            .map(|id| format!("/api/posts/{id}"))
            .collect();
        let bob_gone = join_all(paths.iter().map(|path| app.get(path)))
            .await
            .iter()
            .all(|r| r.status() == StatusCode::NOT_FOUND);
        let counts_lowered = counts(&app, &adas_post).await == (1, 1);
        let feed = feed_ids(&app).await == [adas_post.clone()];
        (bob_gone && counts_lowered && feed).then_some(())
    })
    .await;
    let comments = app
        .all_pages(&format!("/api/posts/{adas_post}/comments"), 100)
        .await;
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0]["userId"], "cyd");
    let likes = app
        .all_pages(&format!("/api/posts/{adas_post}/likes"), 100)
        .await;
    assert_eq!(likes.len(), 1);
    assert_eq!(likes[0]["userId"], "cyd");
    eventually(Duration::from_secs(30), || async {
        let mut leftovers = 0;
        for id in &bobs_posts {
            leftovers += partition_items(&app, id).await.len() - 1; // the tombstone
        }
        (leftovers == 0).then_some(())
    })
    .await;
    assert_eq!(
        app.get("/api/users/bob/posts").await.status(),
        StatusCode::NOT_FOUND
    );

    // Registering again starts afresh, and what the new account writes is kept.
    assert_eq!(
        app.put_user("bob", "Bob II").await.status(),
        StatusCode::CREATED
    );
    let fresh = app.new_post("bob", "again", "x").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    app.liked("bob", &adas_post).await;
    eventually(Duration::from_secs(30), || async {
        (ids(&app.all_pages("/api/users/bob/posts", 100).await) == [fresh.clone()]).then_some(())
    })
    .await;
    assert_eq!(counts(&app, &adas_post).await, (1, 2));
    app.assert_verifies().await;
}

/// Replays every change of `users` and `posts` through the handlers, as a redelivered batch.
async fn replay_everything(app: &TestApp) -> usize {
    let mut written = 0;
    for container in [Container::Users, Container::Posts] {
        let changes = app
            .store
            .read_changes(container, None, 10_000)
            .await
            .expect("change log");
        let report = match container {
            Container::Users => on_user_changed(&app.store, &changes.items).await,
            _ => on_post_changed(&app.store, &changes.items).await,
        }
        .expect("handler");
        written += report.written;
    }
    written
}

async fn redelivered_deletes_write_nothing(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let other = app.new_post("bob", "Bob's", "x").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    app.commented("bob", &post_id, "c").await;
    app.liked("bob", &post_id).await;
    app.liked("ada", &other).await;
    assert_eq!(
        delete(&app, &format!("/api/posts/{post_id}"), Some("ada"))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        delete(&app, "/api/users/ada", Some("ada")).await.status(),
        StatusCode::ACCEPTED
    );
    eventually(Duration::from_secs(30), || async {
        let settled =
            counts(&app, &other).await == (0, 0) && feed_ids(&app).await == [other.clone()];
        settled.then_some(())
    })
    .await;
    // Let the pump finish what it was doing, then deliver everything once more.
    eventually(Duration::from_secs(30), || async {
        (replay_everything(&app).await == 0).then_some(())
    })
    .await;
    assert_eq!(
        replay_everything(&app).await,
        0,
        "a redelivered batch writes nothing"
    );
    assert_eq!(counts(&app, &other).await, (0, 0));
    app.assert_verifies().await;
}
