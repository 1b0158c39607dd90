//! The multi-tenant layout: batches and forwarded requests stay within their tenant.

use super::*;

/// `(tenantId, id, title, creationDate)` of every item of `container` in a `multi` store.
async fn copies(h: &Harness, container: Container) -> BTreeSet<(String, String, String, String)> {
    let field = |item: &Value, name: &str| item[name].as_str().unwrap_or_default().to_owned();
    h.changes(container)
        .await
        .iter()
        .filter(|item| item["type"] == "post")
        .map(|item| {
            (
                field(item, "tenantId"),
                field(item, "id"),
                field(item, "title"),
                field(item, "creationDate"),
            )
        })
        .collect()
}

#[tokio::test]
async fn on_post_changed_copies_each_post_within_its_tenant() {
    let h = Harness::with(Tenancy::Multi);
    // A user copy and a feed copy each; in each tenant's archive, its posts' copies, the
    // month's count and its index entry.
    h.deliver(
        "OnPostChanged",
        "on_post_changed_two_tenants.json",
        "OnPostChanged: 4 processed, 16 written, 0 skipped",
    )
    .await;

    // Both tenants have a post `p-a` by a user `u-ada`: each keeps its own.
    let contoso = h.get("/api/tenants/contoso/feed").await;
    assert_eq!(ids(&contoso), ["p-b", "p-a"]);
    assert_eq!(contoso["items"][1]["title"], "Contoso first light");
    let fabrikam = h.get("/api/tenants/fabrikam/feed").await;
    assert_eq!(ids(&fabrikam), ["p-a", "p-c"]);
    assert_eq!(fabrikam["items"][0]["title"], "Fabrikam first light");
    assert_eq!(
        ids(&h.get("/api/tenants/contoso/users/u-ada/posts").await),
        ["p-b", "p-a"]
    );
    assert_eq!(
        ids(&h.get("/api/tenants/fabrikam/users/u-ada/posts").await),
        ["p-a"]
    );
    assert_eq!(
        ids(&h.get("/api/tenants/fabrikam/users/u-bob/posts").await),
        ["p-c"]
    );

    // In the store: each copy carries its own tenant, and dates come out canonical.
    let expected: BTreeSet<(String, String, String, String)> = [
        (
            "contoso",
            "p-a",
            "Contoso first light",
            "2026-11-22T09:15:02.1200000Z",
        ),
        (
            "contoso",
            "p-b",
            "Contoso second",
            "2026-11-22T09:15:03.0000000Z",
        ),
        (
            "fabrikam",
            "p-a",
            "Fabrikam first light",
            "2026-11-22T09:15:02.5000000Z",
        ),
        (
            "fabrikam",
            "p-c",
            "Fabrikam by bob",
            "2026-11-22T09:15:02.1234567Z",
        ),
    ]
    .iter()
    .map(|(t, id, title, date)| {
        (
            t.to_string(),
            id.to_string(),
            title.to_string(),
            date.to_string(),
        )
    })
    .collect();
    assert_eq!(copies(&h, Container::Feed).await, expected);
    assert_eq!(copies(&h, Container::Users).await, expected);

    // Redelivered: nothing written in either tenant.
    h.deliver(
        "OnPostChanged",
        "on_post_changed_two_tenants.json",
        "OnPostChanged: 4 processed, 0 written, 0 skipped",
    )
    .await;
}

#[tokio::test]
async fn on_user_changed_renames_the_same_user_id_within_each_tenant() {
    let h = Harness::with(Tenancy::Multi);
    let app = h.app_with(Authenticator::TrustedHeader);
    let mut posts = Vec::new();
    for tenant in ["contoso", "fabrikam"] {
        let user = json!({"username": "ada"});
        let put = forwarded_request(
            Method::PUT,
            &format!("/api/tenants/{tenant}/users/u-ada"),
            Some("u-ada"),
            Some(user),
        );
        assert_eq!(send(app.clone(), put).await.0, StatusCode::CREATED);
        let post = json!({"title": format!("{tenant} post"), "content": "Hello"});
        let create = forwarded_request(
            Method::POST,
            &format!("/api/tenants/{tenant}/posts"),
            Some("u-ada"),
            Some(post),
        );
        let (status, post) = send(app.clone(), create).await;
        assert_eq!(status, StatusCode::CREATED, "{post}");
        posts.push((tenant, post["id"].as_str().expect("post id").to_owned()));
    }

    // u-ada of contoso and u-ada of fabrikam each take their own new name; one batch of the
    // users' change feed carries both renames.
    for (tenant, username) in [("contoso", "ada.lovelace"), ("fabrikam", "ada.byron")] {
        let rename = forwarded_request(
            Method::PUT,
            &format!("/api/tenants/{tenant}/users/u-ada"),
            Some("u-ada"),
            Some(json!({ "username": username })),
        );
        assert_eq!(send(app.clone(), rename).await.0, StatusCode::OK);
    }
    h.deliver(
        "OnUserChanged",
        "on_user_changed_two_tenants.json",
        "OnUserChanged: 2 processed, 2 written, 0 skipped",
    )
    .await;
    for ((tenant, post), username) in posts.iter().zip(["ada.lovelace", "ada.byron"]) {
        let post = h.get(&format!("/api/tenants/{tenant}/posts/{post}")).await;
        assert_eq!(post["userUsername"], username, "{tenant}");
    }
    h.deliver(
        "OnUserChanged",
        "on_user_changed_two_tenants.json",
        "OnUserChanged: 2 processed, 0 written, 0 skipped",
    )
    .await;
}

#[tokio::test]
async fn forwarded_requests_reach_their_tenant_and_no_other() {
    let h = Harness::with(Tenancy::Multi);
    // Under the host with App Service Authentication on: the principal header is trusted.
    let app = h.app_with(Authenticator::TrustedHeader);
    let put = |tenant: &str, username: &str| {
        forwarded_request(
            Method::PUT,
            &format!("/api/tenants/{tenant}/users/u-ada"),
            Some("u-ada"),
            Some(json!({ "username": username })),
        )
    };
    let get = |path: &str| forwarded_request(Method::GET, path, None, None);

    // The same user id in two tenants: two users.
    let (status, user) = send(app.clone(), put("contoso", "ada")).await;
    assert_eq!(status, StatusCode::CREATED, "{user}");
    assert_eq!(
        user,
        json!({"id": "u-ada", "type": "user", "userId": "u-ada", "username": "ada"})
    );
    let (status, _) = send(app.clone(), put("fabrikam", "ada.byron")).await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, contoso) = send(app.clone(), get("/api/tenants/contoso/users/u-ada")).await;
    assert_eq!(contoso["username"], "ada");
    let (_, fabrikam) = send(app.clone(), get("/api/tenants/fabrikam/users/u-ada")).await;
    assert_eq!(fabrikam["username"], "ada.byron");

    // Q7 with its query string, as forwarded.
    let (status, page) = send(app.clone(), get("/api/tenants/contoso/users?limit=1")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), ["u-ada"]);

    // Another tenant does not see it; the plain route does not exist; a bad tenant id is a
    // bad request.
    let (status, problem) = send(app.clone(), get("/api/tenants/northwind/users/u-ada")).await;
    assert_eq!(
        (status, &problem["code"]),
        (StatusCode::NOT_FOUND, &json!("user-not-found"))
    );
    let (status, problem) = send(app.clone(), get("/api/users/u-ada")).await;
    assert_eq!(
        (status, &problem["code"]),
        (StatusCode::NOT_FOUND, &json!("route-not-found"))
    );
    let (status, problem) = send(app.clone(), get("/api/tenants/a%23b/users/u-ada")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
}
