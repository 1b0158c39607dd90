//! The blog in a real browser: headless Chromium, driven over WebDriver, reads and writes the
//! pages of the real application with JavaScript on and off, hostile text never runs, and
//! another origin's forms are refused. Without Chromium these tests say how to install it and
//! skip (they fail where `CI` is set). One browser session per test.

mod axe;
mod blog;
mod chromium;
mod cross_site;
mod hostile;
mod images;
mod journey;
mod pages;
mod publishing;
mod screenshots;

use chromium::{Script, with_browser};
use cosmos_blog::store::Tenancy;
use pages::Visitor;
use testkit::{Backend, TestApp};

#[tokio::test]
async fn two_people_use_the_blog_with_javascript() {
    let app = blog::spawn().await;
    journey("two_people_use_the_blog_with_javascript", &app, Script::On).await;
}

#[tokio::test]
async fn two_people_use_the_blog_without_javascript() {
    let app = blog::spawn().await;
    journey(
        "two_people_use_the_blog_without_javascript",
        &app,
        Script::Off,
    )
    .await;
}

#[tokio::test]
async fn two_people_use_a_tenants_blog_in_the_multi_layout() {
    let app = blog::spawn_on(Backend::Embedded, Tenancy::Multi).await;
    journey(
        "two_people_use_a_tenants_blog_in_the_multi_layout",
        &app,
        Script::On,
    )
    .await;
}

#[tokio::test]
async fn two_people_use_the_blog_on_the_cosmos_emulator() {
    let app = blog::spawn_on(Backend::Cosmos, Tenancy::Single).await;
    journey(
        "two_people_use_the_blog_on_the_cosmos_emulator",
        &app,
        Script::Off,
    )
    .await;
}

async fn journey(test_name: &str, app: &TestApp, script: Script) {
    with_browser(test_name, script, |client| {
        journey::two_people_use_the_blog(Visitor::new(client, app), script)
    })
    .await;
}

#[tokio::test]
async fn hostile_text_never_runs() {
    let app = blog::spawn().await;
    with_browser("hostile_text_never_runs", Script::On, |client| {
        hostile::hostile_text_never_runs(Visitor::new(client, &app))
    })
    .await;
}

#[tokio::test]
async fn a_form_from_another_origin_is_refused() {
    let app = blog::spawn().await;
    with_browser(
        "a_form_from_another_origin_is_refused",
        Script::On,
        |client| {
            cross_site::a_form_from_another_origin_is_refused(Visitor::new(client, &app), &app)
        },
    )
    .await;
}

#[tokio::test]
async fn the_front_page_and_a_post_page() {
    let app = blog::spawn().await;
    with_browser("the_front_page_and_a_post_page", Script::On, |client| {
        screenshots::the_front_page_and_a_post_page(Visitor::new(client, &app), &app)
    })
    .await;
}

#[tokio::test]
async fn the_main_pages_have_no_accessibility_violation_in_either_theme() {
    let name = "the_main_pages_have_no_accessibility_violation_in_either_theme";
    let Some(axe) = axe::axe_source_or_skip(name) else {
        return;
    };
    let app = blog::spawn().await;
    with_browser(name, Script::On, |client| {
        axe::the_main_pages_have_no_accessibility_violation(Visitor::new(client, &app), &app, &axe)
    })
    .await;
}

#[tokio::test]
async fn a_writer_pastes_a_photo_into_a_post() {
    let app = blog::spawn().await;
    with_browser(
        "a_writer_pastes_a_photo_into_a_post",
        Script::On,
        |client| images::a_writer_pastes_a_photo_into_a_post(Visitor::new(client, &app)),
    )
    .await;
}

#[tokio::test]
async fn a_writer_uploads_a_photo_without_javascript() {
    let app = blog::spawn_on(Backend::Embedded, Tenancy::Multi).await;
    with_browser(
        "a_writer_uploads_a_photo_without_javascript",
        Script::Off,
        |client| images::a_writer_uploads_a_photo_without_javascript(Visitor::new(client, &app)),
    )
    .await;
}

#[tokio::test]
async fn a_writer_drafts_schedules_and_tags_a_post_with_javascript() {
    let app = blog::spawn_publishing(Backend::Embedded, Tenancy::Single).await;
    let name = "a_writer_drafts_schedules_and_tags_a_post_with_javascript";
    with_browser(name, Script::On, |client| {
        publishing::a_writer_drafts_schedules_and_tags(Visitor::new(client, &app))
    })
    .await;
}

#[tokio::test]
async fn a_writer_drafts_schedules_and_tags_a_post_without_javascript_in_the_multi_layout() {
    let app = blog::spawn_publishing(Backend::Embedded, Tenancy::Multi).await;
    let name = "a_writer_drafts_schedules_and_tags_a_post_without_javascript_in_the_multi_layout";
    with_browser(name, Script::Off, |client| {
        publishing::a_writer_drafts_schedules_and_tags(Visitor::new(client, &app))
    })
    .await;
}

#[tokio::test]
async fn a_writer_drafts_schedules_and_tags_a_post_on_the_cosmos_emulator() {
    let app = blog::spawn_publishing(Backend::Cosmos, Tenancy::Single).await;
    let name = "a_writer_drafts_schedules_and_tags_a_post_on_the_cosmos_emulator";
    with_browser(name, Script::Off, |client| {
        publishing::a_writer_drafts_schedules_and_tags(Visitor::new(client, &app))
    })
    .await;
}
