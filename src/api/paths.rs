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

/// Declares the extractor of a route's one parameter that its type parses (`UserId::parse`):
/// the extractor's name and type, and the parameter's name in the route.
macro_rules! id_path {
    ($(#[$doc:meta])* $name:ident($id:ty) from $param:literal) => {
        $(#[$doc])*
        pub struct $name(pub $id);

        impl<S: Send + Sync> FromRequestParts<S> for $name {
            type Rejection = Response;

            async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
                #[derive(Deserialize)]
                struct Param {
                    #[serde(rename = $param)]
                    value: String,
                }
                let Param { value } = params(parts).await?;
                <$id>::parse(&value).map(Self).map_err(refused)
            }
        }
    };
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
struct MonthParams {
    year: String,
    month: String,
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

id_path!(
    /// `{userId}`: a user's id.
    UserPath(UserId) from "userId"
);

id_path!(
    /// `{postId}`: a post's id.
    PostPath(PostId) from "postId"
);

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

id_path!(
    /// `{tenantId}`: the blog of a multi-tenant deployment the request addresses.
    TenantPath(TenantId) from "tenantId"
);

id_path!(
    /// `{tag}`: a tag, normalised as posts' tags are (`Rust` is `rust`).
    TagPath(Tag) from "tag"
);

/// `{year}` and `{month}`: a month of the archive, four digits and two (`2026`, `11`).
pub struct MonthPath(pub Month);

impl<S: Send + Sync> FromRequestParts<S> for MonthPath {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let MonthParams { year, month } = params(parts).await?;
        Month::from_path(&year, &month).map(Self).map_err(refused)
    }
}

id_path!(
    /// `{imageId}`: an image's id.
    ImagePath(ImageId) from "imageId"
);

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
