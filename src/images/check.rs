//! What an upload must be before anything decodes it: one of four types, read from its
//! bytes and agreeing with the declared one, nothing hidden beside the image, whole (not cut
//! short), within the size limits, and a pixel size (read from the header) within the pixel
//! limit. What decoding it would take is read from the header too.

use std::io::Cursor;

use axum::http::StatusCode;
use image::ImageDecoder;

use super::format::ImageFormat;
use super::framing::{self, Ending, JpegFrame};
use super::limits::Limits;

/// Why an upload is not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRefusal {
    /// `bytes`: the image's size, when it is known (a body cut off at the limit is not).
    #[error("{}", too_large(*bytes, *limit))]
    TooLarge { bytes: Option<u64>, limit: usize },
    #[error("the body is empty: send the image's bytes")]
    Empty,
    #[error(
        "send an image as image/png, image/jpeg, image/gif or image/webp (the Content-Type); \
         {0}"
    )]
    UnsupportedType(String),
    #[error("the bytes are {found}, but the request says {declared}: send the type they are")]
    TypeMismatch {
        declared: String,
        found: &'static str,
    },
    #[error("the bytes hold more than one image: {0}")]
    NotOnlyAnImage(&'static str),
    #[error(
        "the image is {width}×{height} pixels; at most {max_side} pixels a side and \
         {max_pixels} pixels in all are taken"
    )]
    TooManyPixels {
        width: u32,
        height: u32,
        max_side: u32,
        max_pixels: u64,
    },
    #[error("the bytes do not decode as the {0} they start as (cut short, or damaged)")]
    Undecodable(&'static str),
    #[error(
        "the image is {width}×{height} pixels: decoding it takes {} MiB, and images being \
         decoded may take {} MiB at once",
        needed.div_ceil(1024 * 1024),
        budget / (1024 * 1024)
    )]
    TooLargeToDecode {
        width: u32,
        height: u32,
        needed: u64,
        budget: u64,
    },
    #[error("other images are being decoded: send this one again in {retry_after_seconds} seconds")]
    Busy { retry_after_seconds: u64 },
    #[error(
        "this account's images would take {needed} bytes; it may keep {quota}: delete some first"
    )]
    QuotaExceeded { needed: u64, quota: u64 },
}

/// What [`ImageRefusal::TooLarge`] says: the image's own size where it is known.
fn too_large(bytes: Option<u64>, limit: usize) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let size = match bytes {
        Some(bytes) => format!("the image is {bytes} bytes ({:.1} MiB)", bytes as f64 / MIB),
        None => format!("the image is more than {limit} bytes"),
    };
    format!(
        "{size}; an image may be at most {limit} bytes ({:.0} MiB)",
        limit as f64 / MIB
    )
}

impl ImageRefusal {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::TooLarge { .. } | Self::TooManyPixels { .. } | Self::TooLargeToDecode { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            Self::Empty => StatusCode::BAD_REQUEST,
            Self::UnsupportedType(_)
            | Self::TypeMismatch { .. }
            | Self::NotOnlyAnImage(_)
            | Self::Undecodable(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::QuotaExceeded { .. } => StatusCode::CONFLICT,
            Self::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The seconds after which the same upload may be taken (`Retry-After`), when it is
    /// refused for now rather than for what it is.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        match self {
            Self::Busy {
                retry_after_seconds,
            } => Some(*retry_after_seconds),
            _ => None,
        }
    }

    /// The problem document's stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TooLarge { .. } => "image-too-large",
            Self::Empty => "empty-body",
            Self::UnsupportedType(_) => "unsupported-media-type",
            Self::TypeMismatch { .. } => "image-type-mismatch",
            Self::NotOnlyAnImage(_) => "not-only-an-image",
            Self::TooManyPixels { .. } => "image-too-many-pixels",
            Self::Undecodable(_) => "undecodable-image",
            Self::QuotaExceeded { .. } => "image-quota-exceeded",
            Self::TooLargeToDecode { .. } => "image-too-large-to-decode",
            Self::Busy { .. } => "images-busy",
        }
    }
}

/// Markup that a browser sniffing the bytes (or a file viewer) could run or render: an
/// upload that carries any of it is a polyglot, whatever it decodes as.
const MARKUP: [&[u8]; 8] = [
    b"<script",
    b"<html",
    b"<svg",
    b"<!doctype",
    b"<?xml",
    b"<body",
    b"<iframe",
    b"javascript:",
];

/// An upload that may be decoded: what it is, and what decoding it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Admitted {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
    /// The bytes of its pixels as the decoder gives them (its colour type's bytes a pixel).
    pub decoded_bytes: u64,
    /// What the decoder holds beside them while it decodes: a progressive JPEG's
    /// coefficients.
    pub decoder_bytes: u64,
    /// Whether turning it the right way up swaps its sides (a copy of the pixels).
    pub turned: bool,
    /// Whether its samples take two bytes (a 16-bit PNG).
    pub wide_samples: bool,
}

