//! The images' settings: what an upload may be (its bytes, its pixels), what one user may
//! keep, and where the bytes live (files beside the embedded store, or Azure Blob Storage).

use std::path::Path;
use std::sync::Arc;

use clap::Args;

use crate::images::{
    BlobImageStore, DEFAULT_DECODE_BUDGET_BYTES, DEFAULT_DECODE_WAIT, DEFAULT_LIMITS,
    DEFAULT_QUOTA_BYTES, DecodeBudget, FileImageStore, ImageStore, Limits,
};
use crate::store::StoreSettings;

/// An upload's largest size by default: 5 MiB.
pub const DEFAULT_MAX_IMAGE_BYTES: usize = DEFAULT_LIMITS.max_bytes;
/// The most pixels an image may decode to by default (40 megapixels: a large phone photo).
pub const DEFAULT_MAX_IMAGE_PIXELS: u64 = DEFAULT_LIMITS.max_pixels;
/// What one user may keep by default (MiB, renditions included).
pub const DEFAULT_IMAGE_QUOTA_MB: u64 = DEFAULT_QUOTA_BYTES / (1024 * 1024);
/// What images being decoded may take at once by default (MiB).
pub const DEFAULT_DECODE_BUDGET_MB: u64 = DEFAULT_DECODE_BUDGET_BYTES / (1024 * 1024);
/// How long an upload waits for room in the decode budget by default (milliseconds).
pub const DEFAULT_DECODE_WAIT_MS: u64 = DEFAULT_DECODE_WAIT.as_millis() as u64;

#[derive(Debug, Clone, Args)]
pub struct ImageSettings {
    /// The largest image upload, in bytes (a larger one is a 413).
    #[arg(long, env = "BLOG_IMAGES_MAX_BYTES", default_value_t = DEFAULT_MAX_IMAGE_BYTES, global = true)]
    pub max_bytes: usize,

    /// The most pixels (width × height) an uploaded image may have; checked from the image's
    /// header before it is decoded (a 413).
    #[arg(long, env = "BLOG_IMAGES_MAX_PIXELS", default_value_t = DEFAULT_MAX_IMAGE_PIXELS, global = true)]
    pub max_pixels: u64,

    /// How many MiB of memory images being decoded may take at once, all uploads together:
    /// each upload's cost (its decoded pixels and the working copies of re-encoding them) is
    /// read from its header and reserved before it is decoded. An upload that would take more
    /// than the whole budget is a 413; one that does not fit beside those under way waits.
    #[arg(long, env = "BLOG_IMAGES_DECODE_BUDGET_MB", default_value_t = DEFAULT_DECODE_BUDGET_MB, global = true)]
    pub decode_budget_mb: u64,

    /// How many milliseconds an upload waits for room in the decode budget; past it, a 503
    /// with `Retry-After`.
    #[arg(long, env = "BLOG_IMAGES_DECODE_WAIT_MS", default_value_t = DEFAULT_DECODE_WAIT_MS, global = true)]
    pub decode_wait_ms: u64,

    /// How many MiB of images (renditions included) one user may keep (past it, a 409).
    #[arg(long, env = "BLOG_IMAGES_QUOTA_MB", default_value_t = DEFAULT_IMAGE_QUOTA_MB, global = true)]
    pub quota_mb: u64,

    /// Keep the images' bytes in Azure Blob Storage: the blob service's URL
    /// (`https://{account}.blob.core.windows.net`), reached with the app's managed identity
    /// (the user-assigned one `CosmosDBConnection__clientId` names, as for Cosmos DB). The
    /// container must exist. Default: files beside the embedded store.
    #[arg(long = "images-endpoint", env = "BLOG_IMAGES_ENDPOINT", global = true)]
    pub blob_endpoint: Option<String>,

