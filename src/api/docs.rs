//! The API description and a page to try it: `GET /api/openapi.json`, and Swagger UI at
//! `GET /api/docs` with its two assets. The assets are vendored under `assets/swagger-ui/`
//! and compiled in, so the page works offline and loads nothing from elsewhere.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("../../assets/docs.html");
const SWAGGER_UI_CSS: &[u8] = include_bytes!("../../assets/swagger-ui/swagger-ui.css");
const SWAGGER_UI_JS: &[u8] = include_bytes!("../../assets/swagger-ui/swagger-ui-bundle.js");

/// The OpenAPI document this deployment serves, as JSON (`openapi` makes it from the routes,
/// these among them).
#[derive(Clone, Copy)]
pub struct ServedDocument(pub &'static str);

/// The assets change only with the binary; browsers may keep them for a day.
const ASSET_CACHE_CONTROL: &str = "public, max-age=86400";

/// The OpenAPI description of this API
///
/// The same document as `openapi.json` in the repository.
#[utoipa::path(
    get, path = "/openapi.json", operation_id = "GetOpenApi", tag = "documentation",
    responses((status = 200, description = "An OpenAPI 3.1 document.", body = Object, content_type = "application/json"))
)]
pub(super) async fn openapi_json(
    State(ServedDocument(json)): State<ServedDocument>,
) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], json)
}

/// A page to read and try the API (Swagger UI)
#[utoipa::path(
    get, path = "/docs", operation_id = "GetApiDocs", tag = "documentation",
    responses((status = 200, description = "An HTML page.", body = String, content_type = "text/html"))
)]
pub(super) async fn docs_page() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE)
}

/// Swagger UI's style sheet, for the docs page
#[utoipa::path(
    get, path = "/docs/swagger-ui.css", operation_id = "GetApiDocsStyles", tag = "documentation",
    responses((status = 200, description = "A CSS style sheet.", body = String, content_type = "text/css"))
)]
pub(super) async fn docs_styles() -> Response {
    asset("text/css; charset=utf-8", SWAGGER_UI_CSS)
}

/// Swagger UI's script, for the docs page
#[utoipa::path(
    get, path = "/docs/swagger-ui-bundle.js", operation_id = "GetApiDocsScript", tag = "documentation",
    responses((status = 200, description = "A JavaScript program.", body = String, content_type = "text/javascript"))
)]
pub(super) async fn docs_script() -> Response {
    asset("text/javascript; charset=utf-8", SWAGGER_UI_JS)
}

fn asset(content_type: &'static str, bytes: &'static [u8]) -> Response {
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CACHE_CONTROL, ASSET_CACHE_CONTROL),
    ];
    (headers, bytes).into_response()
}
