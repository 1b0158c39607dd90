//! The images of the blog a request addresses, and where each is served: what the API's
//! image routes and the pages' uploads and image serving share.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::state::AppState;
use crate::domain::TenantId;
use crate::images::{ImageId, Images, Scope};

/// The path where the image of `id` is served in `tenant`'s blog (or the one blog).
pub fn image_path(tenant: Option<&TenantId>, id: &ImageId, width: Option<u32>) -> String {
    let base = match tenant {
        Some(tenant) => format!(
            "/tenants/{}",
            percent_encoding::utf8_percent_encode(
                tenant.as_str(),
                percent_encoding::NON_ALPHANUMERIC
            )
        ),
        None => String::new(),
    };
    match width {
        Some(width) => format!("{base}/images/{id}/{width}"),
        None => format!("{base}/images/{id}"),
    }
}

/// The images of the blog a request addresses: the deployment's images (the limits of an
/// upload and the store of their bytes), the scope of the blog's names in that store, and the
/// tenant whose prefix their URLs are under.
pub struct BlogImages {
    pub store: Images,
    pub scope: Scope,
    pub tenant: Option<TenantId>,
}

impl FromRequestParts<AppState> for BlogImages {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        let tenant = parts.extensions.get::<TenantId>().cloned();
        Ok(BlogImages {
            store: state.images.clone(),
            scope: Scope::of(tenant.as_ref()),
            tenant,
        })
    }
}
