//! A writer drafts, previews, schedules and tags a post in the browser, and a reader reaches it
//! by links alone: the front page once its time has come, its tag's page, the archive's month,
//! and its canonical address. Until then nobody else sees it.
//!
//! The write page's first submit button is the image upload's, so every button is pressed by
//! its `intent`. The `datetime-local` field holds minutes (its step is a minute), so the post is
//! scheduled for the first whole minute at least a few seconds ahead; the application
//! publishes on a short step (`BLOG_PUBLISH_STEP_MS`, set by [`super::blog::spawn_publishing`]).

use std::time::Duration;

use testkit::poll::poll_for;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use super::pages::Visitor;

const TITLE: &str = "Field notes, scheduled";
const SLUG: &str = "field-notes-scheduled";
const CONTENT: &str = "Written as a **draft**, published on a schedule.";
/// As typed: the server trims, lower-cases and joins inner whitespace with `-`.
const TAGS: &str = " Rust ,  Cosmos DB";
const TAG: &str = "cosmos-db";

/// How far ahead the schedule is at least: time to press the button before it comes.
const LEAD: time::Duration = time::Duration::seconds(5);
/// How long the front page may take to show the scheduled post: up to a minute and `LEAD` to
/// its time, then the publisher's step and the change feed (generous for a loaded machine).
const PUBLICATION_LIMIT: Duration = Duration::from_secs(120);

pub async fn a_writer_drafts_schedules_and_tags(v: Visitor) {
    let post = alice_saves_a_draft(&v).await;
    a_reader_cannot_see_the_draft(&v, &post).await;
    alice_schedules_it(&v, &post).await;
    let month = it_appears_on_the_front_page_by_itself(&v, &post).await;
    the_reader_follows_its_tag(&v, &post).await;
    the_reader_follows_the_archive(&v, &post, &month).await;
    v.assert_no_dialog().await;
}

/// Alice writes a tagged post and presses "Save draft": its page is a preview at its canonical
/// address, and her own page lists it, marked as a draft. Returns its path.
async fn alice_saves_a_draft(v: &Visitor) -> String {
    v.sign_up("alice", "Alice").await;
    v.open(&v.in_blog("/write")).await;
    v.type_into("#title", TITLE).await;
    v.type_into("#content", CONTENT).await;
    v.type_into("#tags", TAGS).await;
    v.press("main form button[name=intent][value=draft]").await;
    let post = v.path().await;
    assert!(
        post.starts_with(&v.in_blog("/posts/")) && post.ends_with(&format!("/{SLUG}")),
        "saving a draft leads to its page: {}",
        v.describe().await
    );
    assert_eq!(v.text_of("article h1").await, TITLE);
    let note = v.text_of("article .status-note").await;
    assert!(
        note.starts_with("Preview.") && note.contains("Draft"),
        "{note}"
    );
    assert_eq!(v.text_of("article .content strong").await, "draft");
    assert_eq!(
        v.text_of("article .tags").await,
        "Tags: #rust #cosmos-db",
        "the tags as the server normalised them"
    );
    assert_eq!(canonical(v).await, v.url(&post));

    // Her page lists it from her copy in `users`, which the change feed writes.
    v.reload_until(&v.in_blog("/users/alice"), "the draft", |text| {
        text.contains(TITLE)
    })
    .await;
    let drafts = v.text_of("section.drafts").await;
    assert!(
        drafts.contains(TITLE) && drafts.contains("Draft: only you can see it."),
        "her page lists the draft, marked: {drafts}"
    );
    v.press(&format!("section.drafts a[href='{post}']")).await;
    assert_eq!(v.path().await, post, "the draft's link opens its preview");
    assert!(v.exists("article .status-note").await);
    v.sign_out().await;
    post
}

/// Signed out, the draft's address is a plain 404 and no list names it.
async fn a_reader_cannot_see_the_draft(v: &Visitor, post: &str) {
    v.open(post).await;
    let page = v.main_text().await;
    assert!(
        page.contains("404") && !page.contains(TITLE),
        "a reader gets a 404: {page}"
    );
    for list in ["/", &format!("/tags/{TAG}"), "/archive", "/users/alice"] {
        v.open(&v.in_blog(list)).await;
        let text = v.main_text().await;
        assert!(!text.contains(TITLE), "{list} shows the draft: {text}");
    }
    assert!(
        !v.exists("section.drafts").await,
        "nobody but their author sees drafts"
    );
}

