//! The `multi` layout through HTTP, on both backends: tenants are independent blogs. The
//! same user id in two tenants is two users; nothing of one tenant can be read or written
//! through another's routes; renames, feeds and trims stay within their tenant; Q7 lists a
//! tenant's users; the routes of the other layout and invalid tenant ids are refused. The
//! real binary keeps its tenants across a restart, and `verify` needs to know the layout.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::store::{Container, Pages, Query, Store, Tenancy};
use futures::{StreamExt, stream};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use testkit::{Backend, TestApp, binary, content_type, eventually, ids, register_at};

/// Two tenants; the second's id starts with the first's, so a text-prefix match would leak.
const NORTH: &str = "north";
const NORTH_2: &str = "north-2";

testkit::on_every_backend!(
    the_same_user_id_in_two_tenants_is_two_users,
    another_tenants_post_is_404_for_every_operation,
    a_rename_in_one_tenant_leaves_the_other_alone,
    each_tenant_has_its_own_front_page_trimmed_to_100,
    q7_lists_exactly_the_tenants_users_a_page_at_a_time,
    each_layout_answers_404_on_the_others_routes,
    an_invalid_tenant_id_is_a_400_and_writes_nothing,
    a_tenant_is_served_the_multi_openapi_document,
);

/// A `multi` application and its two tenants.
async fn two_tenants(backend: Backend) -> (TestApp, TestApp) {
    let app = TestApp::spawn(backend).layout(Tenancy::Multi).start().await;
    (app.in_tenant(NORTH), app.in_tenant(NORTH_2))
}

fn id_of(item: &Value) -> String {
    item["id"].as_str().expect("id").to_owned()
}

async fn assert_problem(response: Response, status: StatusCode, code: &str) {
    assert_eq!(response.status(), status, "expected {code}");
    assert_eq!(
        content_type(response.headers()),
        Some("application/problem+json")
    );
    let problem: Value = response.json().await.expect("problem JSON");
    assert_eq!(problem["code"], code, "{problem}");
}

/// Every item of `container` in the whole store, each with its tenant.
async fn scan(store: &Arc<dyn Store>, container: Container) -> Vec<Value> {
    let mut all = Vec::new();
    let query = Query::cross_partition();
    let mut pages = Pages::new(&**store, container, &query, 1_000);
    while let Some(items) = pages.next().await.expect("the store can be scanned") {
        all.extend(items);
    }
    all
}

/// Every item of the three model containers of the whole store.
async fn whole_store(store: &Arc<dyn Store>) -> Vec<Value> {
    let mut all = scan(store, Container::Users).await;
    all.extend(scan(store, Container::Posts).await);
    all.extend(scan(store, Container::Feed).await);
    all
}

/// The items of the whole store that belong to `tenant`.
async fn items_of(app: &TestApp, tenant: &str) -> Vec<Value> {
    whole_store(&app.whole_store)
        .await
        .into_iter()
        .filter(|item| item["tenantId"] == tenant)
        .collect()
}

async fn feed_ids(app: &TestApp) -> Vec<String> {
    ids(app.get_json("/api/feed").await["items"]
        .as_array()
        .expect("feed items"))
}

