//! The OpenAPI description of each data layout (`single`, and `multi` with its tenant
//! routes): the committed
//! `openapi.json` and `openapi.multi.json` are the generated ones; each document is valid
//! OpenAPI 3.1; it describes every route and method the application of its layout serves and
//! nothing else; and for every operation, real responses of the running application validate
//! against the document's schema for their status.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::api::openapi;
use cosmos_blog::functions::metadata;
use cosmos_blog::store::{Store, StoreError, StoreResult, Tenancy};
use jsonschema::{Draft, Registry};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use testkit::double::{self, Hooks};
use testkit::{Backend, TestApp, backend_tests, binary, content_type, eventually, open_backend};

const LAYOUTS: [Tenancy; 2] = [Tenancy::Single, Tenancy::Multi];

/// The tenant the `multi` application is exercised in.
const TENANT: &str = "t-one";

/// Where the document lives for the JSON Schema validator, so that `$ref`s resolve in it.
const DOCUMENT_URI: &str = "https://cosmos-blog.invalid/openapi.json";

const OPERATION_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn document(tenancy: Tenancy) -> Value {
    serde_json::from_str(&openapi::json_for(tenancy)).expect("the document is JSON")
}

/// `{method, path template} -> operation`, with methods in upper case.
fn operations(doc: &Value) -> BTreeMap<(String, String), &Value> {
    let mut operations = BTreeMap::new();
    for (template, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in OPERATION_METHODS {
            if let Some(operation) = item.get(method) {
                operations.insert((method.to_uppercase(), template.clone()), operation);
            }
        }
    }
    operations
}

/// RFC 6901 escaping of one pointer segment, then percent-encoding for a URI fragment.
fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn fragment(pointer: &str) -> String {
    pointer
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// How `tenancy` addresses an `/api` path: as it is, or under [`TENANT`]'s prefix. Paths
/// already under a tenant, the site's health probe, and those outside `/api`, are left as they
/// are.
fn in_layout(tenancy: Tenancy, path: &str) -> String {
    let site_wide = path.split('?').next() == Some(cosmos_blog::api::HEALTH_PATH);
    match (tenancy, path.strip_prefix("/api/")) {
        (Tenancy::Multi, Some(rest)) if !rest.starts_with("tenants/") && !site_wide => {
            format!("/api/tenants/{TENANT}/{rest}")
        }
        _ => path.to_owned(),
    }
}

mod committed;
mod image_body;
mod patterns;
mod responses;
mod routes;
mod validity;
