//! C1 and Q1.

use reqwest::{Method, StatusCode};
use serde_json::json;

use testkit::{TestApp, operation_tests};

operation_tests!(
    creating_a_user_returns_201_and_the_user_item,
    renaming_a_user_returns_200_and_unchanged_put_writes_nothing,
    a_user_can_only_write_itself,
    usernames_are_trimmed_and_bounded,
);

async fn creating_a_user_returns_201_and_the_user_item(app: TestApp) {
    let response = app.put_user("ada", "Ada").await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"id": "ada", "type": "user", "userId": "ada", "username": "Ada"})
    );
    assert_eq!(app.get_json("/api/users/ada").await, body);
}

async fn stored_ada(app: &TestApp) -> cosmos_blog::store::Document {
    app.store
        .read_item(
            cosmos_blog::store::Container::Users,
            &cosmos_blog::store::PartitionKey::single("ada"),
            "ada",
        )
        .await
        .unwrap()
        .unwrap()
}

async fn renaming_a_user_returns_200_and_unchanged_put_writes_nothing(app: TestApp) {
    app.register("ada", "Ada").await;
    let renamed = app.put_user("ada", "Ada L.").await;
    assert_eq!(renamed.status(), StatusCode::OK);
    assert_eq!(app.get_json("/api/users/ada").await["username"], "Ada L.");

    let before = stored_ada(&app).await;
    let again = app.put_user("ada", "Ada L.").await;
    assert_eq!(again.status(), StatusCode::OK);
    let after = stored_ada(&app).await;
    assert_eq!(before.etag, after.etag, "an unchanged PUT must not write");
}

async fn a_user_can_only_write_itself(app: TestApp) {
    let anonymous = app
        .send(
            Method::PUT,
            "/api/users/ada",
            None,
            Some(json!({"username": "Ada"})),
        )
        .await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let impostor = app
        .send(
            Method::PUT,
            "/api/users/ada",
            Some("bob"),
            Some(json!({"username": "Ada"})),
        )
        .await;
    assert_eq!(impostor.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        app.get("/api/users/ada").await.status(),
        StatusCode::NOT_FOUND
    );
}

async fn usernames_are_trimmed_and_bounded(app: TestApp) {
    let response = app.put_user("ada", "  Ada  ").await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(app.get_json("/api/users/ada").await["username"], "Ada");
    for bad in ["", "   ", &"x".repeat(65)] {
        let response = app.put_user("bob", bad).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad:?}");
    }
    let exactly_64 = "é".repeat(64);
    assert_eq!(
        app.put_user("bob", &exactly_64).await.status(),
        StatusCode::CREATED
    );
}
