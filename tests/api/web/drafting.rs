//! Drafts through the pages: the write and edit forms' "Save draft", "Publish" and
//! "Schedule" (a UTC date-time field), the preview of a draft for its author alone, and the
//! author's own page listing their drafts, marked.

use super::*;

/// A UTC `datetime-local` value `minutes` from now (`2026-12-01T09:30`).
fn local_in(minutes: i64) -> String {
    let at = time::OffsetDateTime::now_utc() + time::Duration::minutes(minutes);
    let text = at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    text[..16].to_owned()
}

async fn a_writer_drafts_previews_schedules_and_publishes_through_the_forms(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut ada = Browser::new(&app, Some("ada"));
    let mut reader = Browser::new(&app, None);
    let blog_path = |path: &str| {
        path.strip_prefix(&page_path(&app, ""))
            .unwrap_or(path)
            .to_owned()
    };

    // The write page has the three buttons and the date-time field.
    let (status, page, _) = ada.get("/write").await;
    assert_eq!(status, StatusCode::OK);
    let intents: Vec<String> = select(&page, "button[name=intent]")
        .iter()
        .filter_map(|b| b.value().attr("value").map(str::to_owned))
        .collect();
    assert_eq!(intents, ["published", "draft", "scheduled"]);
    assert_eq!(select_attr(&page, "#publishAt", "type"), "datetime-local");

    // Save draft: the author's page of it is a marked preview; anyone else gets 404.
    let form = [
        ("title", "Work in progress"),
        ("content", "secret text"),
        ("tags", "Rust, Cosmos DB"),
        ("intent", "draft"),
    ];
    let saved = ada.post("/write", &form).await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    let post_path = blog_path(&location(&saved));
    let post_id = post_path.split('/').nth(2).unwrap().to_owned();
    let api_post = format!("/api/posts/{post_id}");
    let stored = app.get_json_as("ada", &api_post).await;
    assert_eq!(stored["status"], "draft");
    assert_eq!(stored["tags"], serde_json::json!(["rust", "cosmos-db"]));
    let (status, preview, _) = ada.get(&post_path).await;
    assert_eq!(status, StatusCode::OK);
    assert!(select_text(&preview, ".status-note")[0].contains("Draft"));
    let (status, hidden, _) = reader.get(&post_path).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!hidden.html().contains("secret text"));

    // The author's own page lists the draft, marked (once the change feed has copied it);
    // nobody else's view of it does.
    let own = eventually(Duration::from_secs(30), || async {
        let mut ada = Browser::new(&app, Some("ada"));
        let (_, own, _) = ada.get("/users/ada").await;
        (!select(&own, ".drafts h3 a").is_empty()).then(|| own.html())
    })
    .await;
    let own = Html::parse_document(&own);
    assert_eq!(
        select_text(&own, ".drafts h3 a"),
        ["Work in progress".to_owned()]
    );
    assert!(select_text(&own, ".drafts .status-note")[0].contains("Draft"));
    let (_, public, _) = reader.get("/users/ada").await;
    assert!(select(&public, ".drafts").is_empty());
    assert!(!public.html().contains("Work in progress"));

    // Schedule: a time in the past is refused beside the field, nothing changes; a future
    // one schedules the post, and the edit page shows it.
    let edit = format!("{}/edit", post_path.rsplit_once('/').unwrap().0);
    let mut form = vec![
        ("title", "Work in progress"),
        ("content", "secret text"),
        ("tags", "rust, cosmos-db"),
        ("intent", "scheduled"),
    ];
    let past = local_in(-5);
    form.push(("publishAt", past.as_str()));
    let refused = ada.post(&edit, &form).await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert!(!select_text(&page, "#publication-error").is_empty());
    let future = local_in(90);
    form.pop();
    form.push(("publishAt", future.as_str()));
    let scheduled = ada.post(&edit, &form).await;
    assert_eq!(scheduled.status(), StatusCode::SEE_OTHER);
    let stored = app.get_json_as("ada", &api_post).await;
    assert_eq!(stored["status"], "scheduled");
    assert!(stored["publishAt"].as_str().unwrap().starts_with(&future));
    let (_, edit_page, _) = ada.get(&edit).await;
    assert_eq!(select_attr(&edit_page, "#publishAt", "value"), future);
    let (_, preview, _) = ada.get(&post_path).await;
    assert!(select_text(&preview, ".status-note")[0].contains("Scheduled"));

    // Publish: the post is everyone's, unmarked.
    form.pop();
    form[3] = ("intent", "published");
    let published = ada.post(&edit, &form).await;
    assert_eq!(published.status(), StatusCode::SEE_OTHER);
    let (status, page, _) = reader.get(&post_path).await;
    assert_eq!(status, StatusCode::OK);
    assert!(select(&page, ".status-note").is_empty());
    app.assert_verifies().await;
}

surface_tests!(a_writer_drafts_previews_schedules_and_publishes_through_the_forms,);
