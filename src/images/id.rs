//! An image's id: a UUID the server draws, so it is safe as a file name, a blob name and a
//! URL segment as it is.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::ValidationError;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String, example = "0b6f4f7e-2d55-4c5c-9a55-37c0f6a1d4b2")]
pub struct ImageId(String);

impl ImageId {
    pub fn generate() -> Self {
        Self(Uuid::new_v4().hyphenated().to_string())
    }

    /// An id as the server draws them (a lower-case hyphenated UUID); anything else names no
    /// image.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        match Uuid::try_parse(raw) {
            Ok(uuid) if uuid.hyphenated().to_string() == raw => Ok(Self(raw.to_owned())),
            _ => Err(ValidationError::new(
                "imageId",
                "is not an image id (a lower-case UUID the server gave)",
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ImageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for ImageId {
    type Error = ValidationError;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(&raw)
    }
}

impl From<ImageId> for String {
    fn from(id: ImageId) -> String {
        id.0
    }
}
