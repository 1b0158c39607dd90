//! The pages' stylesheet and script, compiled into the binary. Their URLs carry a digest of
//! their content, so a changed file gets a new URL and each URL can be cached for a year.

use std::sync::LazyLock;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::api::extract::PathParam;
use crate::problem::Problem;

pub const ROUTE: &str = "/assets/{file}";

const CSS: &str = include_str!("../../assets/web/site.css");
const SCRIPT: &str = include_str!("../../assets/web/site.js");

struct Asset {
    url: String,
    body: &'static str,
    content_type: &'static str,
}

fn hashed(stem: &str, extension: &str, body: &'static str, content_type: &'static str) -> Asset {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, body.as_bytes());
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Asset {
        url: format!("/assets/{stem}.{hex}.{extension}"),
        body,
        content_type,
    }
}

static ASSETS: LazyLock<[Asset; 2]> = LazyLock::new(|| {
    [
        hashed("site", "css", CSS, "text/css; charset=utf-8"),
        hashed("site", "js", SCRIPT, "text/javascript; charset=utf-8"),
    ]
});

pub fn css_url() -> &'static str {
    &ASSETS[0].url
}

pub fn script_url() -> &'static str {
    &ASSETS[1].url
}

/// An asset by its current URL; an old or unknown name is not found.
pub async fn serve(PathParam(file): PathParam) -> Response {
    let path = format!("/assets/{file}");
    let Some(asset) = ASSETS.iter().find(|a| a.url == path) else {
        return Problem::new(StatusCode::NOT_FOUND, "not-found", "no such asset").into_response();
    };
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
        ],
        asset.body,
    )
        .into_response()
}
