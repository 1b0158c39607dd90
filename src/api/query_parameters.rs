//! What the query of an API request may hold: only the parameters its operation takes, as
//! the API description lists them. (What every request must be, the pages' included, is
//! checked below the faces, in `http::admission`.)

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use axum::body::Body;
use axum::extract::{MatchedPath, Query, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::RefOr;
use utoipa::openapi::path::ParameterIn;

use crate::problem::Problem;
use crate::store::Tenancy;

/// The query parameters each operation takes, by method and route template (as the routes
/// are mounted in either layout: `/api/...` or `/api/tenants/{tenantId}/...`): read from the
/// API description, so that what is refused is exactly what the description does not list.
static QUERY_PARAMETERS: LazyLock<HashMap<(Method, String), BTreeSet<String>>> =
    LazyLock::new(|| {
        let mut taken = HashMap::new();
        let paths = [Tenancy::Single, Tenancy::Multi]
            .into_iter()
            .flat_map(|tenancy| {
                super::routes::described_routes(tenancy)
                    .into_openapi()
                    .paths
                    .paths
            });
        for (path, item) in paths {
            let operations = [
                (Method::GET, item.get),
                (Method::PUT, item.put),
                (Method::POST, item.post),
                (Method::DELETE, item.delete),
                (Method::PATCH, item.patch),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                let names = operation
                    .parameters
                    .into_iter()
                    .flatten()
                    .filter_map(|parameter| match parameter {
                        RefOr::T(p) if p.parameter_in == ParameterIn::Query => Some(p.name),
                        _ => None,
                    })
                    .collect();
                taken.insert((method, path.clone()), names);
            }
        }
        taken
    });

/// A route layer: a query parameter the operation does not take is a 400 (`invalid-query`,
/// naming it) instead of being ignored, so that a client's typo or a parameter of another
/// operation never passes for one that was applied.
pub async fn known_query_parameters(request: Request, next: Next) -> Response {
    if let Some(refusal) = unknown_query_parameter(&request) {
        return refusal.into_response();
    }
    next.run(request).await
}

fn unknown_query_parameter(request: &Request<Body>) -> Option<Problem> {
    let route = request.extensions().get::<MatchedPath>()?.as_str();
    let taken = QUERY_PARAMETERS.get(&(request.method().clone(), route.to_owned()))?;
    let sent = match Query::<Vec<(String, String)>>::try_from_uri(request.uri()) {
        Ok(Query(sent)) => sent,
        Err(rejection) => {
            return Some(Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-query",
                rejection.body_text(),
            ));
        }
    };
    let (unknown, _) = sent.into_iter().find(|(name, _)| !taken.contains(name))?;
    let takes = match taken.is_empty() {
        true => "no query parameters".to_owned(),
        false => {
            let names: Vec<String> = taken.iter().map(|n| format!("`{n}`")).collect();
            format!("only {}", names.join(", "))
        }
    };
    Some(Problem {
        field: Some(unknown.clone().into()),
        ..Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid-query",
            format!("unknown query parameter `{unknown}`: this operation takes {takes}"),
        )
    })
}