/// The upload, admitted for decoding, or why it is not.
pub(super) fn admit(
    declared: Option<&str>,
    upload: &[u8],
    limits: &Limits,
) -> Result<Admitted, ImageRefusal> {
    if upload.len() > limits.max_bytes {
        return Err(ImageRefusal::TooLarge {
            bytes: Some(upload.len() as u64),
            limit: limits.max_bytes,
        });
    }
    let declared = declared.unwrap_or_default().trim();
    let Some(declared_format) = ImageFormat::from_media_type(declared) else {
        let said = if declared.is_empty() {
            "none was sent".to_owned()
        } else {
            format!("{declared:?} is not taken")
        };
        return Err(ImageRefusal::UnsupportedType(said));
    };
    if upload.is_empty() {
        return Err(ImageRefusal::Empty);
    }
    let Some(found) = ImageFormat::sniff(upload) else {
        return Err(ImageRefusal::UnsupportedType(
            "the bytes are none of these".to_owned(),
        ));
    };
    if found != declared_format {
        return Err(ImageRefusal::TypeMismatch {
            declared: declared.to_owned(),
            found: found.content_type(),
        });
    }
    if carries_markup(upload) {
        return Err(ImageRefusal::NotOnlyAnImage(
            "it carries markup or script (HTML, SVG, XML)",
        ));
    }
    match framing::ending(found, upload) {
        Ending::Whole => {}
        Ending::CutShort => return Err(ImageRefusal::Undecodable(found.content_type())),
        Ending::Trailing => {
            return Err(ImageRefusal::NotOnlyAnImage(
                "bytes follow the end of the image",
            ));
        }
    }
    let admitted = header(found, upload)?;
    let (width, height) = (admitted.width, admitted.height);
    if width > limits.max_side
        || height > limits.max_side
        || u64::from(width) * u64::from(height) > limits.max_pixels
    {
        return Err(ImageRefusal::TooManyPixels {
            width,
            height,
            max_side: limits.max_side,
            max_pixels: limits.max_pixels,
        });
    }
    Ok(admitted)
}

/// Whether `bytes` hold markup that a browser sniffing them (or a file viewer) could run or
/// render: an upload that does is a polyglot, whatever it decodes as.
fn carries_markup(bytes: &[u8]) -> bool {
    let lower = bytes.to_ascii_lowercase();
    MARKUP
        .iter()
        .any(|marker| lower.windows(marker.len()).any(|w| w == *marker))
}

/// What the header states, read without decoding the image: its size, the bytes its pixels
/// decode to, and what else decoding it holds.
fn header(format: ImageFormat, bytes: &[u8]) -> Result<Admitted, ImageRefusal> {
    let undecodable = |_| ImageRefusal::Undecodable(format.content_type());
    let mut decoder = image::ImageReader::with_format(Cursor::new(bytes), format.codec())
        .into_decoder()
        .map_err(undecodable)?;
    let (width, height) = decoder.dimensions();
    let colour = decoder.color_type();
    let orientation = decoder.orientation().map_err(undecodable)?;
    let JpegFrame {
        coefficient_bytes, ..
    } = match format {
        ImageFormat::Jpeg => framing::jpeg_frame(bytes),
        _ => JpegFrame::default(),
    };
    Ok(Admitted {
        format,
        width,
        height,
        decoded_bytes: decoder.total_bytes(),
        decoder_bytes: coefficient_bytes,
        turned: matches!(
            orientation,
            image::metadata::Orientation::Rotate90
                | image::metadata::Orientation::Rotate270
                | image::metadata::Orientation::Rotate90FlipH
                | image::metadata::Orientation::Rotate270FlipH
        ),
        wide_samples: colour.bytes_per_pixel() > colour.channel_count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_bytes: 1024,
        max_pixels: 100,
        max_side: 50,
    };

    #[test]
    fn the_type_is_read_from_the_bytes() {
        assert_eq!(ImageFormat::sniff(b"GIF89a...."), Some(ImageFormat::Gif));
        assert_eq!(ImageFormat::sniff(b"<svg xmlns="), None);
        let refused = admit(Some("image/svg+xml"), b"<svg/>", &LIMITS).unwrap_err();
        assert_eq!(refused.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let html = admit(Some("image/png"), b"<html><script>", &LIMITS).unwrap_err();
        assert_eq!(html.code(), "unsupported-media-type");
        let mismatch = admit(Some("image/jpeg"), b"GIF89a\x01\0\x01\0", &LIMITS).unwrap_err();
        assert_eq!(mismatch.code(), "image-type-mismatch");
    }

    #[test]
    fn a_body_over_the_limit_is_refused_before_it_is_read() {
        let refused = admit(Some("image/png"), &[0; 1025], &LIMITS).unwrap_err();
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
