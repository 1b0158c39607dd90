//! The pages' stylesheet, script and icon, compiled into the binary. Their URLs carry a digest
//! of their content, so a changed file gets a new URL and each URL can be cached for a year.
//! The icon is also at `/favicon.ico`, where browsers look for it whatever a page links.

use std::sync::LazyLock;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::http::paths::FilePath;
use crate::problem::Problem;

pub const ROUTE: &str = "/assets/{file}";

const CSS: &str = include_str!("../../assets/web/site.css");
const SCRIPT: &str = include_str!("../../assets/web/site.js");
const ICON: &str = include_str!("../../assets/web/icon.svg");

/// Where browsers ask for a site's icon when no page told them (and some ask anyway).
pub const FAVICON_ROUTE: &str = "/favicon.ico";

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

static ASSETS: LazyLock<[Asset; 3]> = LazyLock::new(|| {
    [
        hashed("site", "css", CSS, "text/css; charset=utf-8"),
        hashed("site", "js", SCRIPT, "text/javascript; charset=utf-8"),
        hashed("icon", "svg", ICON, "image/svg+xml"),
    ]
});

pub fn css_url() -> &'static str {
    &ASSETS[0].url
}

pub fn script_url() -> &'static str {
    &ASSETS[1].url
}

pub fn icon_url() -> &'static str {
    &ASSETS[2].url
}

/// An asset by its current URL; an old or unknown name is not found.
pub async fn serve(FilePath(file): FilePath) -> Response {
    let path = format!("/assets/{file}");
    match ASSETS.iter().find(|a| a.url == path) {
        Some(asset) => respond(asset, "public, max-age=31536000, immutable"),
        None => Problem::new(StatusCode::NOT_FOUND, "not-found", "no such asset").into_response(),
    }
}

/// `/favicon.ico`: the icon (an SVG, which browsers take from its type whatever the name). Its
/// URL never changes, so it is cached for a day, not for ever.
pub async fn favicon() -> Response {
    respond(&ASSETS[2], "public, max-age=86400")
}

fn respond(asset: &Asset, cache_control: &'static str) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static(cache_control),
            ),
        ],
        asset.body,
    )
        .into_response()
}