async fn the_same_user_id_in_two_tenants_is_two_users(backend: Backend) {
    let (north, north_2) = two_tenants(backend).await;
    north.register("ada", "Ada of the north").await;
    north_2.register("ada", "Ada the second").await;
    assert_eq!(
        north.get_json("/api/users/ada").await["username"],
        "Ada of the north"
    );
    assert_eq!(
        north_2.get_json("/api/users/ada").await["username"],
        "Ada the second"
    );
    let stored: BTreeSet<(String, String)> = whole_store(&north.whole_store)
        .await
        .iter()
        .filter(|item| item["type"] == "user")
        .map(|user| (user["tenantId"].to_string(), user["username"].to_string()))
        .collect();
    assert_eq!(stored.len(), 2, "two user items: {stored:?}");

    // Each Ada writes in her own blog only.
    let northern = id_of(&north.new_post("ada", "From the north", "x").await);
    let second = id_of(&north_2.new_post("ada", "From the second", "y").await);
    eventually(Duration::from_secs(30), || async {
        let mine = ids(&north.all_pages("/api/users/ada/posts", 10).await);
        let theirs = ids(&north_2.all_pages("/api/users/ada/posts", 10).await);
        let feeds = (feed_ids(&north).await, feed_ids(&north_2).await);
        (mine == [northern.clone()]
            && theirs == [second.clone()]
            && feeds == (vec![northern.clone()], vec![second.clone()]))
            .then_some(())
    })
    .await;
    assert_eq!(
        north.get_json(&format!("/api/posts/{northern}")).await["userUsername"],
        "Ada of the north"
    );

    // A rename in one tenant is not the other's.
    assert_eq!(
        north.put_user("ada", "Ada L.").await.status(),
        StatusCode::OK
    );
    assert_eq!(
        north_2.get_json("/api/users/ada").await["username"],
        "Ada the second"
    );

    // The second Ada erases her account: her post goes, the northern Ada keeps hers.
    let erased = north_2
        .send(Method::DELETE, "/api/users/ada", Some("ada"), None)
        .await;
    assert_eq!(erased.status(), StatusCode::ACCEPTED);
    assert_problem(
        north_2.get("/api/users/ada").await,
        StatusCode::NOT_FOUND,
        "user-not-found",
    )
    .await;
    eventually(Duration::from_secs(30), || async {
        let gone = north_2.get(&format!("/api/posts/{second}")).await.status();
        (gone == StatusCode::NOT_FOUND && feed_ids(&north_2).await.is_empty()).then_some(())
    })
    .await;
    north.assert_verifies().await;
    assert_eq!(north.get_json("/api/users/ada").await["username"], "Ada L.");
    assert_eq!(
        north.get_json(&format!("/api/posts/{northern}")).await["userUsername"],
        "Ada L."
    );
    assert_eq!(feed_ids(&north).await, vec![northern.clone()]);
    assert_eq!(
        ids(&north.all_pages("/api/users/ada/posts", 10).await),
        vec![northern]
    );
}

