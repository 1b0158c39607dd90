//! What every part of the API description shares: its info, tags, the two security schemes,
//! and the problem responses that operations refer to (`(status = 404, response = NotFound)`).

use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, Modify, OpenApi, ToResponse};

use crate::domain::IdempotencyKey;
use crate::http::extract::PRINCIPAL_HEADER;
use crate::problem::{self, Problem};

/// Security scheme of the principal header (App Service Authentication, `BLOG_AUTH=header`
/// or `easyauth`). Operations name it in `security(...)`; keep the two spellings equal.
pub const PRINCIPAL_SCHEME: &str = "principalHeader";
/// Security scheme of bearer JWTs (`BLOG_AUTH=jwt`).
pub const BEARER_SCHEME: &str = "bearerJwt";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "cosmos-blog",
        description = "A blog platform backend on the Azure Cosmos DB case study's V3 model. \
            Commands need an authenticated caller; queries are public. Every refusal is an \
            RFC 9457 problem document (`application/problem+json`) with a stable `code`, \
            also those of no operation: a path no route serves (404 `route-not-found`), a \
            method a route does not take (405 `method-not-allowed`) and a URL over 8 KiB \
            (414 `uri-too-long`). Each operation takes exactly the query parameters it lists: \
            any other is a 400 (`invalid-query`, `field` names it). Each header the API reads \
            (`x-ms-client-principal-id`, `Authorization`, `Content-Type`, `Content-Encoding`, \
            `If-Match`, `Idempotency-Key`) is sent at most once: twice is a 400 \
            (`invalid-field`, `field` names it). Request bodies are UTF-8 JSON (an image upload's is the \
            image's bytes), not content-encoded.",
    ),
    servers(
        (url = "/", description = "The server that serves this document (`GET /api/openapi.json`)."),
    ),
    tags(
        (name = "users", description = "Users (C1, Q1) and a user's posts (Q3)."),
        (name = "posts", description = "Posts (C2, Q2), their comments (C3, Q4) and likes (C4, Q5)."),
        (name = "feed", description = "The 100 most recent posts (Q6)."),
        (name = "images", description = "Images in posts: upload, list one's own, delete. The bytes are served at each image's `url`, outside `/api`."),
        (name = "documentation", description = "This description and a page to try it."),
        (name = "host", description = "The server's own: its health probe."),
    ),
    components(
        schemas(Problem, IdempotencyKey),
        responses(
            BadRequest,
            Unauthorized,
            Forbidden,
            NotFound,
            Conflict,
            UnprocessableContent,
            PayloadTooLarge,
            UnsupportedMediaType,
            TooManyRequests,
            ServiceUnavailable,
            InternalError,
            ImageTooLarge,
            ImageNotTaken,
            ImageQuotaExceeded,
            ImageNotFound,
            ImagesBusy,
        ),
    ),
    modifiers(&SecuritySchemes),
)]
struct ApiDoc;

/// What every part of the document shares; the routes (`super::routes`) add the operations.
pub(super) fn base() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

pub(super) struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            PRINCIPAL_SCHEME,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                PRINCIPAL_HEADER,
                "The caller's user id, set by Azure App Service Authentication (Easy Auth) on \
                 authenticated requests. Trusted only where the platform vouches for it \
                 (`BLOG_AUTH=header` or `easyauth`); a standalone server that trusts it is for \
                 development only. The value is percent-decoded: a user id that is not printable \
                 ASCII is sent as its percent-encoded UTF-8 (`élève` as `%C3%A9l%C3%A8ve`); raw \
                 non-ASCII bytes, or a value that is no user id, are a 400 (`invalid-field`).",
            ))),
        );
        components.add_security_scheme(
            BEARER_SCHEME,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "`Authorization: Bearer <JWT>` (`BLOG_AUTH=jwt`); the caller is the \
                         token's subject.",
                    ))
                    .build(),
            ),
        );
    }
}

/// A response whose body is a [`Problem`].
fn problem_response(description: &str) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        problem::CONTENT_TYPE,
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("Problem")))
            .build(),
    )
}

