//! Decoding, turning the right way up, encoding again, and the smaller renditions.

use std::io::Cursor;

use bytes::Bytes;
use image::codecs::gif::GifEncoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::webp::WebPEncoder;
use image::{DynamicImage, ImageDecoder, ImageReader};

use super::budget::Reservation;
use super::check::{Admitted, ImageRefusal};
use super::format::ImageFormat;
use super::limits::{Limits, RENDITION_WIDTHS};

/// The quality JPEGs are encoded again at: indistinguishable from the upload at page size.
const JPEG_QUALITY: u8 = 85;

/// An image as it is stored: the encoder's output alone, and its smaller renditions.
#[derive(Debug)]
pub struct Prepared {
    pub format: ImageFormat,
    pub bytes: Bytes,
    pub width: u32,
    pub height: u32,
    /// Narrower versions, narrowest first: one for each of [`RENDITION_WIDTHS`] below the
    /// image's width.
    pub renditions: Vec<Rendition>,
    /// The decode budget's bytes the encoded image takes, held until it is dropped.
    pub held: Reservation,
}

impl Prepared {
    /// The same image, holding of the decode budget only what its encoded bytes take (once
    /// its pixels are gone), until it is stored.
    pub(super) fn holding_its_bytes_only(self) -> Self {
        let stored = self.stored_bytes();
        Self {
            held: self.held.shrink_to(stored),
            ..self
        }
    }

    /// Every byte stored for the image, its renditions included: what counts in a quota.
    pub fn stored_bytes(&self) -> u64 {
        let renditions: usize = self.renditions.iter().map(|r| r.bytes.len()).sum();
        (self.bytes.len() + renditions) as u64
    }
}

#[derive(Debug, Clone)]
pub struct Rendition {
    pub width: u32,
    pub height: u32,
    pub bytes: Bytes,
}

/// What any decode takes beside the image's own bytes: the encoders' tables, the blocking
/// thread's own heap, the allocator's rounding to its pages.
const WORKING_BYTES: u64 = 16 * 1024 * 1024;

/// The most memory that making what is stored of `admitted` takes, the upload's own bytes
/// (`upload_bytes`) included: what is reserved from the decode budget before it is decoded.
///
/// The decoded pixels (`D` bytes) are kept to the end. Beside them, at most the largest of:
/// what the decoder holds while it decodes (a progressive JPEG's coefficients, with an
/// eighth more for its own buffers; a GIF's or a WebP's frame before it is converted, up to
/// `D`); the turned copy (`D`); the encoded image (up to `D` however well the upload was
/// compressed, `D / 2` for a JPEG at the quality stored) with the encoder's own copies (a
/// GIF encoder's, `1.25 D`; a WebP encoder's, or the PNG encoder's of 16-bit samples, `D`),
/// then with the widest rendition's pixels and their encoding (twice the rendition's share of
/// `D`). And [`WORKING_BYTES`].
pub(super) fn cost(admitted: &Admitted, upload_bytes: usize) -> u64 {
    let pixels = admitted.decoded_bytes;
    let coefficients = admitted.decoder_bytes + admitted.decoder_bytes / 8;
    let decoding = coefficients
        + match admitted.format {
            ImageFormat::Jpeg | ImageFormat::Png => 0,
            ImageFormat::Gif | ImageFormat::Webp => pixels,
        };
    let turning = if admitted.turned { pixels } else { 0 };
    let (encoded, encoder) = match admitted.format {
        ImageFormat::Gif => (pixels, pixels + pixels / 4),
        ImageFormat::Webp => (pixels, pixels),
        ImageFormat::Png if admitted.wide_samples => (pixels, pixels),
        ImageFormat::Png => (pixels, 0),
        ImageFormat::Jpeg => (pixels / 2, 0),
    };
    let rendition = widest_rendition(admitted.width)
        .map_or(0, |narrower| share(pixels, narrower, admitted.width));
    let encoding = encoded + encoder.max(2 * rendition);
    (upload_bytes as u64)
        .saturating_add(WORKING_BYTES)
        .saturating_add(pixels)
        .saturating_add(decoding.max(turning).max(encoding))
}

/// The widest rendition an image `width` pixels wide gets, if any.
fn widest_rendition(width: u32) -> Option<u32> {
    RENDITION_WIDTHS.into_iter().filter(|&w| w < width).max()
}

