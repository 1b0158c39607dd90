//! The item that records an image, in its uploader's partition of `users`: who owns it, what
//! it is, and which renditions its bytes have.

use serde::{Deserialize, Serialize};

use super::id::ImageId;
use super::process::Prepared;
use crate::domain::{Timestamp, UserId};

/// The `type` of an image's item.
pub const IMAGE_TYPE: &str = "image";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageItem {
    #[schema(value_type = String)]
    pub id: ImageId,
    /// Always `image`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The uploader: the partition of `users` the item lives in.
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub content_type: String,
    /// The size of the stored image (renditions not counted).
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
    /// Every byte stored for the image, renditions included (what the quota counts).
    pub stored_bytes: u64,
    /// The widths of the smaller renditions, narrowest first.
    #[serde(default)]
    pub renditions: Vec<RenditionSize>,
    #[schema(value_type = String)]
    pub creation_date: Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RenditionSize {
    pub width: u32,
    pub height: u32,
}

impl ImageItem {
    pub fn new(id: ImageId, owner: UserId, prepared: &Prepared) -> Self {
        Self {
            id,
            kind: IMAGE_TYPE.to_owned(),
            user_id: owner,
            content_type: prepared.format.content_type().to_owned(),
            bytes: prepared.bytes.len() as u64,
            width: prepared.width,
            height: prepared.height,
            stored_bytes: prepared.stored_bytes(),
            renditions: prepared
                .renditions
                .iter()
                .map(|r| RenditionSize {
                    width: r.width,
                    height: r.height,
                })
                .collect(),
            creation_date: Timestamp::now(),
        }
    }
}
