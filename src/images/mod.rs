//! Images in posts: what an upload must be, what is kept of it, and where its bytes live.
//!
//! One door, [`Images`]: [`Images::prepare`] turns an upload into a [`Prepared`] image or an
//! [`ImageRefusal`], and [`Images::bytes`] is the [`ImageStore`] that keeps the bytes (files
//! beside the embedded store, or Azure Blob Storage).
//!
//! Only real images are kept. The type is read from the bytes, never taken from the request
//! (PNG, JPEG, GIF and WebP; anything else, SVG and HTML among them, is refused), and a
//! declared type that disagrees is refused too. The pixel size is read from the header before
//! anything is decoded, so a small file that would decode to gigabytes costs nothing. The
//! image is then decoded, turned the right way up (its EXIF orientation) and encoded again:
//! what is stored is the encoder's output alone, so no EXIF, XMP, GPS or comment of the upload
//! survives, and neither does anything appended to it (a polyglot). Smaller renditions of a
//! wide image are made once, here.

mod blob;
mod blob_access;
mod check;
mod files;
mod framing;
mod id;
mod item;
mod limits;
mod process;
mod store;

use std::sync::Arc;

pub use check::{ImageFormat, ImageRefusal};
pub use id::ImageId;
pub use item::{IMAGE_TYPE, ImageItem};
pub use limits::{DEFAULT_LIMITS, DEFAULT_QUOTA_BYTES, Limits, RENDITION_WIDTHS};
pub use process::{Prepared, Rendition};
pub use store::{ImageKey, ImageStore, ImageStoreError, Scope};

pub use blob::BlobImageStore;
pub use files::FileImageStore;

/// The image capability: the limits of an upload and the store of the bytes.
#[derive(Clone)]
pub struct Images {
    limits: Limits,
    quota_bytes: u64,
    bytes: Arc<dyn ImageStore>,
}

impl Images {
    pub fn new(limits: Limits, quota_bytes: u64, bytes: Arc<dyn ImageStore>) -> Self {
        Self {
            limits,
            quota_bytes,
            bytes,
        }
    }

    /// Images without a store: uploads and reads fail (as the store being unreachable).
    pub fn unconfigured() -> Self {
        Self::new(
            DEFAULT_LIMITS,
            DEFAULT_QUOTA_BYTES,
            Arc::new(store::NoImageStore),
        )
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The most bytes of images (renditions included) one user may keep.
    pub fn quota_bytes(&self) -> u64 {
        self.quota_bytes
    }

    pub fn bytes(&self) -> &Arc<dyn ImageStore> {
        &self.bytes
    }

    /// Checks an upload and makes what is stored of it: `declared` is the request's
    /// `Content-Type`. CPU-bound (decoding, encoding, resizing): call it off the async
    /// threads.
    pub fn prepare(&self, declared: Option<&str>, upload: &[u8]) -> Result<Prepared, ImageRefusal> {
        let format = check::admit(declared, upload, &self.limits)?;
        process::prepare(format, upload, &self.limits)
    }
}
