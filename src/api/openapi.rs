//! The OpenAPI 3.1 description of the HTTP API, generated from the code so it cannot drift.
//!
//! Each handler carries its own `#[utoipa::path]` (method, path, parameters, body, every
//! status it answers) and is mounted with `utoipa_axum::routes!`, which registers the route
//! in the router and the operation in the document in one step: a route cannot be served
//! without being described. This module adds what belongs to the whole document: its info,
//! tags, the two security schemes and the problem responses that operations refer to.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, Modify, OpenApi, ToResponse, ToSchema};

use utoipa::PartialSchema;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn, PathItem};

use super::extract::PRINCIPAL_HEADER;
use super::problem::{self, Problem};
use crate::domain::{IdempotencyKey, TenantId};
use crate::store::Tenancy;

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
            (`invalid-field`, `field` names it). Request bodies are UTF-8 JSON, not \
            content-encoded.",
    ),
    servers(
        (url = "/", description = "The server that serves this document (`GET /api/openapi.json`)."),
    ),
    tags(
        (name = "users", description = "Users (C1, Q1) and a user's posts (Q3)."),
        (name = "posts", description = "Posts (C2, Q2), their comments (C3, Q4) and likes (C4, Q5)."),
        (name = "feed", description = "The 100 most recent posts (Q6)."),
        (name = "documentation", description = "This description and a page to try it."),
        (name = "host", description = "For the Azure Functions host."),
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
        ),
    ),
    modifiers(&SecuritySchemes),
)]
struct ApiDoc;

/// What every part of the document shares; [`super::described_routes`] adds the operations.
pub(super) fn base() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The complete document of the `single` layout (the committed `openapi.json`).
pub fn document() -> utoipa::openapi::OpenApi {
    document_for(Tenancy::Single)
}

/// The complete document of `tenancy`: in `multi`, every `/api` path is under
/// `/api/tenants/{tenantId}` and takes the tenant as a path-level parameter (declared once
/// for all the path's operations, as OpenAPI allows).
pub fn document_for(tenancy: Tenancy) -> utoipa::openapi::OpenApi {
    let mut document = super::described_routes(tenancy).into_openapi();
    add_links(&mut document, tenancy);
    for item in document.paths.paths.values_mut() {
        for operation in operations_of(item) {
            mark_public(operation);
            add_bad_request(operation);
            link_refusals_to_registering(operation, tenancy);
        }
    }
    if tenancy == Tenancy::Multi {
        // A named schema, like the other ids, so that generated clients get a type for it.
        document
            .components
            .get_or_insert_with(Default::default)
            .schemas
            .insert(TenantId::name().into_owned(), TenantId::schema());
        let paths = std::mem::take(&mut document.paths.paths);
        for (path, mut item) in paths {
            let path = match path.strip_prefix("/api") {
                Some(rest) => {
                    under_tenant(&mut item);
                    format!("{}{rest}", super::tenants::TENANT_PREFIX)
                }
                None => path,
            };
            document.paths.paths.insert(path, item);
        }
    }
    document
}

