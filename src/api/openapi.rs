//! The OpenAPI 3.1 description of the HTTP API, generated from the code so it cannot drift.
//!
//! Each handler carries its own `#[utoipa::path]` (method, path, parameters, body, every
//! status it answers) and is mounted with `utoipa_axum::routes!`, which registers the route
//! in the router and the operation in the document in one step: a route cannot be served
//! without being described. The shared parts are in `description`; this module puts the
//! document together, for each layout, with the links between operations.

use std::sync::LazyLock;

use axum::extract::FromRef;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{IntoParams, PartialSchema, ToResponse, ToSchema};

use super::description::{BadRequest, Forbidden, NotFound, PRINCIPAL_SCHEME};
use super::docs::ServedDocument;
use super::routes;
use crate::domain::TenantId;
use crate::http::AppState;
use crate::http::paths::TenantPath;
use crate::store::Tenancy;

/// The complete document of the `single` layout (the committed `openapi.json`).
pub fn document() -> utoipa::openapi::OpenApi {
    document_for(Tenancy::Single)
}

/// The complete document of `tenancy`: in `multi`, every `/api` path is under
/// `/api/tenants/{tenantId}` and takes the tenant as a path-level parameter (declared once
/// for all the path's operations, as OpenAPI allows).
pub fn document_for(tenancy: Tenancy) -> utoipa::openapi::OpenApi {
    let mut document = routes::described_routes(tenancy).into_openapi();
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
        for (path, item) in document.paths.paths.iter_mut() {
            if path != routes::HEALTH_PATH {
                under_tenant(item);
            }
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
const ANSWERS: [(&str, &str, Answer); 15] = [
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
    ("ListUserDrafts", "200", Answer::Page(Some("userId"))),
    ("ListComments", "200", Answer::Page(Some("postId"))),
    ("ListLikes", "200", Answer::Page(Some("postId"))),
    ("ListUsers", "200", Answer::Page(None)),
    ("ListTagPosts", "200", Answer::Page(Some("tag"))),
];

/// A link: its name, the operation it leads to, and that operation's parameters as runtime
/// expressions on the answer.
type LinkTo = (&'static str, &'static str, Vec<(&'static str, String)>);

/// The runtime expression of a field of the answer a link follows.
fn body(pointer: &str) -> String {
    format!("$response.body#/{pointer}")
}

fn links_of(operation_id: &'static str, answer: Answer) -> Vec<LinkTo> {
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
            let comment = vec![("postId", body("postId")), ("commentId", body("id"))];
            links_of_post_item("ListComments", ("DeleteComment", comment), "GetAuthor")
        }
        Answer::Like => {
            let like = vec![("postId", body("postId"))];
            links_of_post_item("ListLikes", ("Unlike", like), "GetLiker")
        }
        // No link to a page's first item: an empty page has none to follow.
        Answer::Page(list) => {
            let mut next = vec![("continuation", body("continuation"))];
            next.extend(list.map(|name| (name, format!("$request.path.{name}"))));
            vec![("NextPage", operation_id, next)]
        }
    }
}

/// The links of what hangs off a post (a comment, a like): to the post, to the post's list of
/// them (`list`), to removing this one (`remove`, with its parameters) and to the user who
/// made it (named `user`).
fn links_of_post_item(
    list: &'static str,
    (remove, removed): (&'static str, Vec<(&'static str, String)>),
    user: &'static str,
) -> Vec<LinkTo> {
    let post = || vec![("postId", body("postId"))];
    vec![
        ("GetPost", "GetPost", post()),
        (list, list, post()),
        (remove, remove, removed),
        (user, "GetUser", vec![("userId", body("userId"))]),
    ]
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
    let mut parameters: Vec<_> = TenantPath::into_params(|| None)
        .into_iter()
        .map(RefOr::T)
        .collect();
    parameters.extend(item.parameters.take().unwrap_or_default());
    item.parameters = Some(parameters);
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

/// The document the deployment serves: its layout's, computed once.
impl FromRef<AppState> for ServedDocument {
    fn from_ref(state: &AppState) -> Self {
        ServedDocument(match state.blogs.tenancy() {
            Tenancy::Single => SINGLE_JSON.as_str(),
            Tenancy::Multi => MULTI_JSON.as_str(),
        })
    }
}
