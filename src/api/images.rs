//! The routes of images in posts: upload, list one's own, delete. The bytes themselves are
//! served at `/images/{imageId}` by the pages (`web`), where a browser finds them.

use axum::Json;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::description::{
    CommandFailures, ImageNotFound, ImageNotTaken, ImageQuotaExceeded, ImageTooLarge, ImagesBusy,
    NotFound, OwnUserFailures,
};
use crate::domain::TenantId;
use crate::error::{Error, Result};
use crate::http::extract::{List, ListParams};
use crate::http::images::{BlogImages, image_path};
use crate::http::paths::{ImagePath, OwnUserPath};
use crate::http::tenants::Command;
use crate::images::{ImageId, ImageItem, ImageRefusal};

/// An image as the API answers it: where it is served and what it is.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageView {
    #[schema(value_type = String)]
    pub id: ImageId,
    /// Where the image is served, on this site (a path: `/images/{id}`, under the tenant's
    /// prefix in a multi-tenant deployment). Its bytes never change.
    pub url: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`: the type of the bytes.
    pub content_type: String,
    /// The size of the stored image: after its metadata was removed.
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
    /// The smaller renditions made at upload, narrowest first (none for a narrow image).
    pub renditions: Vec<RenditionView>,
    /// When it was uploaded (UTC, ISO-8601).
    pub creation_date: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RenditionView {
    pub url: String,
    pub width: u32,
    pub height: u32,
}

/// The bytes of an image of one type as a request body, described as OpenAPI 3.1 describes
/// raw binary content: no `type` (the body is not a JSON string) and the media type as
/// `contentMediaType`.
macro_rules! image_bytes {
    ($name:ident, $media_type:literal) => {
        #[doc = concat!("A request body of `", $media_type, "` bytes.")]
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::SchemaType::AnyValue)
                    .content_media_type($media_type)
                    .description(Some(concat!(
                        "The image's bytes as they are (",
                        $media_type,
                        "), not encoded."
                    )))
                    .into()
            }
        }

        impl ToSchema for $name {}
    };
}

image_bytes!(PngBytes, "image/png");
image_bytes!(JpegBytes, "image/jpeg");
image_bytes!(GifBytes, "image/gif");
image_bytes!(WebpBytes, "image/webp");

/// A page of the caller's images.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImagePage {
    pub items: Vec<ImageView>,
    /// Pass it back as `?continuation=` for the next page; `null` on the last one.
    pub continuation: Option<String>,
}

impl ImageView {
    pub fn of(item: &ImageItem, tenant: Option<&TenantId>) -> Self {
        Self {
            id: item.id.clone(),
            url: image_path(tenant, &item.id, None),
            content_type: item.content_type.clone(),
            bytes: item.bytes,
            width: item.width,
            height: item.height,
            renditions: item
                .renditions
                .iter()
                .map(|r| RenditionView {
                    url: image_path(tenant, &item.id, Some(r.width)),
                    width: r.width,
                    height: r.height,
                })
                .collect(),
            creation_date: item.creation_date.to_string(),
        }
    }
}

/// Upload an image
///
/// The image's bytes are the body, with their type as `Content-Type`. The type is read from
/// the bytes and must agree; the image is decoded, turned the right way up and encoded again,
/// so that none of its metadata (EXIF, XMP, GPS, comments) is kept; wide images get smaller
/// renditions. Decoding waits its turn when the images being decoded take the memory uploads
/// may take at once. Signed-in callers only, never from another site's page.
#[utoipa::path(
    post, path = "/images", operation_id = "UploadImage", tag = "images",
    request_body(
        description = "The image's bytes: PNG, JPEG, GIF or WebP, at most the upload limit (5 MiB by default).",
        content(
            (inline(PngBytes) = "image/png"),
            (inline(JpegBytes) = "image/jpeg"),
            (inline(GifBytes) = "image/gif"),
            (inline(WebpBytes) = "image/webp"),
        ),
    ),
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The image is stored; `url` serves it.", body = ImageView,
            headers(("Location" = String, description = "The image's `url`."))),
        (status = 404, response = NotFound),
        (status = 409, response = ImageQuotaExceeded),
        (status = 413, response = ImageTooLarge),
        (status = 415, response = ImageNotTaken),
        CommandFailures,
        (status = 503, response = ImagesBusy),
    )
)]
pub(super) async fn upload_image(
    Command { blog, caller }: Command,
    images: BlogImages,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    if let Some(encoding) = headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_owned())
        .filter(|e| !e.eq_ignore_ascii_case("identity"))
    {
        return Ok(crate::problem::Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-encoding",
            format!("the image is sent with Content-Encoding {encoding:?}; send it unencoded"),
        )
        .into_response());
    }
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let stated = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let upload = read_upload(body, images.store.limits().max_bytes, stated).await?;
    let item = blog
        .upload_image(&images.store, &images.scope, &caller, declared, upload)
        .await?;
    let view = ImageView::of(&item, images.tenant.as_ref());
    let mut response = (StatusCode::CREATED, Json(&view)).into_response();
    if let Ok(location) = HeaderValue::from_str(&view.url) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// The body, up to `limit` bytes; past it a 413 before the rest is read, which gives the
/// image's size from `Content-Length` when the request states it.
async fn read_upload(body: Body, limit: usize, stated: Option<u64>) -> Result<bytes::Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        Error::from(ImageRefusal::TooLarge {
            bytes: stated.filter(|&stated| stated > limit as u64),
            limit,
        })
    })
}

/// Delete an image
///
/// The owner's alone. Its URL answers 404 from then on; a post that shows it shows its alt
/// text instead.
#[utoipa::path(
    delete, path = "/images/{imageId}", operation_id = "DeleteImage", tag = "images",
    params(ImagePath), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 204, description = "The image is deleted."),
        (status = 404, response = ImageNotFound),
        CommandFailures,
    )
)]
pub(super) async fn delete_image(
    Command { blog, caller }: Command,
    images: BlogImages,
    ImagePath(image_id): ImagePath,
) -> Result<StatusCode> {
    blog.delete_image(&images.store, &images.scope, &caller, &image_id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List one's own images
///
/// The caller's images, newest first, a page at a time: one query of the caller's partition
/// of `users`. Nobody else's.
#[utoipa::path(
    get, path = "/users/{userId}/images", operation_id = "ListUserImages", tag = "images",
    params(OwnUserPath, ListParams), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 200, description = "A page of the caller's images.", body = ImagePage),
        OwnUserFailures,
    )
)]
pub(super) async fn user_images(
    Command { blog, caller }: Command,
    images: BlogImages,
    OwnUserPath(user_id): OwnUserPath,
    list: List,
) -> Result<Json<ImagePage>> {
    let page = blog.user_images(&caller, &user_id, list.request()).await?;
    let tenant = images.tenant.as_ref();
    Ok(Json(ImagePage {
        items: page
            .items
            .iter()
            .map(|item| ImageView::of(item, tenant))
            .collect(),
        continuation: page.continuation,
    }))
}
