//! The images' settings: the limits of an upload and where the bytes live.

use std::path::Path;
use std::sync::Arc;

use clap::Args;

use super::files::FileImageStore;
use super::limits::Limits;
use super::store::ImageStore;

/// An upload's largest size by default: 5 MiB.
pub const DEFAULT_MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// The most pixels an image may decode to by default (40 megapixels: a large phone photo).
pub const DEFAULT_MAX_IMAGE_PIXELS: u64 = 40_000_000;
/// The longest side by default, in pixels.
pub const DEFAULT_MAX_IMAGE_SIDE: u32 = 12_000;
/// What one user may keep by default (MiB, renditions included).
pub const DEFAULT_IMAGE_QUOTA_MB: u64 = 100;

#[derive(Debug, Clone, Args)]
pub struct ImageSettings {
    /// The largest image upload, in bytes (a larger one is a 413).
    #[arg(long, env = "BLOG_IMAGES_MAX_BYTES", default_value_t = DEFAULT_MAX_IMAGE_BYTES, global = true)]
    pub max_bytes: usize,

    /// The most pixels (width × height) an uploaded image may have; checked from the image's
    /// header before it is decoded (a 413).
    #[arg(long, env = "BLOG_IMAGES_MAX_PIXELS", default_value_t = DEFAULT_MAX_IMAGE_PIXELS, global = true)]
    pub max_pixels: u64,

    /// How many MiB of images (renditions included) one user may keep (past it, a 409).
    #[arg(long, env = "BLOG_IMAGES_QUOTA_MB", default_value_t = DEFAULT_IMAGE_QUOTA_MB, global = true)]
    pub quota_mb: u64,
}

impl Default for ImageSettings {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_pixels: DEFAULT_MAX_IMAGE_PIXELS,
            quota_mb: DEFAULT_IMAGE_QUOTA_MB,
        }
    }
}

impl ImageSettings {
    pub fn limits(&self) -> Limits {
        Limits {
            max_bytes: self.max_bytes,
            max_pixels: self.max_pixels,
            max_side: DEFAULT_MAX_IMAGE_SIDE,
        }
    }

    pub fn quota_bytes(&self) -> u64 {
        self.quota_mb.saturating_mul(1024 * 1024)
    }

    /// The store of the bytes: files in `data_dir/images`.
    pub(super) async fn open_store(&self, data_dir: &Path) -> anyhow::Result<Arc<dyn ImageStore>> {
        Ok(Arc::new(FileImageStore::beside_embedded_store(data_dir)))
    }
}
