//! Decoding, turning the right way up, encoding again, and the smaller renditions.

use std::io::Cursor;

use bytes::Bytes;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::webp::WebPEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageReader};

use super::check::{ImageFormat, ImageRefusal};
use super::limits::{Limits, RENDITION_WIDTHS};

/// The quality JPEGs are encoded again at: indistinguishable from the upload at page size.
const JPEG_QUALITY: u8 = 85;

/// An image as it is stored: the encoder's output alone, and its smaller renditions.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub format: ImageFormat,
    pub bytes: Bytes,
    pub width: u32,
    pub height: u32,
    /// Narrower versions, narrowest first: one for each of [`RENDITION_WIDTHS`] below the
    /// image's width.
    pub renditions: Vec<Rendition>,
}

impl Prepared {
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

/// Decodes `upload` (already admitted as `format`), within `limits` for what the decoder may
/// allocate, and makes what is stored of it.
pub(super) fn prepare(
    format: ImageFormat,
    upload: &[u8],
    limits: &Limits,
) -> Result<Prepared, ImageRefusal> {
    let undecodable = |_| ImageRefusal::Undecodable(format.content_type());
    let mut reader = ImageReader::with_format(Cursor::new(upload), format.codec());
    let mut decoder_limits = image::Limits::default();
    decoder_limits.max_image_width = Some(limits.max_side);
    decoder_limits.max_image_height = Some(limits.max_side);
    // Four bytes a pixel (RGBA8), twice over for the decoder's own buffers.
    decoder_limits.max_alloc = Some(limits.max_pixels.saturating_mul(8));
    reader.limits(decoder_limits);
    let mut decoder = reader.into_decoder().map_err(undecodable)?;
    let orientation = decoder.orientation().map_err(undecodable)?;
    let mut decoded = DynamicImage::from_decoder(decoder).map_err(undecodable)?;
    decoded.apply_orientation(orientation);
    let (width, height) = (decoded.width(), decoded.height());
    let bytes = encode(&decoded, format)?;
    let renditions = RENDITION_WIDTHS
        .into_iter()
        .filter(|&narrower| narrower < width)
        .map(|narrower| {
            let scaled = decoded.resize(narrower, u32::MAX, FilterType::Triangle);
            Ok(Rendition {
                width: scaled.width(),
                height: scaled.height(),
                bytes: encode(&scaled, format)?,
            })
        })
        .collect::<Result<_, ImageRefusal>>()?;
    Ok(Prepared {
        format,
        bytes,
        width,
        height,
        renditions,
    })
}

/// The image encoded as `format`, with nothing but its pixels: none of the encoders is given
/// metadata to write.
fn encode(image: &DynamicImage, format: ImageFormat) -> Result<Bytes, ImageRefusal> {
    let failed = |_| ImageRefusal::Undecodable(format.content_type());
    let mut out = Cursor::new(Vec::new());
    match format {
        ImageFormat::Jpeg => {
            // JPEG has no alpha: flattened to RGB.
            let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
            rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))
                .map_err(failed)?;
        }
        ImageFormat::Webp => {
            let rgba = DynamicImage::ImageRgba8(image.to_rgba8());
            rgba.write_with_encoder(WebPEncoder::new_lossless(&mut out))
                .map_err(failed)?;
        }
        ImageFormat::Gif => {
            let rgba = DynamicImage::ImageRgba8(image.to_rgba8());
            rgba.write_to(&mut out, image::ImageFormat::Gif)
                .map_err(failed)?;
        }
        ImageFormat::Png => image
            .write_to(&mut out, image::ImageFormat::Png)
            .map_err(failed)?,
    }
    Ok(Bytes::from(out.into_inner()))
}
