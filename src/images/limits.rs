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
