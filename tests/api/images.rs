//! Images in posts through the API: upload, the refusals and limits, what is kept of an
//! upload (no metadata, the right way up, renditions), serving, ownership and erasure; on both
//! stores and in both layouts.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use reqwest::{Response, StatusCode};
use serde_json::Value;

use testkit::{Azurite, Backend, TestApp, image_tests};

image_tests!(
    an_upload_is_stored_and_served_with_its_headers,
    only_real_images_of_the_four_types_are_taken,
    limits_refuse_large_bodies_and_decompression_bombs,
    an_image_cut_short_is_undecodable_whatever_its_type,
    metadata_is_removed_and_the_orientation_applied,
    wide_images_get_renditions,
    images_are_their_owners_and_deleted_images_are_gone,
    deleting_an_account_erases_its_images,
    verify_reports_missing_and_orphan_bytes_and_repair_removes_orphans,
);

const PRINCIPAL: &str = "x-ms-client-principal-id";

/// A `width`×`height` picture (a gradient, so encoders have something to encode) as `format`.
pub fn picture(width: u32, height: u32, format: ImageFormat) -> Vec<u8> {
    let pixels = RgbImage::from_fn(width, height, |x, y| {
        Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(pixels)
        .write_to(&mut out, format)
        .unwrap();
    out.into_inner()
}

pub async fn upload(
    app: &TestApp,
    caller: Option<&str>,
    content_type: &str,
    body: Vec<u8>,
) -> Response {
    let mut request = app
        .client
        .post(app.url("/api/images"))
        .header("content-type", content_type)
        .body(body);
    if let Some(caller) = caller {
        request = request.header(PRINCIPAL, caller);
    }
    request.send().await.unwrap()
}

/// Uploads as `caller` and answers the image; panics unless 201.
pub async fn uploaded(app: &TestApp, caller: &str, content_type: &str, body: Vec<u8>) -> Value {
    let response = upload(app, Some(caller), content_type, body).await;
    assert_eq!(response.status(), StatusCode::CREATED, "upload");
    response.json().await.unwrap()
}

/// Uploads a `width`×`height` PNG as `caller` (the type most tests need: lossless, so its
/// renditions are predictable) and answers the image; panics unless 201.
pub async fn uploaded_png(app: &TestApp, caller: &str, width: u32, height: u32) -> Value {
    let body = picture(width, height, ImageFormat::Png);
    uploaded(app, caller, "image/png", body).await
}

async fn listed(app: &TestApp, caller: &str, user: &str) -> Response {
    app.client
        .get(app.url(&format!("/api/users/{user}/images")))
        .header(PRINCIPAL, caller)
        .send()
        .await
        .unwrap()
}

async fn an_upload_is_stored_and_served_with_its_headers(app: TestApp) {
    app.register("ada", "Ada").await;
    for (format, content_type) in [
        (ImageFormat::Png, "image/png"),
        (ImageFormat::Jpeg, "image/jpeg"),
        (ImageFormat::Gif, "image/gif"),
        (ImageFormat::WebP, "image/webp"),
    ] {
        let response = upload(&app, Some("ada"), content_type, picture(40, 30, format)).await;
        assert_eq!(response.status(), StatusCode::CREATED, "{content_type}");
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        let image: Value = response.json().await.unwrap();
        assert_eq!(image["contentType"], content_type);
        assert_eq!(
            (image["width"].as_u64(), image["height"].as_u64()),
            (Some(40), Some(30))
        );
        let url = image["url"].as_str().unwrap();
        assert_eq!(location, url);
        assert!(
            url.ends_with(&format!("/images/{}", image["id"].as_str().unwrap())),
            "{url}"
        );

        let served = app.get_raw(url).await;
        assert_eq!(served.status(), StatusCode::OK);
        let headers = served.headers().clone();
        assert_eq!(headers["content-type"], content_type);
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(
            headers["cache-control"],
            "public, max-age=31536000, immutable"
        );
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(
            csp.starts_with("default-src 'none'") && csp.contains("sandbox"),
            "{csp}"
        );
        let bytes = served.bytes().await.unwrap();
        assert_eq!(bytes.len() as u64, image["bytes"].as_u64().unwrap());
        let decoded = image::load_from_memory(&bytes).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (40, 30));

        let etag = headers["etag"].to_str().unwrap();
        let again = app
            .client
            .get(app.raw_url(url))
            .header("if-none-match", etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert!(again.bytes().await.unwrap().is_empty());
    }
    app.assert_verifies().await;
}

async fn only_real_images_of_the_four_types_are_taken(app: TestApp) {
    app.register("ada", "Ada").await;
    let png = picture(8, 8, ImageFormat::Png);
    let anonymous = upload(&app, None, "image/png", png.clone()).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
    let html = b"<!doctype html><html><script>alert(1)</script></html>";
    let mut polyglot = png.clone();
    polyglot.extend_from_slice(b"<script>alert(1)</script>");
    let mut markup_inside = picture(8, 8, ImageFormat::Gif);
    markup_inside.splice(6..6, b"<html>".iter().copied());
    for (content_type, body, code) in [
        ("image/svg+xml", svg.to_vec(), "unsupported-media-type"),
        ("image/png", svg.to_vec(), "unsupported-media-type"),
        ("image/png", html.to_vec(), "unsupported-media-type"),
        ("text/html", png.clone(), "unsupported-media-type"),
        (
            "application/octet-stream",
            png.clone(),
            "unsupported-media-type",
        ),
        ("image/jpeg", png.clone(), "image-type-mismatch"),
        ("image/png", polyglot, "not-only-an-image"),
        ("image/gif", markup_inside, "not-only-an-image"),
        (
            "image/png",
            [png.as_slice(), b"\0\0\0\0"].concat(),
            "not-only-an-image",
        ),
    ] {
        let response = upload(&app, Some("ada"), content_type, body).await;
        assert_eq!(
            response.status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type} {code}"
        );
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["code"], code, "{problem}");
    }
    let cross_site = app
        .client
        .post(app.url("/api/images"))
        .header("content-type", "image/png")
        .header(PRINCIPAL, "ada")
        .header("sec-fetch-site", "cross-site")
        .body(png.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    let unregistered = upload(&app, Some("nobody"), "image/png", png).await;
    assert_eq!(unregistered.status(), StatusCode::NOT_FOUND);
    let page: Value = listed(&app, "ada", "ada").await.json().await.unwrap();
    assert_eq!(page["items"], serde_json::json!([]), "nothing stored");
}

/// A PNG whose header says `width`×`height` over a 1×1 image's data: what a decompression
/// bomb looks like before it is decoded.
fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut png = picture(1, 1, ImageFormat::Png);
    // Signature (8), IHDR length (4), "IHDR" (4), then width and height, then the CRC.
    png[16..20].copy_from_slice(&width.to_be_bytes());
    png[20..24].copy_from_slice(&height.to_be_bytes());
    let mut crc = flate2::Crc::new();
    crc.update(&png[12..29]);
    png[29..33].copy_from_slice(&crc.sum().to_be_bytes());
    png
}

