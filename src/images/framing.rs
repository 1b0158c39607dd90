//! Where an image's bytes end, by its format's own framing (PNG chunks, GIF blocks, the RIFF
//! size of a WebP, JPEG markers): an upload cut short is told apart from one with bytes after
//! its end. Decoders are lenient with both: a JPEG cut short decodes with its missing rows
//! grey, so the end is checked here, before anything decodes.

use super::format::ImageFormat;

/// How an image's bytes end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// At the format's end.
    Whole,
    /// Before the format's end (or not where its framing says anything could end).
    CutShort,
    /// At the format's end, with more bytes after it.
    Trailing,
}

/// How `bytes`, which start with `format`'s signature, end.
pub(super) fn ending(format: ImageFormat, bytes: &[u8]) -> Ending {
    match format {
        ImageFormat::Png => png_ending(bytes),
        ImageFormat::Gif => gif_ending(bytes),
        ImageFormat::Webp => webp_ending(bytes),
        // Cameras pad JPEGs after their end; what follows is dropped by re-encoding.
        ImageFormat::Jpeg => match jpeg_segments(bytes, |_, _| {}) {
            Ending::Trailing => Ending::Whole,
            other => other,
        },
    }
}

/// After the signature, chunks (length, type, data, CRC) up to `IEND`.
fn png_ending(bytes: &[u8]) -> Ending {
    let mut at = 8;
    loop {
        let Some(header) = bytes.get(at..at + 8) else {
            return Ending::CutShort;
        };
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let Some(end) = at.checked_add(12).and_then(|e| e.checked_add(length)) else {
            return Ending::CutShort;
        };
        if end > bytes.len() {
            return Ending::CutShort;
        }
        if &header[4..8] == b"IEND" {
            return ended_at(end, bytes);
        }
        at = end;
    }
}

/// After the header and the screen's colour table, blocks: extensions and images, each
/// followed by sub-blocks up to an empty one, then the trailer (`;`).
fn gif_ending(bytes: &[u8]) -> Ending {
    let Some(&screen) = bytes.get(10) else {
        return Ending::CutShort;
    };
    let mut at = 13 + colour_table(screen);
    loop {
        let next = match bytes.get(at) {
            None => return Ending::CutShort,
            Some(0x3B) => return ended_at(at + 1, bytes),
            // An extension: its introducer and label, then sub-blocks.
            Some(0x21) => Some(at + 2),
            // An image: its descriptor, its own colour table, the LZW code size, sub-blocks.
            Some(0x2C) => bytes
                .get(at + 9)
                .map(|&descriptor| at + 10 + colour_table(descriptor) + 1),
            Some(_) => return Ending::CutShort,
        };
        match next.and_then(|start| after_sub_blocks(bytes, start)) {
            Some(end) => at = end,
            None => return Ending::CutShort,
        }
    }
}

/// The bytes of the colour table a GIF's packed field announces.
fn colour_table(packed: u8) -> usize {
    if packed & 0x80 == 0 {
        0
    } else {
        3 << ((packed & 0x07) + 1)
    }
}

/// Where the sub-blocks starting at `at` end (after the empty one), if they do.
fn after_sub_blocks(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let size = usize::from(*bytes.get(at)?);
        at += 1 + size;
        if size == 0 {
            return Some(at);
        }
    }
}

/// The RIFF size counts every byte after the first eight (a padding byte after an odd one is
/// tolerated).
fn webp_ending(bytes: &[u8]) -> Ending {
    let Some(size) = bytes.get(4..8) else {
        return Ending::CutShort;
    };
    let end = 8 + u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
    match bytes.len() {
        length if length < end => Ending::CutShort,
        length if length <= end + 1 => Ending::Whole,
        _ => Ending::Trailing,
    }
}

fn ended_at(end: usize, bytes: &[u8]) -> Ending {
    if end == bytes.len() {
        Ending::Whole
    } else {
        Ending::Trailing
    }
}

/// Walks a JPEG's markers from after its SOI up to its EOI, handing each marker that has a
/// segment to `segment` with the segment's bytes, stepping over the entropy-coded data of
/// each scan; how the walk ended (`Trailing` when bytes follow the EOI).
pub(super) fn jpeg_segments(bytes: &[u8], mut segment: impl FnMut(u8, &[u8])) -> Ending {
    let mut at = 2;
    loop {
        // Lenient as decoders are: anything before a marker is stepped over, and so are fill
        // bytes (0xFF repeated).
        match bytes
            .get(at..)
            .and_then(|rest| rest.iter().position(|&b| b != 0xFF))
        {
            Some(0) => match bytes[at..].iter().position(|&b| b == 0xFF) {
                Some(skip) => at += skip,
                None => return Ending::CutShort,
            },
            Some(fill) => {
                at += fill;
                let marker = bytes[at];
                at += 1;
                match marker {
                    0xD9 => return ended_at(at, bytes),
                    // Markers without a segment: restarts, SOI, TEM.
                    0x01 | 0xD0..=0xD8 => {}
                    _ => {
                        let Some(length) = bytes.get(at..at + 2) else {
                            return Ending::CutShort;
                        };
                        let length = usize::from(u16::from_be_bytes([length[0], length[1]]));
                        let Some(payload) = bytes.get(at + 2..at + length.max(2)) else {
                            return Ending::CutShort;
                        };
                        segment(marker, payload);
                        at += length.max(2);
                        if marker == 0xDA {
                            match after_entropy_coded_data(bytes, at) {
                                Some(end) => at = end,
                                None => return Ending::CutShort,
                            }
                        }
                    }
                }
            }
            None => return Ending::CutShort,
        }
    }
}

