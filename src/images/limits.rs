//! What an upload may be, and which renditions are made of it.

/// The widths (pixels) of the smaller renditions made of an image wider than each.
pub const RENDITION_WIDTHS: [u32; 3] = [480, 960, 1600];

/// What an upload may be: its size in bytes and its pixel size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes an upload may hold.
    pub max_bytes: usize,
    /// The most pixels (width × height) an image may decode to.
    pub max_pixels: u64,
    /// The longest side, in pixels.
    pub max_side: u32,
}

/// The limits of an application given none, and the settings' defaults: 5 MiB, 40 megapixels
/// (a large phone photo), 12 000 pixels a side.
pub const DEFAULT_LIMITS: Limits = Limits {
    max_bytes: 5 * 1024 * 1024,
    max_pixels: 40_000_000,
    max_side: 12_000,
};

/// What one user may keep when nothing says otherwise: 100 MiB.
pub const DEFAULT_QUOTA_BYTES: u64 = 100 * 1024 * 1024;

/// What images being decoded may take at once, all uploads together, when nothing says
/// otherwise: 256 MiB, room for a 40-megapixel JPEG photo (a large phone's) alone.
pub const DEFAULT_DECODE_BUDGET_BYTES: u64 = 256 * 1024 * 1024;

/// How long an upload waits for its share of the decode budget before it is told to come
/// back later, when nothing says otherwise.
pub const DEFAULT_DECODE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
