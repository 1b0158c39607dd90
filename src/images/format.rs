//! The four image formats the blog serves, as read from an upload's first bytes or its
//! declared type: a leaf that the checks, the framing walk and the processing all name.

/// The four formats served. Each is read from the bytes' signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageFormat {
    pub const ALL: [ImageFormat; 4] = [Self::Png, Self::Jpeg, Self::Gif, Self::Webp];

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// The format whose signature starts `bytes`, if one of the four.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Self::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    pub(super) fn codec(self) -> image::ImageFormat {
        match self {
            Self::Png => image::ImageFormat::Png,
            Self::Jpeg => image::ImageFormat::Jpeg,
            Self::Gif => image::ImageFormat::Gif,
            Self::Webp => image::ImageFormat::WebP,
        }
    }

    pub(super) fn from_media_type(declared: &str) -> Option<Self> {
        let essence = declared.split(';').next().unwrap_or_default().trim();
        Self::ALL
            .into_iter()
            .find(|format| format.content_type().eq_ignore_ascii_case(essence))
    }
}
