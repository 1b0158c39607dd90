//! What every handler is given, the API's and the pages' alike: the blogs the deployment
//! serves, who the caller is, and the store of images' bytes.

use std::sync::Arc;

use axum::extract::FromRef;

use super::blogs::{Blogs, Caches};
use crate::auth::Authenticator;
use crate::images::Images;
use crate::signing::ServerKey;
use crate::store::Store;

#[derive(Clone)]
pub struct AppState {
    pub blogs: Arc<Blogs>,
    pub auth: Arc<Authenticator>,
    /// Images in posts: the limits of an upload and the store of their bytes.
    pub images: Images,
}

impl AppState {
    /// `store`: the whole store, whose layout decides the routes (one blog, or one per
    /// tenant); `caches`: what is kept in memory for readers; `key`: the server's, which signs
    /// the lists' continuation tokens; `auth`: who the caller of a command is.
    pub fn new(store: Arc<dyn Store>, caches: Caches, key: ServerKey, auth: Authenticator) -> Self {
        Self {
            blogs: Arc::new(Blogs::new(store, caches, key)),
            auth: Arc::new(auth),
            images: Images::unconfigured(),
        }
    }

    /// The same state with `images` for images in posts (without, every upload and image
    /// answers 503).
    pub fn with_images(self, images: Images) -> Self {
        Self { images, ..self }
    }
}

impl FromRef<AppState> for Arc<Authenticator> {
    fn from_ref(state: &AppState) -> Arc<Authenticator> {
        Arc::clone(&state.auth)
    }
}
