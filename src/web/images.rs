//! The bytes of images in posts, at `/images/{imageId}` (and `/images/{imageId}/{width}` for a
//! smaller rendition): the exact type, cached for good (a name's bytes never change), a
//! conditional GET answered without reading them, and a policy that lets nothing in them run.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Response};

use crate::error::Error;
use crate::http::images::BlogImages;
use crate::http::paths::{ImagePath, RenditionPath};
use crate::images::{ImageFormat, ImageId, ImageKey};
use crate::problem::Problem;

/// An image's response policy: nothing loads, nothing runs, nothing frames it, even if a
/// browser were made to open it as a document.
pub const IMAGE_CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; img-src 'self'; sandbox; frame-ancestors 'none'";

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `GET /images/{imageId}`.
pub async fn serve_image(
    images: BlogImages,
    headers: HeaderMap,
    ImagePath(id): ImagePath,
) -> Response {
    serve(&images, &headers, id, None).await
}

/// `GET /images/{imageId}/{width}`: a smaller rendition.
pub async fn serve_rendition(
    images: BlogImages,
    headers: HeaderMap,
    RenditionPath(id, width): RenditionPath,
) -> Response {
    serve(&images, &headers, id, Some(width)).await
}

fn no_image() -> Response {
    Problem::new(
        StatusCode::NOT_FOUND,
        "image-not-found",
        "there is no image at this address (it may have been deleted)",
    )
    .into_response()
}

async fn serve(
    images: &BlogImages,
    headers: &HeaderMap,
    id: ImageId,
    width: Option<u32>,
) -> Response {
    let key = ImageKey {
        scope: images.scope.clone(),
        id,
        width,
    };
    // The name says which bytes: they never change, so the name is their tag.
    let etag = format!("\"{}\"", key.name().rsplit('/').next().unwrap_or_default());
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim().trim_start_matches("W/") == etag);
    let bytes = match images.store.bytes().get(&key.name()).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return no_image(),
        Err(failed) => return Error::from(failed).into_response(),
    };
    // Stored bytes are re-encoded images; the type is read from them once more, so that no
    // response ever claims a type its bytes are not.
    let Some(format) = ImageFormat::sniff(&bytes) else {
        tracing::error!(name = key.name(), "stored image bytes of no known type");
        return no_image();
    };
    let fixed = [
        (header::CACHE_CONTROL, IMMUTABLE),
        (
            header::CONTENT_SECURITY_POLICY,
            IMAGE_CONTENT_SECURITY_POLICY,
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    let etag = AppendHeaders(
        HeaderValue::from_str(&etag)
            .ok()
            .map(|etag| (header::ETAG, etag)),
    );
    if matches {
        return (StatusCode::NOT_MODIFIED, fixed, etag).into_response();
    }
    let content_type = [(header::CONTENT_TYPE, format.content_type())];
    (fixed, content_type, etag, Body::from(bytes)).into_response()
}
