//! The Atom feeds: the front page's (Q6) and each author's (Q3).

use super::*;

async fn the_atom_feeds_hold_q6_and_q3(app: TestApp) {
    app.register("ada", HOSTILE).await;
    app.register("bob", "Bob").await;
    for n in 0..3 {
        app.new_post("ada", &format!("{HOSTILE} {n}"), &format!("content {n}"))
            .await;
    }
    let last = post_in_feed(&app, "bob", "bob's", "c").await;
    let q6 = all_copies(&app, "/api/feed", 4).await;
    assert_eq!(q6[0]["id"], last["id"]);

    let reader = Browser::new(&app, None);
    let response = reader.fetch(page_url(&app, "/feed.atom")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/atom+xml")
    );
    assert!(response.headers().contains_key(header::LAST_MODIFIED));
    let atom = parse_atom(&response.text().await.unwrap());
    assert_entries_are(&atom, &q6, &app);

    let q3 = all_copies(&app, "/api/users/ada/posts", 3).await;
    let response = reader.fetch(page_url(&app, "/users/ada/feed.atom")).await;
    let atom = parse_atom(&response.text().await.unwrap());
    assert_entries_are(&atom, &q3, &app);
}

/// The items of a list of copies once the change feed has put all `count` there.
async fn all_copies(app: &TestApp, path: &str, count: usize) -> Vec<Value> {
    eventually(WITHIN, || async {
        let list = app.get_json(path).await;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        (items.len() == count).then_some(items)
    })
    .await
}

fn assert_entries_are(atom: &atom_syndication::Feed, items: &[Value], app: &TestApp) {
    assert_eq!(atom.entries().len(), items.len());
    for (entry, item) in atom.entries().iter().zip(items) {
        let id = item["id"].as_str().unwrap();
        let link = format!("{}{}", app.address, readable_path(app, item));
        // An id no host name, address or title changes: the post's own UUID in `single`.
        assert!(entry.id().starts_with("urn:uuid:"), "{}", entry.id());
        if app.tenant.is_none() {
            assert_eq!(entry.id(), format!("urn:uuid:{id}"));
        }
        assert_eq!(entry.links()[0].href(), link);
        assert_eq!(entry.title().as_str(), item["title"].as_str().unwrap());
        assert_eq!(
            entry.authors()[0].name(),
            item["userUsername"].as_str().unwrap()
        );
        let excerpt = cosmos_blog::web::excerpt::excerpt_of_short(
            item["content"].as_str().unwrap(),
            cosmos_blog::web::excerpt::LIST_EXCERPT_CHARS,
        );
        assert_eq!(entry.summary().map(|s| s.as_str()), Some(excerpt.as_str()));
        let published = entry.published().expect("published");
        let created = item["creationDate"].as_str().unwrap();
        assert_eq!(
            published.timestamp_nanos_opt(),
            atom_syndication::FixedDateTime::parse_from_rfc3339(created)
                .unwrap()
                .timestamp_nanos_opt()
        );
    }
}

surface_tests!(the_atom_feeds_hold_q6_and_q3);