async fn another_tenants_post_is_404_for_every_operation(backend: Backend) {
    let (north, north_2) = two_tenants(backend).await;
    // The same ids in both tenants: whatever is refused is refused for its tenant alone.
    for tenant in [&north, &north_2] {
        tenant.register("ada", "Ada").await;
        tenant.register("bob", "Bob").await;
    }
    let post = north.new_post("ada", "Northern", "text").await;
    let post_id = id_of(&post);
    let comment: Value = north
        .comment("bob", &post_id, "nice")
        .await
        .json()
        .await
        .expect("comment JSON");
    let comment_id = id_of(&comment);
    north.liked("bob", &post_id).await;

    let path = format!("/api/posts/{post_id}");
    let edit = json!({"title": "Taken over", "content": "by the other tenant"});
    let through_the_other_tenant = [
        (Method::GET, path.clone(), None, None),
        (Method::GET, format!("{path}/comments"), None, None),
        (Method::GET, format!("{path}/likes"), None, None),
        (Method::PUT, path.clone(), Some("ada"), Some(edit)),
        (
            Method::POST,
            format!("{path}/comments"),
            Some("bob"),
            Some(json!({"content": "hi"})),
        ),
        (Method::POST, format!("{path}/likes"), Some("ada"), None),
        (Method::DELETE, format!("{path}/likes"), Some("bob"), None),
        (
            Method::DELETE,
            format!("{path}/comments/{comment_id}"),
            Some("bob"),
            None,
        ),
        (Method::DELETE, path.clone(), Some("ada"), None),
    ];
    for (method, request_path, caller, body) in through_the_other_tenant {
        let response = north_2
            .send(method.clone(), &request_path, caller, body)
            .await;
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "{method} {request_path} through {NORTH_2}"
        );
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
    }

    // The post is as its tenant left it, and the other tenant holds nothing but its users.
    let unchanged = north.get_json(&path).await;
    assert_eq!(unchanged["title"], "Northern");
    assert_eq!(
        (&unchanged["commentCount"], &unchanged["likeCount"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(
        north.all_pages(&format!("{path}/comments"), 10).await.len(),
        1
    );
    assert_eq!(north.all_pages(&format!("{path}/likes"), 10).await.len(), 1);
    eventually(Duration::from_secs(30), || async {
        (feed_ids(&north).await == [post_id.clone()]).then_some(())
    })
    .await;
    north.assert_verifies().await;
    let theirs = items_of(&north, NORTH_2).await;
    assert!(
        theirs.iter().all(|item| item["type"] == "user"),
        "{theirs:?}"
    );
    assert!(feed_ids(&north_2).await.is_empty());
}

async fn a_rename_in_one_tenant_leaves_the_other_alone(backend: Backend) {
    let (north, north_2) = two_tenants(backend).await;
    let mut posts = Vec::new();
    for tenant in [&north, &north_2] {
        tenant.register("ada", "Ada").await;
        tenant.register("bob", "Bob").await;
        let post_id = id_of(&tenant.new_post("ada", "Ada's", "text").await);
        for (caller, text) in [("ada", "mine"), ("bob", "nice")] {
            let response = tenant.comment(caller, &post_id, text).await;
            assert_eq!(response.status(), StatusCode::CREATED);
        }
        for liker in ["ada", "bob"] {
            tenant.liked(liker, &post_id).await;
        }
        posts.push(post_id);
    }
    let (northern, second) = (&posts[0], &posts[1]);

    assert_eq!(
        north.put_user("ada", "Ada Lovelace").await.status(),
        StatusCode::OK
    );
    let renamed = vec![json!("Ada Lovelace"); 5];
    eventually(Duration::from_secs(30), || async {
        (adas_names(&north, northern).await == renamed).then_some(())
    })
    .await;
    // Once every copy of every tenant is consistent, the other tenant's Ada is still Ada.
    north.assert_verifies().await;
    assert_eq!(adas_names(&north_2, second).await, vec![json!("Ada"); 5]);
    assert_eq!(north_2.get_json("/api/users/ada").await["username"], "Ada");
    let bobs = north_2
        .all_pages(&format!("/api/posts/{second}/comments"), 10)
        .await;
    assert!(bobs.iter().any(|c| c["userUsername"] == "Bob"));
}

/// The usernames on what Ada wrote, as `tenant` shows them: her post, her comment, her like,
/// her post's copies in her list and in the feed.
async fn adas_names(tenant: &TestApp, post_id: &str) -> Vec<Value> {
    let post = tenant.get_json(&format!("/api/posts/{post_id}")).await;
    let (comments, likes) = tenant.comments_and_likes(post_id, 10).await;
    let listed = tenant.all_pages("/api/users/ada/posts", 10).await;
    let feed = tenant.get_json("/api/feed").await["items"].clone();
    let feed = feed.as_array().cloned().unwrap_or_default();
    let mut names = vec![post["userUsername"].clone()];
    for items in [comments, likes, listed, feed] {
        names.extend(
            items
                .iter()
                .filter(|item| item["userId"] == "ada")
                .map(|item| item["userUsername"].clone()),
        );
    }
    names
}

async fn each_tenant_has_its_own_front_page_trimmed_to_100(backend: Backend) {
    let (north, north_2) = two_tenants(backend).await;
    north.register("ada", "Ada").await;
    north_2.register("ada", "Ada").await;
    // 105 posts in one tenant, 3 in the other written among them: one shared front page
    // would push the small tenant's posts out, or show them to the large one.
    let large = stream::iter(0..105)
        .map(|n| {
            let north = &north;
            async move { north.new_post("ada", &format!("north {n}"), "x").await }
        })
        .buffer_unordered(8)
        .collect::<Vec<Value>>();
    let small = async {
        let mut posts = Vec::new();
        for n in 0..3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            posts.push(north_2.new_post("ada", &format!("second {n}"), "y").await);
        }
        posts
    };
    let (large, small) = tokio::join!(large, small);

    let newest_first = |posts: &[Value], keep: usize| -> Vec<String> {
        let mut dated: Vec<(String, String)> = posts
            .iter()
            .map(|post| {
                let date = post["creationDate"].as_str().expect("creationDate");
                (date.to_owned(), id_of(post))
            })
            .collect();
        dated.sort();
        dated
            .into_iter()
            .rev()
            .take(keep)
            .map(|(_, id)| id)
            .collect()
    };
    let expected_north = newest_first(&large, 100);
    let expected_second = newest_first(&small, 100);
    assert_eq!(expected_second.len(), 3);
    eventually(Duration::from_secs(60), || async {
        let feeds = (feed_ids(&north).await, feed_ids(&north_2).await);
        (feeds == (expected_north.clone(), expected_second.clone())).then_some(())
    })
    .await;
    // The writer trimmed the large tenant's feed partition; the small one's is whole.
    eventually(Duration::from_secs(30), || async {
        let feed = scan(&north.whole_store, Container::Feed).await;
        let count_of = |tenant: &str| feed.iter().filter(|i| i["tenantId"] == tenant).count();
        (count_of(NORTH) == 100 && count_of(NORTH_2) == 3).then_some(())
    })
    .await;
    north.assert_verifies().await;
}

async fn q7_lists_exactly_the_tenants_users_a_page_at_a_time(backend: Backend) {
    let (north, north_2) = two_tenants(backend).await;
    for n in 1..=7 {
        north
            .register(&format!("u{n}"), &format!("North {n}"))
            .await;
    }
    north_2.register("u1", "Second 1").await;
    north_2.register("x9", "Second 9").await;
    // An erased account is no user: its tombstone is not listed.
    let erased = north
        .send(Method::DELETE, "/api/users/u3", Some("u3"), None)
        .await;
    assert_eq!(erased.status(), StatusCode::ACCEPTED);

    let expected: Vec<Value> = [1, 2, 4, 5, 6, 7]
        .iter()
        .map(|n| {
            let id = format!("u{n}");
            json!({"id": id, "type": "user", "userId": id, "username": format!("North {n}")})
        })
        .collect();
    for limit in [1, 2, 100] {
        let mut listed = north.all_pages("/api/users", limit).await;
        listed.sort_by_key(id_of);
        assert_eq!(listed, expected, "pages of {limit}");
    }
    let first = north.get_json("/api/users?limit=4").await;
    assert_eq!(first["items"].as_array().map(Vec::len), Some(4));
    let token = first["continuation"]
        .as_str()
        .expect("a continuation after a full page")
        .to_owned();

    let mut second: Vec<Value> = north_2.all_pages("/api/users", 1).await;
    second.sort_by_key(id_of);
    assert_eq!(
        second,
        [
            json!({"id": "u1", "type": "user", "userId": "u1", "username": "Second 1"}),
            json!({"id": "x9", "type": "user", "userId": "x9", "username": "Second 9"}),
        ]
    );
    // One tenant's continuation through another's list shows nothing of the first.
    let crossed = north_2
        .client
        .get(north_2.url("/api/users"))
        .query(&[("continuation", token.as_str())])
        .send()
        .await
        .expect("request sent");
    if crossed.status() == StatusCode::OK {
        let page: Value = crossed.json().await.expect("page JSON");
        for user in page["items"].as_array().expect("items") {
            assert!(second.contains(user), "{user} leaked into {NORTH_2}");
        }
    } else {
        assert_problem(crossed, StatusCode::BAD_REQUEST, "invalid-continuation").await;
    }

    // A tenant nobody has written to has no users.
    let nobody = north.in_tenant("nobody-here");
    assert_eq!(
        nobody.get_json("/api/users").await,
        json!({"items": [], "continuation": null})
    );
    for bad in ["limit=0", "limit=101", "limit=x"] {
        let response = north.get(&format!("/api/users?{bad}")).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    assert_problem(
        north.get("/api/users?continuation=garbage!!").await,
        StatusCode::BAD_REQUEST,
        "invalid-continuation",
    )
    .await;
    north.assert_verifies().await;
}

async fn each_layout_answers_404_on_the_others_routes(backend: Backend) {
    let multi = TestApp::spawn(backend).layout(Tenancy::Multi).start().await;
    let plain_routes = [
        (Method::GET, "/api/feed"),
        (Method::GET, "/api/users/ada"),
        (Method::PUT, "/api/users/ada"),
        (Method::POST, "/api/posts"),
        (Method::GET, "/api/openapi.json"),
        (Method::GET, "/api/docs"),
        (Method::DELETE, "/api/users/ada"),
        (Method::GET, "/api/users"),
    ];
    for (method, path) in &plain_routes {
        let response = multi
            .client
            .request(method.clone(), multi.raw_url(path))
            .header("x-ms-client-principal-id", "ada")
            .json(&json!({"username": "Ada", "title": "t", "content": "c"}))
            .send()
            .await
            .expect("request sent");
        assert_problem(response, StatusCode::NOT_FOUND, "route-not-found").await;
    }
    let health = multi.get_raw("/api/health").await;
    assert_eq!(
        health.status(),
        StatusCode::OK,
        "the health probe is the site's"
    );
    assert!(whole_store(&multi.whole_store).await.is_empty());

    let single = TestApp::spawn(backend).start().await;
    for (method, path) in [
        (Method::GET, "/api/tenants/north/feed"),
        (Method::PUT, "/api/tenants/north/users/ada"),
        (Method::GET, "/api/tenants/north/users"),
        (Method::GET, "/api/tenants/north/openapi.json"),
        (Method::GET, "/api/users"),
    ] {
        let response = single
            .send(
                method.clone(),
                path,
                Some("ada"),
                Some(json!({"username": "Ada"})),
            )
            .await;
        assert_problem(response, StatusCode::NOT_FOUND, "route-not-found").await;
    }
    assert!(whole_store(&single.whole_store).await.is_empty());
}

async fn an_invalid_tenant_id_is_a_400_and_writes_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).layout(Tenancy::Multi).start().await;
    let too_long = "t".repeat(256);
    let invalid = [
        ("a%01b", "invalid-field"),
        ("a%0Ab", "invalid-field"),
        ("a%2Fb", "invalid-field"),
        ("a%5Cb", "invalid-field"),
        ("a%3Fb", "invalid-field"),
        ("a%23b", "invalid-field"),
        (too_long.as_str(), "invalid-field"),
        ("%FF", "invalid-path"),
    ];
    for (tenant, code) in invalid {
        let base = format!("/api/tenants/{tenant}");
        let requests = [
            (
                Method::PUT,
                format!("{base}/users/ada"),
                json!({"username": "Ada"}),
            ),
            (
                Method::POST,
                format!("{base}/posts"),
                json!({"title": "t", "content": "c"}),
            ),
            (Method::GET, format!("{base}/feed"), Value::Null),
            (Method::GET, format!("{base}/users"), Value::Null),
        ];
        for (method, path, body) in requests {
            let response = app
                .client
                .request(method, app.raw_url(&path))
                .header("x-ms-client-principal-id", "ada")
                .json(&body)
                .send()
                .await
                .expect("request sent");
            assert_problem(response, StatusCode::BAD_REQUEST, code).await;
        }
    }
    assert!(
        whole_store(&app.whole_store).await.is_empty(),
        "a refused tenant wrote something"
    );

    // At the limit, 255 bytes (multi-byte characters among them), a tenant id is fine.
    let longest = format!("{}x", "ü".repeat(127));
    assert_eq!(longest.len(), 255);
    let tenant = app.in_tenant(&longest);
    tenant.register("ada", "Ada").await;
    let post = id_of(&tenant.new_post("ada", "At the limit", "x").await);
    eventually(Duration::from_secs(30), || async {
        (feed_ids(&tenant).await == [post.clone()]).then_some(())
    })
    .await;
    assert_eq!(
        items_of(&app, &longest).await.len(),
        4,
        "user, post, two copies"
    );
    app.assert_verifies().await;
}