async fn limits_refuse_large_bodies_and_decompression_bombs(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut too_large = picture(8, 8, ImageFormat::Png);
    too_large.resize(5 * 1024 * 1024 + 1, 0);
    let response = upload(&app, Some("ada"), "image/png", too_large).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let problem: Value = response.json().await.unwrap();
    assert_eq!(problem["code"], "image-too-large");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("5242881 bytes"),
        "the image's own size: {detail}"
    );

    let bomb = png_claiming(100_000, 100_000);
    assert!(bomb.len() < 100, "a small file");
    let response = upload(&app, Some("ada"), "image/png", bomb).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let problem: Value = response.json().await.unwrap();
    assert_eq!(problem["code"], "image-too-many-pixels", "{problem}");
    let page: Value = listed(&app, "ada", "ada").await.json().await.unwrap();
    assert_eq!(page["items"], serde_json::json!([]), "nothing stored");
}

async fn an_image_cut_short_is_undecodable_whatever_its_type(app: TestApp) {
    app.register("ada", "Ada").await;
    for (format, content_type) in [
        (ImageFormat::Png, "image/png"),
        (ImageFormat::Jpeg, "image/jpeg"),
        (ImageFormat::Gif, "image/gif"),
        (ImageFormat::WebP, "image/webp"),
    ] {
        let whole = picture(300, 200, format);
        // Cut in the middle of the pixels, and short of the format's last bytes (a JPEG's
        // end marker, PNG's IEND, GIF's trailer, the RIFF size's last byte).
        for cut in [whole.len() / 2, whole.len() - 2, whole.len() - 1] {
            let response = upload(&app, Some("ada"), content_type, whole[..cut].to_vec()).await;
            assert_eq!(
                response.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{content_type} cut at {cut} of {}",
                whole.len()
            );
            let problem: Value = response.json().await.unwrap();
            assert_eq!(
                problem["code"], "undecodable-image",
                "{content_type}: {problem}"
            );
        }
    }
    let page: Value = listed(&app, "ada", "ada").await.json().await.unwrap();
    assert_eq!(page["items"], serde_json::json!([]), "nothing stored");
    app.assert_verifies().await;
}

