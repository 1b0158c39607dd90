//! The image operations' calls: each documented response of upload, list and delete.

use super::*;

fn png() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::new_rgb8(4, 3)
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("a PNG");
    out.into_inner()
}

fn upload(expect: u16) -> Call {
    call(Method::POST, "/api/images", expect)
}

impl Call {
    fn image(self, content_type: &'static str, bytes: Vec<u8>) -> Self {
        Self {
            body: Body::Raw(content_type, bytes),
            ..self
        }
    }
}

/// Uploads one of ada's images, then checks every documented answer of the three operations.
pub(super) async fn check_image_calls(
    app: &TestApp,
    tenancy: Tenancy,
    described: &Described,
    coverage: &mut Coverage,
) {
    let mut too_large = png();
    too_large.resize(5 * 1024 * 1024 + 1, 0);
    let first = vec![
        upload(401).image("image/png", png()),
        upload(404).by("nobody").image("image/png", png()),
        upload(400).by("ada").image("image/png", Vec::new()),
        upload(415)
            .by("ada")
            .image("image/svg+xml", b"<svg/>".to_vec()),
        upload(413).by("ada").image("image/png", too_large),
        upload(201).by("ada").image("image/png", png()),
        get("/api/users/ada/images", 401),
        call(Method::GET, "/api/users/ada/images", 403).by("bob"),
        call(Method::GET, "/api/users/ada/images?limit=0", 400).by("ada"),
        call(Method::GET, "/api/users/ada/images", 200).by("ada"),
        call(Method::DELETE, "/api/images/not-an-id", 400).by("ada"),
        call(Method::DELETE, "/api/images/not-an-id", 401),
    ];
    for call in first {
        check(app, tenancy, described, call, coverage).await;
    }
    let listed = app
        .client
        .get(app.url(&in_layout(tenancy, "/api/users/ada/images")))
        .header("x-ms-client-principal-id", "ada")
        .send()
        .await
        .expect("sent")
        .json::<Value>()
        .await
        .expect("a page");
    let id = listed["items"][0]["id"]
        .as_str()
        .expect("an image")
        .to_owned();
    let this_image = format!("/api/images/{id}");
    for call in [
        call(Method::DELETE, &this_image, 404).by("bob"),
        call(Method::DELETE, &this_image, 204).by("ada"),
    ] {
        check(app, tenancy, described, call, coverage).await;
    }
}

/// What each image operation answers on a store that fails every call.
pub(super) fn store_calls(expect: u16) -> Vec<Call> {
    vec![
        upload(expect).by("ada").image("image/png", png()),
        call(Method::GET, "/api/users/ada/images", expect).by("ada"),
        call(
            Method::DELETE,
            "/api/images/0b6f4f7e-2d55-4c5c-9a55-37c0f6a1d4b2",
            expect,
        )
        .by("ada"),
    ]
}