async fn a_tenant_is_served_the_multi_openapi_document(backend: Backend) {
    let (north, north_2) = two_tenants(backend).await;
    let served = north.get_json("/api/openapi.json").await;
    let multi: Value = serde_json::from_str(&cosmos_blog::api::openapi::json_for(Tenancy::Multi))
        .expect("the multi document is JSON");
    assert_eq!(served, multi);
    assert_eq!(north_2.get_json("/api/openapi.json").await, multi);
    let single: Value = serde_json::from_str(&cosmos_blog::api::openapi::json()).expect("JSON");
    assert_ne!(served, single);

    let paths = served["paths"].as_object().expect("paths");
    for path in paths.keys() {
        assert!(
            path == cosmos_blog::api::HEALTH_PATH || path.starts_with("/api/tenants/{tenantId}/"),
            "{path} outside the tenant routes"
        );
    }
    assert!(
        paths["/api/tenants/{tenantId}/users"]["get"].is_object(),
        "Q7"
    );
    assert!(paths["/api/tenants/{tenantId}/feed"]["get"].is_object());
    // The docs page and its assets load from beside it, under the tenant too.
    for asset in [
        "/api/docs",
        "/api/docs/swagger-ui.css",
        "/api/docs/swagger-ui-bundle.js",
    ] {
        assert_eq!(north.get(asset).await.status(), StatusCode::OK, "{asset}");
    }
}