/// A JPEG of `width`×`height` with an EXIF block: camera make, a GPS marker, and orientation 6
/// (shown turned 90° clockwise).
fn photo_with_exif(width: u32, height: u32) -> Vec<u8> {
    let jpeg = picture(width, height, ImageFormat::Jpeg);
    let mut tiff: Vec<u8> = b"II*\0\x08\0\0\0".to_vec();
    tiff.extend_from_slice(&2u16.to_le_bytes());
    // Make (0x010F), ASCII, 10 bytes at offset 38.
    tiff.extend_from_slice(&[0x0F, 0x01, 2, 0]);
    tiff.extend_from_slice(&10u32.to_le_bytes());
    tiff.extend_from_slice(&38u32.to_le_bytes());
    // Orientation (0x0112), SHORT, 6.
    tiff.extend_from_slice(&[0x12, 0x01, 3, 0]);
    tiff.extend_from_slice(&1u32.to_le_bytes());
    tiff.extend_from_slice(&[6, 0, 0, 0]);
    tiff.extend_from_slice(&0u32.to_le_bytes());
    tiff.extend_from_slice(b"SecretCam\0");
    tiff.extend_from_slice(b"GPSLatitude 51.5N");
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&tiff);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&jpeg[2..]);
    out
}

async fn metadata_is_removed_and_the_orientation_applied(app: TestApp) {
    app.register("ada", "Ada").await;
    let photo = photo_with_exif(60, 20);
    assert!(photo.windows(9).any(|w| w == b"SecretCam"));
    let image = uploaded(&app, "ada", "image/jpeg", photo).await;
    assert_eq!(
        (image["width"].as_u64(), image["height"].as_u64()),
        (Some(20), Some(60)),
        "turned"
    );
    let served = app
        .get_raw(image["url"].as_str().unwrap())
        .await
        .bytes()
        .await
        .unwrap();
    for secret in [&b"Exif"[..], b"SecretCam", b"GPS"] {
        assert!(
            !served.windows(secret.len()).any(|w| w == secret),
            "{:?} kept",
            String::from_utf8_lossy(secret)
        );
    }
    let decoded = image::load_from_memory(&served).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (20, 60));
}

async fn wide_images_get_renditions(app: TestApp) {
    app.register("ada", "Ada").await;
    let image = uploaded_png(&app, "ada", 1000, 500).await;
    let renditions = image["renditions"].as_array().unwrap();
    let widths: Vec<u64> = renditions
        .iter()
        .map(|r| r["width"].as_u64().unwrap())
        .collect();
    assert_eq!(widths, [480, 960]);
    for rendition in renditions {
        let served = app.get_raw(rendition["url"].as_str().unwrap()).await;
        assert_eq!(served.status(), StatusCode::OK);
        assert_eq!(served.headers()["content-type"], "image/png");
        let decoded = image::load_from_memory(&served.bytes().await.unwrap()).unwrap();
        assert_eq!(
            u64::from(decoded.width()),
            rendition["width"].as_u64().unwrap()
        );
        assert_eq!(
            u64::from(decoded.height()),
            rendition["height"].as_u64().unwrap()
        );
    }
    let narrow = uploaded_png(&app, "ada", 300, 200).await;
    assert_eq!(narrow["renditions"], serde_json::json!([]));
}

async fn images_are_their_owners_and_deleted_images_are_gone(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let first = uploaded_png(&app, "ada", 10, 10).await;
    let second = uploaded_png(&app, "ada", 11, 11).await;
    let third = uploaded_png(&app, "ada", 12, 12).await;
    let mut ids = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let mut request = app
            .client
            .get(app.url("/api/users/ada/images"))
            .query(&[("limit", "2")])
            .header(PRINCIPAL, "ada");
        if let Some(token) = &continuation {
            request = request.query(&[("continuation", token)]);
        }
        let page: Value = request.send().await.unwrap().json().await.unwrap();
        ids.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["id"].clone()),
        );
        match page["continuation"].as_str() {
            Some(token) => continuation = Some(token.to_owned()),
            None => break,
        }
    }
    assert_eq!(
        ids,
        [
            third["id"].clone(),
            second["id"].clone(),
            first["id"].clone()
        ],
        "newest first"
    );
    assert_eq!(
        listed(&app, "bob", "ada").await.status(),
        StatusCode::FORBIDDEN
    );

    let path = format!("/api/images/{}", first["id"].as_str().unwrap());
    let delete = |caller: &'static str| {
        app.client
            .delete(app.url(&path))
            .header(PRINCIPAL, caller)
            .send()
    };
    assert_eq!(delete("bob").await.unwrap().status(), StatusCode::NOT_FOUND);
    assert_eq!(
        app.get_raw(first["url"].as_str().unwrap()).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        delete("ada").await.unwrap().status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        app.get_raw(first["url"].as_str().unwrap()).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(delete("ada").await.unwrap().status(), StatusCode::NOT_FOUND);
    let page: Value = listed(&app, "ada", "ada").await.json().await.unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    app.assert_verifies().await;
}