/// Where a scan's entropy-coded data starting at `at` ends: at the first marker that is not a
/// stuffed zero or a restart.
fn after_entropy_coded_data(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        at += bytes.get(at..)?.iter().position(|&b| b == 0xFF)?;
        match bytes.get(at + 1) {
            Some(0x00 | 0xD0..=0xD7) => at += 2,
            Some(_) => return Some(at),
            None => return None,
        }
    }
}

/// What a JPEG's frame header says: whether it is progressive, and what a progressive
/// decoder keeps while it decodes (every block's coefficients, two bytes each, at each
/// component's sampling).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct JpegFrame {
    pub progressive: bool,
    pub coefficient_bytes: u64,
}

/// The frame of the JPEG in `bytes` (the first frame header's).
pub(super) fn jpeg_frame(bytes: &[u8]) -> JpegFrame {
    let mut frame = None;
    jpeg_segments(bytes, |marker, payload| {
        // SOF0 to SOF15, but DHT (C4), JPG (C8) and DAC (CC), which share the range.
        let start_of_frame = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if start_of_frame && frame.is_none() {
            frame = Some(frame_of(marker, payload));
        }
    });
    frame.unwrap_or_default()
}

fn frame_of(marker: u8, payload: &[u8]) -> JpegFrame {
    let progressive = matches!(marker, 0xC2 | 0xC6 | 0xCA | 0xCE);
    let (Some(size), Some(&count)) = (payload.get(1..5), payload.get(5)) else {
        return JpegFrame {
            progressive,
            coefficient_bytes: 0,
        };
    };
    let height = u64::from(u16::from_be_bytes([size[0], size[1]]));
    let width = u64::from(u16::from_be_bytes([size[2], size[3]]));
    // Each component: its id, its sampling (horizontal, vertical: four bits each), its table.
    let sampling: Vec<(u64, u64)> = payload
        .get(6..6 + 3 * usize::from(count))
        .unwrap_or_default()
        .chunks_exact(3)
        .map(|c| (u64::from(c[1] >> 4).max(1), u64::from(c[1] & 0x0F).max(1)))
        .collect();
    let h_max = sampling.iter().map(|s| s.0).max().unwrap_or(1);
    let v_max = sampling.iter().map(|s| s.1).max().unwrap_or(1);
    // Whole MCUs across and down; each holds h × v blocks of 64 coefficients a component.
    let mcus = width.div_ceil(8 * h_max) * height.div_ceil(8 * v_max);
    let blocks: u64 = sampling.iter().map(|(h, v)| h * v).sum();
    JpegFrame {
        progressive,
        coefficient_bytes: if progressive {
            mcus * blocks * 64 * 2
        } else {
            0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gif_ends_at_its_trailer() {
        // Header, a 1×1 screen without a colour table, an image with a two-entry local table,
        // its LZW data in one sub-block, the trailer.
        let mut gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00".to_vec();
        gif.extend_from_slice(b"\x2C\0\0\0\0\x01\x00\x01\x00\x80\0\0\0\xFF\xFF\xFF");
        gif.extend_from_slice(b"\x02\x02\x44\x01\x00\x3B");
        assert_eq!(ending(ImageFormat::Gif, &gif), Ending::Whole);
        assert_eq!(
            ending(ImageFormat::Gif, &gif[..gif.len() - 1]),
            Ending::CutShort
        );
        let mut trailing = gif.clone();
        trailing.push(0);
        assert_eq!(ending(ImageFormat::Gif, &trailing), Ending::Trailing);
    }

    #[test]
    fn a_jpeg_ends_at_its_eoi_whatever_follows() {
        // SOI, a comment, a scan with a stuffed 0xFF and a restart, EOI.
        let jpeg =
            b"\xFF\xD8\xFF\xFE\x00\x04hi\xFF\xDA\x00\x02\x12\xFF\x00\x34\xFF\xD0\x56\xFF\xD9";
        assert_eq!(ending(ImageFormat::Jpeg, jpeg), Ending::Whole);
        assert_eq!(
            ending(ImageFormat::Jpeg, &[jpeg.as_slice(), b"padding"].concat()),
            Ending::Whole
        );
        for cut in [4, 8, 12, 15, 18, jpeg.len() - 1] {
            assert_eq!(
                ending(ImageFormat::Jpeg, &jpeg[..cut]),
                Ending::CutShort,
                "{cut}"
            );
        }
    }
}