    /// Keep the images' bytes in Azure Blob Storage reached with a connection string (Azurite's:
    /// `UseDevelopmentStorage=true`, or `DefaultEndpointsProtocol=http;AccountName=...;
    /// AccountKey=...;BlobEndpoint=...`); the container is made when missing. For a laptop:
    /// in Azure use BLOG_IMAGES_ENDPOINT.
    #[arg(
        long = "images-connection",
        env = "BLOG_IMAGES_CONNECTION",
        hide_env_values = true,
        global = true
    )]
    pub blob_connection: Option<String>,

    /// The Blob Storage container of the images' bytes.
    #[arg(long = "images-container", env = "BLOG_IMAGES_CONTAINER", default_value = DEFAULT_IMAGE_CONTAINER, global = true)]
    pub blob_container: String,
}

/// The Blob Storage container of the images by default (the Azure template's).
pub const DEFAULT_IMAGE_CONTAINER: &str = "images";

impl Default for ImageSettings {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_pixels: DEFAULT_MAX_IMAGE_PIXELS,
            quota_mb: DEFAULT_IMAGE_QUOTA_MB,
            decode_budget_mb: DEFAULT_DECODE_BUDGET_MB,
            decode_wait_ms: DEFAULT_DECODE_WAIT_MS,
            blob_endpoint: None,
            blob_connection: None,
            blob_container: DEFAULT_IMAGE_CONTAINER.to_owned(),
        }
    }
}

impl ImageSettings {
    /// What an upload may be.
    pub fn limits(&self) -> Limits {
        Limits {
            max_bytes: self.max_bytes,
            max_pixels: self.max_pixels,
            // No setting: the pixel limit is what bounds the work; this only refuses absurd
            // shapes (a 1 × 40 000 000 strip).
            max_side: DEFAULT_LIMITS.max_side,
        }
    }

    /// The budget of the images being decoded at once (one per process: every upload
    /// shares it).
    pub fn decode_budget(&self) -> DecodeBudget {
        DecodeBudget::new(
            self.decode_budget_mb.saturating_mul(1024 * 1024),
            std::time::Duration::from_millis(self.decode_wait_ms),
        )
    }

    /// What one user may keep, in bytes.
    pub fn quota_bytes(&self) -> u64 {
        self.quota_mb.saturating_mul(1024 * 1024)
    }

    /// The store of the bytes: Azure Blob Storage when a setting names it, else files in
    /// `data_dir/images`. `verify` and the server open the same one.
    pub async fn open_store(
        &self,
        data_dir: &Path,
        store_settings: &StoreSettings,
    ) -> anyhow::Result<Arc<dyn ImageStore>> {
        let container = &self.blob_container;
        let store = match (&self.blob_connection, &self.blob_endpoint) {
            (Some(_), Some(_)) => anyhow::bail!(
                "both BLOG_IMAGES_CONNECTION and BLOG_IMAGES_ENDPOINT are set: give one (the \
                 endpoint, with the managed identity, in Azure)"
            ),
            (Some(connection), None) => {
                BlobImageStore::with_connection_string(connection, container).await?
            }
            (None, Some(endpoint)) => {
                // The app's identity, as the Cosmos DB client has it.
                let credential = crate::platform::azure_credential(
                    store_settings.managed_identity,
                    store_settings.cosmos_client_id.clone(),
                )?;
                BlobImageStore::with_identity(endpoint, container, credential).await?
            }
            (None, None) => return Ok(Arc::new(FileImageStore::beside_embedded_store(data_dir))),
        };
        tracing::info!(container = store.location(), "images in Azure Blob Storage");
        Ok(Arc::new(store))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_five_mib_forty_megapixels_a_hundred_mib_each_and_256_mib_decoding() {
        let settings = ImageSettings::default();
        assert_eq!(settings.limits().max_bytes, 5 * 1024 * 1024);
        assert_eq!(settings.limits().max_pixels, 40_000_000);
        assert_eq!(settings.quota_bytes(), 100 * 1024 * 1024);
        assert_eq!(settings.decode_budget().bytes(), 256 * 1024 * 1024);
        let huge = ImageSettings {
            quota_mb: u64::MAX,
            ..settings
        };
        assert_eq!(huge.quota_bytes(), u64::MAX);
    }
}