/// Alice opens her draft's edit page from its preview, sets a time and presses "Schedule";
/// the preview says when it comes out.
async fn alice_schedules_it(v: &Visitor, post: &str) {
    v.sign_in("alice").await;
    v.open(post).await;
    v.press("article ~ .actions a[href$='/edit']").await;
    let at = next_whole_minute(OffsetDateTime::now_utc() + LEAD);
    let local = at.format(&Rfc3339).expect("a date")[..16].to_owned();
    set_date_time(v, "#publishAt", &local).await;
    v.press("main form button[name=intent][value=scheduled]")
        .await;
    assert_eq!(
        v.path().await,
        post,
        "scheduling leads back to the preview: {}",
        v.describe().await
    );
    let note = v.text_of("article .status-note").await;
    let when = format!("Scheduled for {} UTC", local.replace('T', " "));
    assert!(note.contains(&when), "{note} (expected {when})");
    v.sign_out().await;
}

/// The first whole minute at or after `time`.
fn next_whole_minute(time: OffsetDateTime) -> OffsetDateTime {
    let floor = time
        .replace_second(0)
        .and_then(|t| t.replace_nanosecond(0))
        .expect("a time");
    if floor == time {
        floor
    } else {
        floor + time::Duration::minutes(1)
    }
}

/// Fills a `datetime-local` field with `local` (`2026-11-27T11:40`) as a person would: its
/// parts typed in the order Chromium's en-US field asks for them.
async fn set_date_time(v: &Visitor, css: &str, local: &str) {
    let (date, clock) = local.split_once('T').expect("a date and a time");
    let mut date = date.split('-');
    let (year, month, day) = (
        date.next().expect("year"),
        date.next().expect("month"),
        date.next().expect("day"),
    );
    let (hour, minute) = clock.split_once(':').expect("hours and minutes");
    let hour: u32 = hour.parse().expect("an hour");
    let (twelve, half) = match hour {
        0 => (12, "AM"),
        1..=11 => (hour, "AM"),
        12 => (12, "PM"),
        _ => (hour - 12, "PM"),
    };
    let field = v.find(css).await;
    field.click().await.expect("the field is focused");
    let keys = format!("{month}{day}{year}\u{e004}{twelve:02}{minute}{half}");
    field.send_keys(&keys).await.expect("the date is typed");
    let value = field.prop("value").await.expect("the value");
    assert_eq!(
        value.as_deref(),
        Some(local),
        "the field holds the time typed"
    );
}

/// Signed out, the front page shows the post once its time has come, with no request but the
/// reader's; returns the month it was published in (`yyyy/mm`).
async fn it_appears_on_the_front_page_by_itself(v: &Visitor, post: &str) -> String {
    let front = v.in_blog("/");
    let shown = poll_for(PUBLICATION_LIMIT, Duration::from_millis(250), || async {
        v.open(&front).await;
        let text = v.main_text().await;
        if text.contains(TITLE) {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await;
    if let Err(text) = shown {
        panic!("the scheduled post is not on the front page after {PUBLICATION_LIMIT:?}: {text}");
    }
    v.find(&format!("ol.posts a[href='{post}']")).await;
    let now = OffsetDateTime::now_utc();
    format!("{}/{:02}", now.year(), u8::from(now.month()))
}

async fn the_reader_follows_its_tag(v: &Visitor, post: &str) {
    let tag_page = v.in_blog(&format!("/tags/{TAG}"));
    // The tag's view is its own copy, which the change feed may fill a little after the feed.
    v.reload_until(&tag_page, "the post", |text| text.contains(TITLE))
        .await;
    v.open(&v.in_blog("/")).await;
    v.press(&format!("ol.posts a[rel=tag][href='{tag_page}']"))
        .await;
    assert_eq!(v.path().await, tag_page);
    v.find(&format!("ol.posts a[href='{post}']")).await;
    assert_eq!(canonical(v).await, v.url(&tag_page));
}

/// From the front page's "Older posts" to the archive, its month, and the post at its
/// canonical address.
async fn the_reader_follows_the_archive(v: &Visitor, post: &str, month: &str) {
    let archive = v.in_blog("/archive");
    let month_page = v.in_blog(&format!("/archive/{month}"));
    v.reload_until(&month_page, "the post", |text| text.contains(TITLE))
        .await;
    v.open(&v.in_blog("/")).await;
    v.press(&format!("p.pager a[href='{archive}']")).await;
    assert_eq!(v.path().await, archive, "Older posts leads to the archive");
    v.press(&format!("ul.archive a[href='{month_page}']")).await;
    assert_eq!(v.path().await, month_page);
    v.press(&format!("ol.posts a[href='{post}']")).await;
    assert_eq!(v.path().await, post);
    assert_eq!(v.text_of("article h1").await, TITLE);
    assert!(
        !v.exists("article .status-note").await,
        "no longer a preview"
    );
    assert_eq!(
        canonical(v).await,
        v.url(post),
        "the canonical link is the address the reader landed on"
    );
}

/// The page's `<link rel="canonical">`.
async fn canonical(v: &Visitor) -> String {
    v.find("link[rel=canonical]")
        .await
        .attr("href")
        .await
        .expect("href")
        .expect("a canonical link")
}