/// The bytes of `pixels` scaled from `width` to `narrower` (both sides shrink alike).
fn share(pixels: u64, narrower: u32, width: u32) -> u64 {
    let (narrower, width) = (u128::from(narrower), u128::from(width.max(1)));
    let scaled = u128::from(pixels) * narrower * narrower / (width * width);
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

/// Decodes `upload` (admitted as `admitted`, with `held` reserved for it from the decode
/// budget) and makes what is stored of it.
pub(super) fn prepare(
    admitted: &Admitted,
    upload: &[u8],
    limits: &Limits,
    held: Reservation,
) -> Result<Prepared, ImageRefusal> {
    let format = admitted.format;
    let undecodable = |_| ImageRefusal::Undecodable(format.content_type());
    let mut reader = ImageReader::with_format(Cursor::new(upload), format.codec());
    let mut decoder_limits = image::Limits::default();
    decoder_limits.max_image_width = Some(limits.max_side);
    decoder_limits.max_image_height = Some(limits.max_side);
    // What the decoder may allocate for itself: never more than was reserved for it.
    decoder_limits.max_alloc = Some(held.bytes());
    reader.limits(decoder_limits);
    let mut decoder = reader.into_decoder().map_err(undecodable)?;
    // The header the reservation was made for, read again: it must say the same.
    if decoder.dimensions() != (admitted.width, admitted.height)
        || decoder.total_bytes() != admitted.decoded_bytes
    {
        return Err(ImageRefusal::Undecodable(format.content_type()));
    }
    let orientation = decoder.orientation().map_err(undecodable)?;
    let mut decoded = DynamicImage::from_decoder(decoder).map_err(undecodable)?;
    decoded.apply_orientation(orientation);
    let (width, height) = (decoded.width(), decoded.height());
    let bytes = encode(&decoded, format)?;
    let renditions = RENDITION_WIDTHS
        .into_iter()
        .filter(|&narrower| narrower < width)
        .map(|narrower| {
            // An average of the pixels each covers: without the full-size working copies of a
            // filter's passes, and never aliased when it shrinks much.
            let scaled = decoded.thumbnail(narrower, u32::MAX);
            Ok(Rendition {
                width: scaled.width(),
                height: scaled.height(),
                bytes: encode(&scaled, format)?,
            })
        })
        .collect::<Result<Vec<_>, ImageRefusal>>()?;
    Ok(Prepared {
        format,
        bytes,
        width,
        height,
        renditions,
        held,
    })
}

/// The image encoded as `format`, with nothing but its pixels: none of the encoders is given
/// metadata to write. Pixels are converted only where the encoder does not take them as they
/// are.
fn encode(image: &DynamicImage, format: ImageFormat) -> Result<Bytes, ImageRefusal> {
    let failed = |_| ImageRefusal::Undecodable(format.content_type());
    let mut out = Cursor::new(Vec::new());
    match (format, image) {
        (ImageFormat::Jpeg, DynamicImage::ImageRgb8(_) | DynamicImage::ImageLuma8(_)) => image
            .write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))
            .map_err(failed)?,
        // JPEG has no alpha: flattened to RGB.
        (ImageFormat::Jpeg, _) => DynamicImage::ImageRgb8(image.to_rgb8())
            .write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))
            .map_err(failed)?,
        (
            ImageFormat::Webp,
            DynamicImage::ImageRgb8(_)
            | DynamicImage::ImageRgba8(_)
            | DynamicImage::ImageLuma8(_)
            | DynamicImage::ImageLumaA8(_),
        ) => image
            .write_with_encoder(WebPEncoder::new_lossless(&mut out))
            .map_err(failed)?,
        (ImageFormat::Webp, _) => DynamicImage::ImageRgba8(image.to_rgba8())
            .write_with_encoder(WebPEncoder::new_lossless(&mut out))
            .map_err(failed)?,
        (ImageFormat::Gif, DynamicImage::ImageRgb8(_) | DynamicImage::ImageRgba8(_)) => image
            .write_with_encoder(GifEncoder::new(&mut out))
            .map_err(failed)?,
        (ImageFormat::Gif, _) => DynamicImage::ImageRgba8(image.to_rgba8())
            .write_with_encoder(GifEncoder::new(&mut out))
            .map_err(failed)?,
        (ImageFormat::Png, _) => image
            .write_to(&mut out, image::ImageFormat::Png)
            .map_err(failed)?,
    }
    Ok(Bytes::from(out.into_inner()))
}