/// What a successful answer holds, for its links.
#[derive(Clone, Copy)]
enum Answer {
    User,
    Post,
    Comment,
    Like,
    /// A page of a list whose path names this parameter (none for Q7's list of users).
    Page(Option<&'static str>),
}

/// The operations whose answers lead somewhere, by status: their `links` (OpenAPI), so that
/// a client or a stateful test can go from an answer to the operations on what it names.
const ANSWERS: [(&str, &str, Answer); 13] = [
    ("PutUser", "201", Answer::User),
    ("PutUser", "200", Answer::User),
    ("GetUser", "200", Answer::User),
    ("CreatePost", "201", Answer::Post),
    ("EditPost", "200", Answer::Post),
    ("GetPost", "200", Answer::Post),
    ("AddComment", "201", Answer::Comment),
    ("LikePost", "201", Answer::Like),
    ("LikePost", "200", Answer::Like),
    ("ListUserPosts", "200", Answer::Page(Some("userId"))),
    ("ListComments", "200", Answer::Page(Some("postId"))),
    ("ListLikes", "200", Answer::Page(Some("postId"))),
    ("ListUsers", "200", Answer::Page(None)),
];

/// A link: its name, the operation it leads to, and that operation's parameters as runtime
/// expressions on the answer.
type LinkTo = (&'static str, &'static str, Vec<(&'static str, String)>);

fn links_of(operation_id: &'static str, answer: Answer) -> Vec<LinkTo> {
    let body = |pointer: &str| format!("$response.body#/{pointer}");
    match answer {
        Answer::User => {
            let user = || vec![("userId", body("id"))];
            let mut links = vec![
                ("GetUser", "GetUser", user()),
                ("RenameUser", "PutUser", user()),
                ("ListUserPosts", "ListUserPosts", user()),
                ("DeleteUser", "DeleteUser", user()),
            ];
            // The user just registered is the caller: the next thing they can do is write.
            if operation_id == "PutUser" {
                links.push(("CreatePost", "CreatePost", Vec::new()));
            }
            links
        }
        Answer::Post => {
            let post = || vec![("postId", body("id"))];
            vec![
                ("GetPost", "GetPost", post()),
                ("EditPost", "EditPost", post()),
                ("DeletePost", "DeletePost", post()),
                ("AddComment", "AddComment", post()),
                ("ListComments", "ListComments", post()),
                ("LikePost", "LikePost", post()),
                ("ListLikes", "ListLikes", post()),
                ("Unlike", "Unlike", post()),
                ("GetAuthor", "GetUser", vec![("userId", body("userId"))]),
            ]
        }
        Answer::Comment => {
            let post = || vec![("postId", body("postId"))];
            vec![
                ("GetPost", "GetPost", post()),
                ("ListComments", "ListComments", post()),
                (
                    "DeleteComment",
                    "DeleteComment",
                    vec![("postId", body("postId")), ("commentId", body("id"))],
                ),
                ("GetAuthor", "GetUser", vec![("userId", body("userId"))]),
            ]
        }
        Answer::Like => {
            let post = || vec![("postId", body("postId"))];
            vec![
                ("GetPost", "GetPost", post()),
                ("ListLikes", "ListLikes", post()),
                ("Unlike", "Unlike", post()),
                ("GetLiker", "GetUser", vec![("userId", body("userId"))]),
            ]
        }
        // No link to a page's first item: an empty page has none to follow.
        Answer::Page(list) => {
            let mut next = vec![("continuation", body("continuation"))];
            next.extend(list.map(|name| (name, format!("$request.path.{name}"))));
            vec![("NextPage", operation_id, next)]
        }
    }
}

/// The operations of a path.
fn operations_of(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.options,
        &mut item.head,
        &mut item.patch,
        &mut item.trace,
    ]
    .into_iter()
    .flatten()
}

/// An operation that names no security scheme is public: `security: []` says so, rather than
/// leaving it to a document-wide default that there is none of.
fn mark_public(operation: &mut Operation) {
    operation.security.get_or_insert_with(Vec::new);
}

/// Every operation refuses a query parameter it does not take with a 400.
fn add_bad_request(operation: &mut Operation) {
    let bad_request = <BadRequest as ToResponse>::response().0;
    operation
        .responses
        .responses
        .entry("400".to_owned())
        .or_insert_with(|| Ref::from_response_name(bad_request).into());
}

/// The expression of the principal header of the request a link follows.
const REQUEST_PRINCIPAL: &str = "$request.header.x-ms-client-principal-id";

/// A command refused because its caller has no user yet (404), or a registration refused
/// because it names another user than the caller (`PutUser`'s 403), links to registering the
/// caller (`PutUser` with the principal header's id), so that a client or a stateful test
/// that holds an identity finds the way to its first user, and from there (the user's links)
/// to every other operation.
fn link_refusals_to_registering(operation: &mut Operation, tenancy: Tenancy) {
    let by_principal = operation.security.iter().flatten().any(|requirement| {
        serde_json::to_value(requirement)
            .ok()
            .is_some_and(|value| value.get(PRINCIPAL_SCHEME).is_some())
    });
    if !by_principal {
        return;
    }
    let mut refusals = vec![("404", NotFound::response())];
    if operation.operation_id.as_deref() == Some("PutUser") {
        refusals.push(("403", Forbidden::response()));
    }
    for (status, named) in refusals {
        let Some(response) = operation.responses.responses.get_mut(status) else {
            continue;
        };
        let RefOr::T(mut inline) = named.1 else {
            continue;
        };
        let mut link = LinkBuilder::new()
            .operation_id("PutUser")
            .parameter("userId", REQUEST_PRINCIPAL)
            .description("Register the caller (`BLOG_AUTH=header` or `easyauth`).");
        if tenancy == Tenancy::Multi {
            link = link.parameter("tenantId", "$request.path.tenantId");
        }
        inline
            .links
            .insert("RegisterCaller".to_owned(), link.build().into());
        *response = RefOr::T(inline);
    }
}

/// Adds [`ANSWERS`]' links to their operations' responses; in `multi` every link also carries
/// the tenant of the request it follows.
fn add_links(document: &mut utoipa::openapi::OpenApi, tenancy: Tenancy) {
    for item in document.paths.paths.values_mut() {
        for operation in operations_of(item) {
            let Some(operation_id) = operation.operation_id.clone() else {
                continue;
            };
            for (id, status, answer) in ANSWERS.iter().filter(|(id, ..)| *id == operation_id) {
                let Some(RefOr::T(response)) = operation.responses.responses.get_mut(*status)
                else {
                    continue;
                };
                for (name, target, parameters) in links_of(id, *answer) {
                    let mut link = LinkBuilder::new().operation_id(target);
                    if tenancy == Tenancy::Multi {
                        link = link.parameter("tenantId", "$request.path.tenantId");
                    }
                    for (parameter, expression) in parameters {
                        link = link.parameter(parameter, expression);
                    }
                    response.links.insert(name.to_owned(), link.build().into());
                }
            }
        }
    }
}

/// Adds the tenant parameter to a path moved under the tenant prefix (an invalid tenant id is
/// a 400, which every operation lists).
fn under_tenant(item: &mut PathItem) {
    let mut parameters = vec![RefOr::T(tenant_parameter())];
    parameters.extend(item.parameters.take().unwrap_or_default());
    item.parameters = Some(parameters);
}

fn tenant_parameter() -> Parameter {
    ParameterBuilder::new()
        .name("tenantId")
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some("The blog (tenant) addressed."))
        .schema(Some(Ref::from_schema_name(TenantId::name())))
        .build()
}

/// The repository file that holds the document of `tenancy` (`cosmos-blog openapi
/// --tenancy <layout>` rewrites it; a test keeps it equal to [`json_for`]).
pub fn committed_file(tenancy: Tenancy) -> &'static str {
    match tenancy {
        Tenancy::Single => "openapi.json",
        Tenancy::Multi => "openapi.multi.json",
    }
}