/// The real binary in `multi`: serves a tenant's routes, keeps its data across a restart,
/// refuses to start in `single` on that data, and `verify` passes given the layout and exits
/// 2 naming it when not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_tenants_and_keeps_them_across_a_restart() {
    let data_dir = TempDir::new().expect("temp dir");
    let client = reqwest::Client::new();
    let start_multi = || {
        binary!()
            .on_data(data_dir.path())
            .env("BLOG_TENANCY", "multi")
            .serve()
    };
    let mut server = start_multi();
    let base = server.base().await;

    let tenant = format!("{base}/api/tenants/{NORTH}");
    register_at(&client, &tenant, "ada", "Ada").await;
    let post: Value = client
        .post(format!("{tenant}/posts"))
        .header("x-ms-client-principal-id", "ada")
        .json(&json!({"title": "Kept", "content": "across restarts"}))
        .send()
        .await
        .expect("request sent")
        .json()
        .await
        .expect("post JSON");
    let post_id = id_of(&post);
    let status_of = |url: String| {
        let client = client.clone();
        async move { client.get(url).send().await.expect("request sent").status() }
    };
    let plain = status_of(format!("{base}/api/feed")).await;
    assert_eq!(plain, StatusCode::NOT_FOUND);
    let feed_of = |url: String| {
        let client = client.clone();
        async move {
            let feed: Value = client.get(url).send().await.ok()?.json().await.ok()?;
            Some(ids(feed["items"].as_array()?))
        }
    };
    // The feed and the archive's month: the post's copies are all written (the views'
    // copies arrive after the feed's), so the store verifies once the server is gone.
    let published = post["publishedDate"].as_str().expect("a publication date");
    let month = format!(
        "{tenant}/archive/{}/{}/posts",
        &published[..4],
        &published[5..7]
    );
    eventually(Duration::from_secs(30), || async {
        let copied = feed_of(format!("{tenant}/feed")).await? == [post_id.clone()]
            && feed_of(month.clone()).await? == [post_id.clone()];
        copied.then_some(())
    })
    .await;
    server.kill();

    // In `single`, the binary refuses the multi-tenant data and says why.
    let refusal = binary!()
        .on_data(data_dir.path())
        .exit_within(Duration::from_secs(30))
        .await;
    assert_ne!(refusal.0, Some(0), "started on the other layout");
    assert!(refusal.1.contains("multi layout"), "{}", refusal.1);

    // Restarted, on the port the system gives it this time.
    let mut server = start_multi();
    let base = server.base().await;
    let tenant = format!("{base}/api/tenants/{NORTH}");
    let user: Value = client
        .get(format!("{tenant}/users/ada"))
        .send()
        .await
        .expect("request sent")
        .json()
        .await
        .expect("user JSON");
    assert_eq!(user["username"], "Ada");
    assert_eq!(
        feed_of(format!("{tenant}/feed")).await,
        Some(vec![post_id.clone()])
    );
    let other = status_of(format!("{base}/api/tenants/{NORTH_2}/posts/{post_id}")).await;
    assert_eq!(other, StatusCode::NOT_FOUND);
    server.kill();

    let verified = binary!()
        .on_data(data_dir.path())
        .subcommand("verify")
        .args(["--tenancy", "multi"])
        .output();
    let stdout = String::from_utf8_lossy(&verified.stdout);
    assert_eq!(verified.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("verify: OK"), "{stdout}");
    let wrong_layout = binary!()
        .on_data(data_dir.path())
        .subcommand("verify")
        .output();
    let stderr = String::from_utf8_lossy(&wrong_layout.stderr);
    assert_eq!(wrong_layout.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("multi layout"), "{stderr}");
}