async fn deleting_an_account_erases_its_images(app: TestApp) {
    app.register("ada", "Ada").await;
    let image = uploaded_png(&app, "ada", 1000, 10).await;
    let deleted = app
        .send(reqwest::Method::DELETE, "/api/users/ada", Some("ada"), None)
        .await;
    assert_eq!(deleted.status(), StatusCode::ACCEPTED);
    assert_eq!(
        app.get_raw(image["url"].as_str().unwrap()).await.status(),
        StatusCode::NOT_FOUND
    );
    for rendition in image["renditions"].as_array().unwrap() {
        let url = rendition["url"].as_str().unwrap();
        assert_eq!(app.get_raw(url).await.status(), StatusCode::NOT_FOUND);
    }
    app.register("ada", "Ada").await;
    let page: Value = listed(&app, "ada", "ada").await.json().await.unwrap();
    assert_eq!(page["items"], serde_json::json!([]));
    app.assert_verifies().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_past_which_uploads_are_refused() {
    let app = TestApp::spawn(Backend::Embedded)
        .settings(|settings| settings.images.quota_mb = 0)
        .start()
        .await;
    app.register("ada", "Ada").await;
    let response = upload(
        &app,
        Some("ada"),
        "image/png",
        picture(8, 8, ImageFormat::Png),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let problem: Value = response.json().await.unwrap();
    assert_eq!(problem["code"], "image-quota-exceeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_never_reads_or_deletes_another_tenants_images() {
    let site = TestApp::spawn(Backend::Embedded)
        .layout(cosmos_blog::store::Tenancy::Multi)
        .unaddressed()
        .start()
        .await;
    tenants_stay_apart(site).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_never_reads_or_deletes_another_tenants_images_in_blob_storage() {
    let Some(azurite) = Azurite::start_or_skip().await else {
        return;
    };
    let site = TestApp::spawn(Backend::Embedded)
        .layout(cosmos_blog::store::Tenancy::Multi)
        .blob_images(azurite)
        .unaddressed()
        .start()
        .await;
    tenants_stay_apart(site).await;
}

async fn tenants_stay_apart(site: TestApp) {
    let (one, two) = (site.in_tenant("one"), site.in_tenant("two"));
    one.register("ada", "Ada").await;
    two.register("ada", "Ada").await;
    let image = uploaded_png(&one, "ada", 10, 10).await;
    let url = image["url"].as_str().unwrap();
    assert!(url.starts_with("/tenants/one/images/"), "{url}");
    assert_eq!(one.get_raw(url).await.status(), StatusCode::OK);
    let elsewhere = url.replace("/tenants/one/", "/tenants/two/");
    assert_eq!(
        two.get_raw(&elsewhere).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        one.get_raw(&url.replace("/tenants/one", "")).await.status(),
        StatusCode::NOT_FOUND
    );
    let path = format!("/api/images/{}", image["id"].as_str().unwrap());
    let other = two
        .client
        .delete(two.url(&path))
        .header(PRINCIPAL, "ada")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    assert_eq!(one.get_raw(url).await.status(), StatusCode::OK);
}

async fn verify_reports_missing_and_orphan_bytes_and_repair_removes_orphans(app: TestApp) {
    use cosmos_blog::images::{ImageId, ImageKey, Scope};
    use cosmos_blog::verify::images::{check_images, remove_orphans};

    // The store the application keeps its images in (files or Blob Storage), opened apart.
    let image_store = &*app.images;
    let scope = Scope::of(app.tenant.as_ref());
    app.register("ada", "Ada").await;
    let image = uploaded_png(&app, "ada", 600, 10).await;
    let clean = check_images(&app.whole_store, image_store).await.unwrap();
    assert!(clean.holds(), "{clean:?}");
    assert_eq!(clean.items, 1);

    // An upload cut off after its bytes (no item), and a rendition lost.
    let orphan = ImageKey::original(scope.clone(), ImageId::generate()).name();
    image_store
        .put(&orphan, bytes::Bytes::from_static(b"x"), "image/png")
        .await
        .unwrap();
    let id = ImageId::parse(image["id"].as_str().unwrap()).unwrap();
    let rendition = ImageKey::rendition(scope, id, 480).name();
    image_store.delete(&rendition).await.unwrap();

    let found = check_images(&app.whole_store, image_store).await.unwrap();
    assert_eq!(found.orphans, [orphan]);
    assert_eq!(found.missing, std::slice::from_ref(&rendition));
    assert_eq!(remove_orphans(image_store, &found).await.unwrap(), 1);
    let after = check_images(&app.whole_store, image_store).await.unwrap();
    assert!(after.orphans.is_empty());
    assert_eq!(after.missing, [rendition]);
}