/// The document as `openapi.json` holds it: pretty JSON with a final newline.
pub fn json() -> String {
    json_for(Tenancy::Single)
}

/// [`document_for`] as pretty JSON with a final newline.
pub fn json_for(tenancy: Tenancy) -> String {
    // Serialising the document's plain data cannot fail: string keys, no I/O.
    let mut text = document_for(tenancy).to_pretty_json().unwrap_or_default();
    text.push('\n');
    text
}

/// [`json_for`] each layout, computed once for `GET .../openapi.json`.
static SINGLE_JSON: LazyLock<String> = LazyLock::new(|| json_for(Tenancy::Single));
static MULTI_JSON: LazyLock<String> = LazyLock::new(|| json_for(Tenancy::Multi));

/// The document `tenancy` serves.
pub(super) fn served_json(tenancy: Tenancy) -> &'static str {
    match tenancy {
        Tenancy::Single => SINGLE_JSON.as_str(),
        Tenancy::Multi => MULTI_JSON.as_str(),
    }
}

struct SecuritySchemes;

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
        `limit` out of range (`invalid-field`) or a continuation token not issued for this list \
        (`invalid-continuation`).",
    Unauthorized => "No authenticated caller: no identity sent (`unauthenticated`), App \
        Service Authentication is off under `BLOG_AUTH=easyauth` (`easyauth-disabled`), or the \
        bearer token was refused under `BLOG_AUTH=jwt` (`invalid-token`, with \
        `WWW-Authenticate: Bearer error=\"invalid_token\"`).",
    Forbidden => "The caller may not do this (`forbidden`).",
    NotFound => "The user or post does not exist (`user-not-found`, `post-not-found`), or the \
        comment or like to delete does not (`not-found`); on commands, also when the caller \
        has no user item yet (`user-not-found`).",
    Conflict => "Too many concurrent changes to the same item; try again (`conflict`). On \
        `POST /api/posts` with an `Idempotency-Key`: the post that key created has been \
        deleted since (`post-deleted`); a new post needs a new key.",
    UnprocessableContent => "The `Idempotency-Key` was sent before with a different request \
        (`idempotency-key-reused`): the item it created says otherwise. A new request needs a \
        new key.",
    PayloadTooLarge => "The request body is larger than 1 MiB (`body-too-large`).",
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

/// Declares a group of the named responses above that operations list together:
/// `responses((status = 200, ...), JsonBodyFailures, StoreFailures)`.
macro_rules! response_group {
    ($(#[$doc:meta])* $group:ident { $($status:literal => $response:ident),* $(,)? }) => {
        $(#[$doc])*
        pub struct $group;

        impl IntoResponses for $group {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                BTreeMap::from([$((
                    $status.to_string(),
                    Ref::from_response_name(<$response as ToResponse>::response().0).into(),
                )),*])
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
