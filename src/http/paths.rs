//! Path parameters, read and parsed once: each extractor takes its parameters from the route
//! by name (so the same extractor serves a route at the root and under a tenant prefix) and
//! hands the handler a parsed id. Every route answers the same two problems: a path that
//! does not decode (invalid UTF-8 after percent-decoding) is a 400 `invalid-path`, and an id
//! its type refuses is a 400 `invalid-field` naming the parameter.
//!
//! The extractors the API's operations take also describe their parameters
//! ([`utoipa::IntoParams`]), so that an operation says `params(PostPath, ListParams)` and
//! each parameter's description is written once, next to the code that reads it.

use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{Ref, RefOr, Required, schema::Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};

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

/// A required path parameter as the API description shows it.
fn path_parameter(name: &str, description: &str, schema: RefOr<Schema>) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

/// Declares the extractor of a route's one parameter that its type parses (`UserId::parse`):
/// the extractor's name and type, the parameter's name in the route and its description in
/// the API's. The parameter's schema is its type's named one, or with `as`, another
/// type's shown in place (for an id type with no schema of its own).
macro_rules! id_path {
    ($(#[$doc:meta])* $name:ident($id:ty) from $param:literal: $description:literal) => {
        id_path!(@extractor $(#[$doc])* $name($id) from $param: $description,
            Ref::from_schema_name(<$id as ToSchema>::name()).into());
    };
    ($(#[$doc:meta])* $name:ident($id:ty as $shown:ty) from $param:literal: $description:literal) => {
        id_path!(@extractor $(#[$doc])* $name($id) from $param: $description,
            <$shown as PartialSchema>::schema());
    };
    (@extractor $(#[$doc:meta])* $name:ident($id:ty) from $param:literal: $description:literal, $schema:expr) => {
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

        impl IntoParams for $name {
            fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
                vec![path_parameter($param, $description, $schema)]
            }
        }
    };
}

/// Makes extractors of several path parameters, each parsed from what the route sends (its
/// `TryFrom` the parameters by name, as strings): one way to read and refuse a path for them
/// all.
macro_rules! extract_parsed_paths {
    ($($name:ident from $sent:ty),* $(,)?) => {$(
        impl<S: Send + Sync> FromRequestParts<S> for $name {
            type Rejection = Response;

            async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
                let sent: $sent = params(parts).await?;
                Self::try_from(sent).map_err(refused)
            }
        }
    )*};
}

extract_parsed_paths!(
    SluggedPostPath from SluggedPostParams,
    CommentPath from CommentParams,
    MonthPath from MonthParams,
    RenditionPath from RenditionParams,
    FilePath from FileParams,
);

// What the routes of those extractors send.

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
struct RenditionParams {
    #[serde(rename = "imageId")]
    image_id: String,
    width: String,
}

#[derive(Deserialize)]
struct FileParams {
    file: String,
}

/// [`MonthPath`]'s parameters as sent, and as the API description shows them.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
struct MonthParams {
    /// The year, four digits.
    #[param(pattern = "^[0-9]{4}$", example = "2026")]
    year: String,
    /// The month, two digits (01–12).
    #[param(pattern = "^(0[1-9]|1[0-2])$", example = "11")]
    month: String,
}

id_path!(
    /// `{userId}`: a user's id.
    UserPath(UserId) from "userId": "The user's id."
);

id_path!(
    /// `{userId}` of an operation on the caller's own user (the operation refuses anyone else's).
    OwnUserPath(UserId) from "userId": "The caller's own id."
);

id_path!(
    /// `{userId}` of a list of the user's posts: their author.
    AuthorPath(UserId) from "userId": "The author's id."
);

id_path!(
    /// `{postId}`: a post's id.
    PostPath(PostId) from "postId": "The post's id."
);

/// `{postId}` and `{slug}`: a post's readable address. The slug is taken as it is: the page
/// compares it with the post's own and moves a reader from any other to that one.
pub struct SluggedPostPath(pub PostId, pub String);

impl TryFrom<SluggedPostParams> for SluggedPostPath {
    type Error = ValidationError;

    fn try_from(sent: SluggedPostParams) -> Result<Self, ValidationError> {
        Ok(Self(PostId::parse(&sent.post_id)?, sent.slug))
    }
}

/// `{postId}` and `{commentId}`: a comment of a post.
pub struct CommentPath(pub PostId, pub CommentId);

impl TryFrom<CommentParams> for CommentPath {
    type Error = ValidationError;

    fn try_from(sent: CommentParams) -> Result<Self, ValidationError> {
        let post_id = PostId::parse(&sent.post_id)?;
        Ok(Self(post_id, CommentId::parse(&sent.comment_id)?))
    }
}

impl IntoParams for CommentPath {
    fn into_params(in_path: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let comment = Ref::from_schema_name(CommentId::name()).into();
        let mut params = PostPath::into_params(in_path);
        params.push(path_parameter("commentId", "The comment's id.", comment));
        params
    }
}

id_path!(
    /// `{tenantId}`: the blog of a multi-tenant deployment the request addresses.
    TenantPath(TenantId) from "tenantId": "The blog (tenant) addressed."
);

id_path!(
    /// `{tag}`: a tag, normalised as posts' tags are (`Rust` is `rust`).
    TagPath(Tag) from "tag": "The tag."
);

/// `{year}` and `{month}`: a month of the archive, four digits and two (`2026`, `11`).
pub struct MonthPath(pub Month);

impl TryFrom<MonthParams> for MonthPath {
    type Error = ValidationError;

    fn try_from(MonthParams { year, month }: MonthParams) -> Result<Self, ValidationError> {
        Month::from_path(&year, &month).map(Self)
    }
}

impl IntoParams for MonthPath {
    fn into_params(in_path: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        MonthParams::into_params(in_path)
    }
}

id_path!(
    /// `{imageId}`: an image's id.
    ImagePath(ImageId as String) from "imageId": "The image's id (a UUID)."
);

/// `{imageId}` and `{width}`: one of an image's smaller renditions, by its width in pixels.
pub struct RenditionPath(pub ImageId, pub u32);

impl TryFrom<RenditionParams> for RenditionPath {
    type Error = ValidationError;

    fn try_from(sent: RenditionParams) -> Result<Self, ValidationError> {
        let image_id = ImageId::parse(&sent.image_id)?;
        let width = sent.width.parse().map_err(|_| {
            ValidationError::new("width", "is not a rendition's width (a number of pixels)")
        })?;
        Ok(Self(image_id, width))
    }
}

/// `{file}`: a file name, looked up as it is (an unknown one is simply not found).
pub struct FilePath(pub String);

impl TryFrom<FileParams> for FilePath {
    type Error = ValidationError;

    fn try_from(FileParams { file }: FileParams) -> Result<Self, ValidationError> {
        Ok(Self(file))
    }
}
