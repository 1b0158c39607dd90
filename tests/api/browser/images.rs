//! A writer puts a photo in a post from the write page: with the page's script by pasting it
//! into the text (the script uploads it and puts its Markdown at the cursor), and without
//! script through the form's own "Upload and insert" button. Either way readers see the
//! image from the blog's own origin, at its size, with its smaller rendition offered.

use std::io::Cursor;
use std::time::Duration;

use base64::Engine;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::Value;
use testkit::poll::poll_for;

use super::pages::Visitor;

/// Wide enough for one smaller rendition (480 pixels).
const WIDTH: u32 = 640;
const HEIGHT: u32 = 400;

fn photo() -> Vec<u8> {
    let pixels = RgbImage::from_fn(WIDTH, HEIGHT, |x, y| {
        Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(pixels)
        .write_to(&mut out, ImageFormat::Png)
        .expect("a PNG");
    out.into_inner()
}

/// What the content field holds now.
async fn content(v: &Visitor) -> String {
    let value = v
        .find("#content")
        .await
        .prop("value")
        .await
        .expect("the field's value");
    value.unwrap_or_default()
}

/// Publishes the post being written ("Publish", by its name and value: not the upload's
/// button, nor "Save draft" or "Schedule").
async fn publish(v: &Visitor) {
    v.press("main form button[name=intent][value=published]")
        .await;
    assert!(
        v.path().await.starts_with(&v.in_blog("/posts/")),
        "publishing leads to the post: {}",
        v.describe().await
    );
}

/// The post page shows the image: its alt text, its size, its rendition, and its pixels
/// (loaded from the blog itself, as the pages' policy allows).
async fn assert_shows_the_photo(v: &Visitor, alt: &str) {
    let img = v.find("article .content img").await;
    let attr = |name: &'static str| {
        let img = img.clone();
        async move { img.attr(name).await.expect(name).unwrap_or_default() }
    };
    assert_eq!(attr("alt").await, alt);
    assert_eq!(attr("width").await, WIDTH.to_string());
    assert_eq!(attr("height").await, HEIGHT.to_string());
    assert_eq!(attr("loading").await, "lazy");
    let src = attr("src").await;
    assert!(src.starts_with(&v.in_blog("/images/")), "{src}");
    assert!(attr("srcset").await.contains(&format!("{src}/480 480w")));
    let loaded = poll_for(
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async {
            let width = v
                .client
                .execute(
                    "return document.querySelector('article .content img').naturalWidth",
                    vec![],
                )
                .await
                .expect("the script runs");
            if width.as_u64().is_some_and(|w| w > 0) {
                Ok(width)
            } else {
                Err(width)
            }
        },
    )
    .await;
    assert!(loaded.is_ok(), "the image loads: {loaded:?}");
}

/// With the page's script: the photo pasted into the text is uploaded and its Markdown put
/// where the cursor was; the post shows it.
pub async fn a_writer_pastes_a_photo_into_a_post(v: Visitor) {
    v.sign_up("alice", "Alice").await;
    v.open(&v.in_blog("/write")).await;
    assert!(
        v.find("#paste-hint")
            .await
            .is_displayed()
            .await
            .expect("shown"),
        "with script, the page says a photo may be pasted"
    );
    v.type_into("#title", "A photo").await;
    v.type_into("#content", "Look:").await;
    v.type_into("#alt", "A gradient").await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(photo());
    v.client
        .execute(
            r#"const [data] = arguments;
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], "photo.png", { type: "image/png" }));
            const text = document.getElementById("content");
            text.focus();
            text.selectionStart = text.selectionEnd = text.value.length;
            text.dispatchEvent(new ClipboardEvent("paste", {
                clipboardData: transfer, bubbles: true, cancelable: true,
            }));"#,
            vec![Value::String(encoded)],
        )
        .await
        .expect("the paste is sent");
    let inserted = poll_for(
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async {
            let text = content(&v).await;
            if text.contains("](") {
                Ok(text)
            } else {
                Err(text)
            }
        },
    )
    .await
    .unwrap_or_else(|text| panic!("no image inserted; the text is {text:?}"));
    let image = format!("![A gradient]({}/images/", v.in_blog(""));
    assert!(
        inserted.starts_with(&format!("Look:\n\n{image}")),
        "{inserted:?}"
    );
    assert!(
        v.text_of("#image-status").await.starts_with("Image added"),
        "the page says so"
    );
    publish(&v).await;
    assert_shows_the_photo(&v, "A gradient").await;
    v.assert_no_dialog().await;
}

/// Without script: the file chosen in the form, "Upload and insert" brings the page back with
/// the image's Markdown added; the post shows it.
pub async fn a_writer_uploads_a_photo_without_javascript(v: Visitor) {
    v.sign_up("bob", "Bob").await;
    v.open(&v.in_blog("/write")).await;
    assert!(
        !v.find("#paste-hint")
            .await
            .is_displayed()
            .await
            .expect("hidden"),
        "without script, nothing offers to paste"
    );
    v.type_into("#title", "A photo").await;
    v.type_into("#content", "Look:").await;
    v.type_into("#alt", "A gradient").await;
    let dir = tempfile::TempDir::new().expect("temp dir");
    let file = dir.path().join("photo.png");
    std::fs::write(&file, photo()).expect("the photo is written");
    v.find("#image")
        .await
        .send_keys(&file.display().to_string())
        .await
        .expect("the file is chosen");
    v.press("main form button[formaction]").await;
    let text = content(&v).await;
    let image = format!("![A gradient]({}/images/", v.in_blog(""));
    assert!(text.starts_with(&format!("Look:\n\n{image}")), "{text:?}");
    assert_eq!(
        v.find("#title")
            .await
            .prop("value")
            .await
            .expect("the title")
            .as_deref(),
        Some("A photo"),
        "the title typed so far is kept"
    );
    publish(&v).await;
    assert_shows_the_photo(&v, "A gradient").await;
}