/// Declares unit types that implement [`ToResponse`] as a named problem response, so that a
/// handler says `(status = 404, response = NotFound)`.
macro_rules! problem_responses {
    ($($name:ident => $description:literal),* $(,)?) => {$(
        pub struct $name;

        impl<'s> ToResponse<'s> for $name {
            fn response() -> (&'s str, RefOr<Response>) {
                (stringify!($name), problem_response($description).build().into())
            }
        }
    )*};
}

problem_responses!(
    BadRequest => "Malformed JSON (`malformed-json`), a body of the wrong shape \
        (`invalid-body`), an invalid field, id or header (`invalid-field`; `field` names it: \
        a header the API reads sent twice, an invalid `Idempotency-Key`, or a principal header \
        that is no user id), an undecodable path (`invalid-path`), a query parameter the \
        operation does not take or cannot read (`invalid-query`; `field` names an unknown one), \
        `limit` out of range (`invalid-field`) or a continuation token that this server did not \
        issue and sign for this list (`invalid-continuation`).",
    Unauthorized => "No authenticated caller: no identity sent (`unauthenticated`), App \
        Service Authentication is off under `BLOG_AUTH=easyauth` (`easyauth-disabled`), or the \
        bearer token was refused under `BLOG_AUTH=jwt` (`invalid-token`, with \
        `WWW-Authenticate: Bearer error=\"invalid_token\"`).",
    Forbidden => "The caller may not do this (`forbidden`).",
    NotFound => "The user or post does not exist (`user-not-found`, `post-not-found`), or the \
        comment or like to delete does not (`not-found`); on commands, also when the caller \
        has no user item yet (`user-not-found`). A draft or scheduled post is its author's \
        alone: to anyone else every read and write of it answers as for a post that does not \
        exist.",
    Conflict => "Too many concurrent changes to the same item; try again (`conflict`). On \
        `POST /api/posts` with an `Idempotency-Key`: the post that key created has been \
        deleted since (`post-deleted`); a new post needs a new key.",
    UnprocessableContent => "The `Idempotency-Key` was sent before with a different request \
        (`idempotency-key-reused`): the item it created says otherwise. A new request needs a \
        new key.",
    PayloadTooLarge => "The request body is larger than the limit (`body-too-large`): 1,269,136 \
        bytes, room for the longest post the field limits take however its text is encoded.",
    UnsupportedMediaType => "The body is not sent as `application/json` in UTF-8 \
        (`unsupported-media-type`: another media type, or a `charset` other than `utf-8`), or \
        it is sent with a `Content-Encoding` (`unsupported-encoding`, answered with \
        `Accept-Encoding: identity`): none is decoded.",
    ServiceUnavailable => "The database cannot be reached; try again later \
        (`store-unavailable`).",
    InternalError => "Something went wrong on the server's side; it has been logged \
        (`internal`).",
);

/// The database throttled the request; `Retry-After` says when to try again.
pub struct TooManyRequests;

impl<'s> ToResponse<'s> for TooManyRequests {
    fn response() -> (&'s str, RefOr<Response>) {
        let retry_after = HeaderBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1)),
            ))
            .description(Some("Seconds to wait before retrying."))
            .build();
        let response = problem_response(
            "The database is busy (`throttled`); retry after the seconds in `Retry-After`.",
        )
        .header("Retry-After", retry_after)
        .build();
        ("TooManyRequests", response.into())
    }
}

/// An upload that found no room among the images being decoded, or a store that cannot be
/// reached; `Retry-After` says when to send an upload again.
pub struct ImagesBusy;

impl<'s> ToResponse<'s> for ImagesBusy {
    fn response() -> (&'s str, RefOr<Response>) {
        let retry_after = HeaderBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1)),
            ))
            .description(Some(
                "Seconds to wait before sending the image again (`images-busy`).",
            ))
            .build();
        let response = problem_response(
            "Other images being decoded take the memory uploads may take at once, and none \
             was given back within the wait (`images-busy`): send the image again after the \
             seconds in `Retry-After`. Or the database cannot be reached \
             (`store-unavailable`); try again later.",
        )
        .header("Retry-After", retry_after)
        .build();
        ("ImagesBusy", response.into())
    }
}

