//! The images' settings: what an upload may be (its bytes, its pixels) and what one user may
//! keep. Where the bytes live is the image store's, opened at start-up.

use clap::Args;

use crate::images::{DEFAULT_LIMITS, DEFAULT_QUOTA_BYTES, Limits};

/// An upload's largest size by default: 5 MiB.
pub const DEFAULT_MAX_IMAGE_BYTES: usize = DEFAULT_LIMITS.max_bytes;
/// The most pixels an image may decode to by default (40 megapixels: a large phone photo).
pub const DEFAULT_MAX_IMAGE_PIXELS: u64 = DEFAULT_LIMITS.max_pixels;
/// What one user may keep by default (MiB, renditions included).
pub const DEFAULT_IMAGE_QUOTA_MB: u64 = DEFAULT_QUOTA_BYTES / (1024 * 1024);

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

    /// What one user may keep, in bytes.
    pub fn quota_bytes(&self) -> u64 {
        self.quota_mb.saturating_mul(1024 * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_five_mib_forty_megapixels_and_a_hundred_mib_each() {
        let settings = ImageSettings::default();
        assert_eq!(settings.limits().max_bytes, 5 * 1024 * 1024);
        assert_eq!(settings.limits().max_pixels, 40_000_000);
        assert_eq!(settings.quota_bytes(), 100 * 1024 * 1024);
        let huge = ImageSettings {
            quota_mb: u64::MAX,
            ..settings
        };
        assert_eq!(huge.quota_bytes(), u64::MAX);
    }
}
