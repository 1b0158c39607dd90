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
//!
//! Decoding is what takes memory: every upload's cost (its decoded pixels and the working
//! copies of re-encoding them) is read from its header and reserved from one
//! [`DecodeBudget`] before it is decoded, so that uploads together never take more than the
//! budget, however many arrive at once.

mod blob;
mod blob_access;
mod budget;
mod check;
mod files;
mod format;
mod framing;
mod id;
mod item;
mod limits;
mod process;
mod store;

use std::sync::Arc;

use bytes::Bytes;

pub use budget::{DecodeBudget, Reservation};
pub use check::ImageRefusal;
pub use format::ImageFormat;
pub use id::ImageId;
pub use item::{IMAGE_TYPE, ImageItem};
pub use limits::{
    DEFAULT_DECODE_BUDGET_BYTES, DEFAULT_DECODE_WAIT, DEFAULT_LIMITS, DEFAULT_QUOTA_BYTES, Limits,
    RENDITION_WIDTHS,
};
pub use process::{Prepared, Rendition};
pub use store::{ImageKey, ImageStore, ImageStoreError, Scope};

pub use blob::BlobImageStore;
pub use files::FileImageStore;

/// The image capability: the limits of an upload, the budget of decoding, and the store of
/// the bytes.
#[derive(Clone)]
pub struct Images {
    limits: Limits,
    quota_bytes: u64,
    decoding: DecodeBudget,
    bytes: Arc<dyn ImageStore>,
}

impl Images {
    pub fn new(
        limits: Limits,
        quota_bytes: u64,
        decoding: DecodeBudget,
        bytes: Arc<dyn ImageStore>,
    ) -> Self {
        Self {
            limits,
            quota_bytes,
            decoding,
            bytes,
        }
    }

    /// Images without a store: uploads and reads fail (as the store being unreachable).
    pub fn unconfigured() -> Self {
        Self::new(
            DEFAULT_LIMITS,
            DEFAULT_QUOTA_BYTES,
            DecodeBudget::new(DEFAULT_DECODE_BUDGET_BYTES, DEFAULT_DECODE_WAIT),
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
    /// `Content-Type`. The checks and the decoding run off the async threads, the decoding
    /// once its cost is reserved from the decode budget; what the encoded image takes of the
    /// budget is held by the answer until it is dropped.
    pub async fn prepare(
        &self,
        declared: Option<String>,
        upload: Bytes,
    ) -> Result<Prepared, ImageRefusal> {
        let limits = self.limits;
        let (admitted, upload) = off_the_async_threads(move || {
            let admitted = check::admit(declared.as_deref(), &upload, &limits);
            (admitted, upload)
        })
        .await?;
        let admitted = admitted?;
        let cost = process::cost(&admitted, upload.len());
        let held = self
            .decoding
            .reserve(cost, admitted.width, admitted.height)
            .await?;
        tracing::debug!(
            cost,
            budget = self.decoding.bytes(),
            left = self.decoding.available_bytes(),
            "image decoding started"
        );
        let prepared =
            off_the_async_threads(move || process::prepare(&admitted, &upload, &limits, held))
                .await?;
        tracing::debug!("image decoding done");
        prepared.map(Prepared::holding_its_bytes_only)
    }
}

/// Runs CPU-bound `work` on the blocking threads. A panic in it (a decoder's) goes on in the
/// caller, as if it had run there; work cancelled because the process stops is refused for
/// now.
async fn off_the_async_threads<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ImageRefusal> {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => Ok(done),
        Err(failed) => match failed.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => Err(ImageRefusal::Busy {
                retry_after_seconds: 1,
            }),
        },
    }
}