/// A group's own responses with those of the groups it takes in.
fn joined(
    mut own: BTreeMap<String, RefOr<Response>>,
    taken_in: impl IntoIterator<Item = BTreeMap<String, RefOr<Response>>>,
) -> BTreeMap<String, RefOr<Response>> {
    own.extend(taken_in.into_iter().flatten());
    own
}

/// Declares a group of the named responses above that operations list together:
/// `responses((status = 200, ...), JsonBodyFailures, StoreFailures)`. A group may take in
/// other groups (`+ StoreFailures`), so that each set of refusals is written once.
macro_rules! response_group {
    (
        $(#[$doc:meta])*
        $group:ident { $($status:literal => $response:ident),* $(,)? } $(+ $more:ident)*
    ) => {
        $(#[$doc])*
        pub struct $group;

        impl IntoResponses for $group {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                let own = BTreeMap::from([$((
                    $status.to_string(),
                    Ref::from_response_name(<$response as ToResponse>::response().0).into(),
                )),*]);
                joined(own, [$(<$more as IntoResponses>::responses()),*])
            }
        }
    };
}

response_group!(
    /// What every operation that reads or writes the store may also answer.
    StoreFailures {
        429 => TooManyRequests,
        500 => InternalError,
        503 => ServiceUnavailable,
    }
);

response_group!(
    /// What reading a JSON request body may answer.
    JsonBodyFailures {
        400 => BadRequest,
        413 => PayloadTooLarge,
        415 => UnsupportedMediaType,
    }
);

response_group!(
    /// What every public read may answer: a request it cannot read, or a store that fails.
    ReadFailures { 400 => BadRequest } + StoreFailures
);

response_group!(
    /// What reading a user or a post (or what hangs off it) by its id may answer: also that
    /// it does not exist.
    ItemReadFailures { 404 => NotFound } + ReadFailures
);

response_group!(
    /// What every operation of an authenticated caller may answer.
    CommandFailures {
        400 => BadRequest,
        401 => Unauthorized,
    } + StoreFailures
);

response_group!(
    /// What an operation on the caller's own user, or what is theirs, may answer: anyone
    /// else's is forbidden.
    OwnUserFailures { 403 => Forbidden } + CommandFailures
);

response_group!(
    /// What a write to a post or what hangs off it may answer: the post (or the caller's
    /// user) does not exist, or the post changes too often at once.
    PostWriteFailures {
        404 => NotFound,
        409 => Conflict,
    } + CommandFailures
);

response_group!(
    /// What a change only an author may make (edit or delete a post, delete a comment) may
    /// answer.
    AuthorWriteFailures { 403 => Forbidden } + PostWriteFailures
);

response_group!(
    /// What a creation that takes an `Idempotency-Key` and a JSON body (a post, a comment)
    /// may answer.
    KeyedCreateFailures { 422 => UnprocessableContent } + PostWriteFailures + JsonBodyFailures
);

problem_responses!(
    ImageTooLarge => "The image is larger than the upload limit (`image-too-large`, 5 MiB \
        unless `BLOG_IMAGES_MAX_BYTES` says otherwise), its header states more pixels than \
        are taken (`image-too-many-pixels`), or decoding it would take more memory than images \
        being decoded may take at once (`image-too-large-to-decode`; \
        `BLOG_IMAGES_DECODE_BUDGET_MB`, 256 MiB by default); both read from its header before \
        anything is decoded.",
    ImageNotTaken => "The body is not a PNG, JPEG, GIF or WebP image (`unsupported-media-type`: \
        SVG, HTML and every other type included), its bytes are of another type than the \
        `Content-Type` says (`image-type-mismatch`), it carries markup or bytes after the \
        image's end (`not-only-an-image`), it does not decode (`undecodable-image`), or it is \
        sent with a `Content-Encoding` (`unsupported-encoding`).",
    ImageQuotaExceeded => "The caller's images would take more than the quota \
        (`image-quota-exceeded`; `BLOG_IMAGES_QUOTA_MB`, 100 MiB by default): delete some first.",
    ImageNotFound => "No image of the caller's has this id (`image-not-found`).",
);
