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
