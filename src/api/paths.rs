//! Path parameters, read and parsed once: each extractor takes its parameters from the route
//! by name (so the same extractor serves a route at the root and under a tenant prefix) and
//! hands the handler a parsed id. Every route answers the same two problems: a path that
//! does not decode (invalid UTF-8 after percent-decoding) is a 400 `invalid-path`, and an id
//! its type refuses is a 400 `invalid-field` naming the parameter.

use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::domain::{CommentId, Month, PostId, Tag, TenantId, UserId, ValidationError};
use crate::error::Error;
use crate::images::ImageId;
use crate::problem::Problem;

/// The answer to a path whose parameters cannot be decoded.
fn undecodable(rejection: PathRejection) -> Response {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "invalid-path",
        rejection.body_text(),
    )
    .into_response()
}

/// The answer to a parameter its id type refuses: the same problem as any refused field.
fn refused(invalid: ValidationError) -> Response {
    Error::Validation(invalid).into_response()
}

/// The route's parameters named by `T`'s fields, as sent (decoded, not yet validated).
async fn params<T: DeserializeOwned + Send>(parts: &mut Parts) -> Result<T, Response> {
    Path::<T>::from_request_parts(parts, &())
        .await
        .map(|Path(params)| params)
        .map_err(undecodable)
}

#[derive(Deserialize)]
struct UserParams {
    #[serde(rename = "userId")]
    user_id: String,
}

#[derive(Deserialize)]
struct PostParams {
    #[serde(rename = "postId")]
    post_id: String,
}

#[derive(Deserialize)]
struct SluggedPostParams {
    #[serde(rename = "postId")]
    post_id: String,
    slug: String,
}

#[derive(Deserialize)]
struct CommentParams {
    #[serde(rename = "postId")]
    post_id: String,
    #[serde(rename = "commentId")]
    comment_id: String,
}

#[derive(Deserialize)]
struct TenantParams {
    #[serde(rename = "tenantId")]
    tenant_id: String,
}

#[derive(Deserialize)]
struct TagParams {
    tag: String,
}

#[derive(Deserialize)]
struct MonthParams {
    year: String,
    month: String,
}

#[derive(Deserialize)]
struct ImageParams {
    #[serde(rename = "imageId")]
    image_id: String,
}

#[derive(Deserialize)]
struct RenditionParams {
    #[serde(rename = "imageId")]
    image_id: String,
    width: String,
}

#[derive(Deserialize)]
struct FileParams {
    file: String,
}

/// `{userId}`: a user's id.
pub struct UserPath(pub UserId);

impl<S: Send + Sync> FromRequestParts<S> for UserPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let UserParams { user_id } = params(parts).await?;
        UserId::parse(&user_id).map(Self).map_err(refused)
    }
}

/// `{postId}`: a post's id.
pub struct PostPath(pub PostId);

impl<S: Send + Sync> FromRequestParts<S> for PostPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let PostParams { post_id } = params(parts).await?;
        PostId::parse(&post_id).map(Self).map_err(refused)
    }
}

/// `{postId}` and `{slug}`: a post's readable address. The slug is taken as it is: the page
/// compares it with the post's own and moves a reader from any other to that one.
pub struct SluggedPostPath(pub PostId, pub String);

impl<S: Send + Sync> FromRequestParts<S> for SluggedPostPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let SluggedPostParams { post_id, slug } = params(parts).await?;
        let post_id = PostId::parse(&post_id).map_err(refused)?;
        Ok(Self(post_id, slug))
    }
}

/// `{postId}` and `{commentId}`: a comment of a post.
pub struct CommentPath(pub PostId, pub CommentId);

impl<S: Send + Sync> FromRequestParts<S> for CommentPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let CommentParams {
            post_id,
            comment_id,
        } = params(parts).await?;
        let post_id = PostId::parse(&post_id).map_err(refused)?;
        let comment_id = CommentId::parse(&comment_id).map_err(refused)?;
        Ok(Self(post_id, comment_id))
    }
}

/// `{tenantId}`: the blog of a multi-tenant deployment the request addresses.
pub struct TenantPath(pub TenantId);

impl<S: Send + Sync> FromRequestParts<S> for TenantPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let TenantParams { tenant_id } = params(parts).await?;
        TenantId::parse(&tenant_id).map(Self).map_err(refused)
    }
}

/// `{tag}`: a tag, normalised as posts' tags are (`Rust` is `rust`).
pub struct TagPath(pub Tag);

impl<S: Send + Sync> FromRequestParts<S> for TagPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let TagParams { tag } = params(parts).await?;
        Tag::parse(&tag).map(Self).map_err(refused)
    }
}

/// `{year}` and `{month}`: a month of the archive, four digits and two (`2026`, `11`).
pub struct MonthPath(pub Month);

impl<S: Send + Sync> FromRequestParts<S> for MonthPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let MonthParams { year, month } = params(parts).await?;
        Month::from_path(&year, &month).map(Self).map_err(refused)
    }
}

/// `{imageId}`: an image's id.
pub struct ImagePath(pub ImageId);

impl<S: Send + Sync> FromRequestParts<S> for ImagePath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ImageParams { image_id } = params(parts).await?;
        ImageId::parse(&image_id).map(Self).map_err(refused)
    }
}

/// `{imageId}` and `{width}`: one of an image's smaller renditions, by its width in pixels.
pub struct RenditionPath(pub ImageId, pub u32);

impl<S: Send + Sync> FromRequestParts<S> for RenditionPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let RenditionParams { image_id, width } = params(parts).await?;
        let image_id = ImageId::parse(&image_id).map_err(refused)?;
        let width = width.parse().map_err(|_| {
            refused(ValidationError::new(
                "width",
                "is not a rendition's width (a number of pixels)",
            ))
        })?;
        Ok(Self(image_id, width))
    }
}

/// `{file}`: a file name, looked up as it is (an unknown one is simply not found).
pub struct FilePath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for FilePath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let FileParams { file } = params(parts).await?;
        Ok(Self(file))
    }
}
