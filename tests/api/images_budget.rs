//! The decode budget: what decoding an upload takes is read from its header and reserved from
//! one budget (`BLOG_IMAGES_DECODE_BUDGET_MB`) before it is decoded. An image that would take
//! more than the whole budget is refused; uploads that do not fit beside those under way wait
//! their turn, and never decode together; one that finds no room within the wait
//! (`BLOG_IMAGES_DECODE_WAIT_MS`) is told to come back later.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use image::ImageFormat;
use reqwest::StatusCode;
use serde_json::Value;

use cosmos_blog::settings::Settings;
use cosmos_blog::telemetry::Telemetry;
use testkit::{Backend, TestApp, eventually, on_every_backend};

use super::images::{picture, upload};

on_every_backend!(
    an_image_that_would_take_more_than_the_budget_is_refused_before_it_is_decoded,
    uploads_that_do_not_fit_together_wait_their_turn_and_never_decode_together,
    an_upload_that_finds_no_room_within_the_wait_is_told_to_come_back_later,
);

const WITHIN: Duration = Duration::from_secs(60);

/// The application's logs, as written.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Each decode's start (`+`) and end (`-`), in the order they were logged.
    fn decodes(&self) -> String {
        let logged = String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned();
        logged
            .lines()
            .filter_map(|line| {
                if line.contains("image decoding started") {
                    Some('+')
                } else if line.contains("image decoding done") {
                    Some('-')
                } else {
                    None
                }
            })
            .collect()
    }
}

/// The application with a decode budget of `budget_mb` MiB and a wait of `wait_ms`, its
/// image logs kept in `logs`; `ada` registered.
async fn app_with_budget(backend: Backend, budget_mb: u64, wait_ms: u64, logs: &Logs) -> TestApp {
    let kept = logs.clone();
    let app = TestApp::spawn(backend)
        .telemetry(Telemetry::logs_only(
            "warn,cosmos_blog::images=debug",
            move || kept.clone(),
        ))
        .settings(move |settings: &mut Settings| {
            settings.images.decode_budget_mb = budget_mb;
            settings.images.decode_wait_ms = wait_ms;
        })
        .start()
        .await;
    app.register("ada", "Ada").await;
    app
}

async fn stored_images(app: &TestApp) -> usize {
    let page = app.get_json_as("ada", "/api/users/ada/images").await;
    page["items"].as_array().unwrap().len()
}

/// PNGs of these sizes (RGB, 3 bytes a pixel once decoded: `D`) take, by the budget's count,
/// 16 MiB of working memory, their own bytes, twice `D` (the pixels, and their encoding at
/// most) and twice the widest rendition's share of `D`: 1000 × 1000 or 1200 × 1000 about
/// 28 MiB, 1500 × 1500 about 36 MiB, 2000 × 2000 about 57 MiB; 100 × 100 hardly more than
/// the 16 MiB.
const ONE_FITS_IN_40_MIB: (u32, u32) = (1200, 1000);
const WITH_THE_NEXT_OVER_80_MIB: (u32, u32) = (1500, 1500);
const ALONE_IN_80_MIB: (u32, u32) = (2000, 2000);

async fn an_image_that_would_take_more_than_the_budget_is_refused_before_it_is_decoded(
    backend: Backend,
) {
    let logs = Logs::default();
    let app = app_with_budget(backend, 20, 60_000, &logs).await;
    let large = picture(1000, 1000, ImageFormat::Png);
    let response = upload(&app, Some("ada"), "image/png", large).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let problem: Value = response.json().await.unwrap();
    assert_eq!(problem["code"], "image-too-large-to-decode", "{problem}");
    assert_eq!(logs.decodes(), "", "nothing decoded");
    assert_eq!(stored_images(&app).await, 0, "nothing stored");

    let small = picture(100, 100, ImageFormat::Png);
    let response = upload(&app, Some("ada"), "image/png", small).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(logs.decodes(), "+-");
}

async fn uploads_that_do_not_fit_together_wait_their_turn_and_never_decode_together(
    backend: Backend,
) {
    let logs = Logs::default();
    // A wait longer than any test: every upload gets its turn.
    let app = app_with_budget(backend, 40, 600_000, &logs).await;
    let (width, height) = ONE_FITS_IN_40_MIB;
    let photo = picture(width, height, ImageFormat::Png);
    let uploads = (0..6).map(|_| upload(&app, Some("ada"), "image/png", photo.clone()));
    for response in futures::future::join_all(uploads).await {
        assert_eq!(response.status(), StatusCode::CREATED, "waited, then taken");
    }
    // Two of them do not fit in the budget: each decode ended before the next began.
    assert_eq!(logs.decodes(), "+-".repeat(6));
    assert_eq!(stored_images(&app).await, 6);
    app.assert_verifies().await;
}

async fn an_upload_that_finds_no_room_within_the_wait_is_told_to_come_back_later(backend: Backend) {
    let logs = Logs::default();
    // No wait: an upload that does not fit beside the one under way is refused at once.
    let app = app_with_budget(backend, 80, 0, &logs).await;
    let (width, height) = ALONE_IN_80_MIB;
    let large = app
        .client
        .post(app.url("/api/images"))
        .header("content-type", "image/png")
        .header("x-ms-client-principal-id", "ada")
        .body(picture(width, height, ImageFormat::Png))
        .send();
    let large = tokio::spawn(large);
    let (width, height) = WITH_THE_NEXT_OVER_80_MIB;
    let next = picture(width, height, ImageFormat::Png);
    // Sent once the large one is being decoded, until one is refused (or the large one is
    // done, which fails below).
    eventually(WITHIN, || async { (logs.decodes() != "").then_some(()) }).await;
    let mut refused = None;
    while refused.is_none() && logs.decodes() == "+" {
        let response = upload(&app, Some("ada"), "image/png", next.clone()).await;
        if response.status() == StatusCode::SERVICE_UNAVAILABLE {
            refused = Some(response);
        }
    }
    let large = large.await.unwrap().unwrap();
    assert_eq!(large.status(), StatusCode::CREATED);
    let refused = refused.expect("an upload sent while the large one was decoded is refused");
    assert_eq!(refused.headers()["retry-after"], "5");
    assert_eq!(
        refused.headers()["content-type"],
        "application/problem+json"
    );
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["code"], "images-busy", "{problem}");
    assert_eq!(
        stored_images(&app).await,
        1,
        "the refused one is not stored"
    );

    let response = upload(&app, Some("ada"), "image/png", next).await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "taken once there is room"
    );
}
