//! Where an image's bytes live: the contract both stores keep, and the names of the bytes.

use async_trait::async_trait;
use bytes::Bytes;

use super::id::ImageId;
use crate::domain::TenantId;

/// A failure of the image store (the bytes could not be read or written).
#[derive(Debug, Clone, thiserror::Error)]
#[error("image store: {0}")]
pub struct ImageStoreError(pub String);

/// Keeps the bytes of images under names ([`ImageKey::name`]). A name's bytes never change
/// once written (an image is new bytes under a new id), and a reader sees a name's whole
/// bytes or none: never a part.
#[async_trait]
pub trait ImageStore: Send + Sync + 'static {
    /// A short name for logs ("files", "blob").
    fn backend(&self) -> &'static str;

    /// Stores `bytes` under `name`, replacing what was there.
    async fn put(
        &self,
        name: &str,
        bytes: Bytes,
        content_type: &str,
    ) -> Result<(), ImageStoreError>;

    /// The bytes under `name`; `None` when there are none.
    async fn get(&self, name: &str) -> Result<Option<Bytes>, ImageStoreError>;

    /// Removes `name`'s bytes; removing what is not there succeeds.
    async fn delete(&self, name: &str) -> Result<(), ImageStoreError>;

    /// Every name held, in no particular order (for `verify`, `export` and `backup`).
    async fn list(&self) -> Result<Vec<String>, ImageStoreError>;
}

/// The store of an application built without one: every call fails.
pub(super) struct NoImageStore;

#[async_trait]
impl ImageStore for NoImageStore {
    fn backend(&self) -> &'static str {
        "none"
    }

    async fn put(&self, _: &str, _: Bytes, _: &str) -> Result<(), ImageStoreError> {
        Err(Self::refusal())
    }

    async fn get(&self, _: &str) -> Result<Option<Bytes>, ImageStoreError> {
        Err(Self::refusal())
    }

    async fn delete(&self, _: &str) -> Result<(), ImageStoreError> {
        Err(Self::refusal())
    }

    async fn list(&self) -> Result<Vec<String>, ImageStoreError> {
        Ok(Vec::new())
    }
}

impl NoImageStore {
    fn refusal() -> ImageStoreError {
        ImageStoreError("no image store is configured".into())
    }
}

/// Whose images: the one blog of a `single` store, or a tenant's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    Blog,
    Tenant(TenantId),
}

impl Scope {
    pub fn of(tenant: Option<&TenantId>) -> Self {
        tenant.map_or(Self::Blog, |tenant| Self::Tenant(tenant.clone()))
    }

    /// The prefix of the scope's names: `blog/` or `tenants/{tenant, percent-encoded}/`, so
    /// that no tenant's name can reach into another's.
    pub fn prefix(&self) -> String {
        match self {
            Self::Blog => "blog/".to_owned(),
            Self::Tenant(tenant) => {
                let encoded = percent_encoding::utf8_percent_encode(
                    tenant.as_str(),
                    percent_encoding::NON_ALPHANUMERIC,
                );
                format!("tenants/{encoded}/")
            }
        }
    }

    /// The scope of a name's prefix (the inverse of [`Scope::prefix`]).
    pub fn parse_prefix(prefix: &str) -> Option<Self> {
        if prefix == "blog" {
            return Some(Self::Blog);
        }
        let encoded = prefix.strip_prefix("tenants/")?;
        let tenant = percent_encoding::percent_decode_str(encoded)
            .decode_utf8()
            .ok()?;
        TenantId::parse(&tenant).ok().map(Self::Tenant)
    }
}

/// The name of an image's bytes: the image itself, or one of its renditions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageKey {
    pub scope: Scope,
    pub id: ImageId,
    /// `Some(width)`: the rendition of that width.
    pub width: Option<u32>,
}

impl ImageKey {
    pub fn original(scope: Scope, id: ImageId) -> Self {
        Self {
            scope,
            id,
            width: None,
        }
    }

    pub fn rendition(scope: Scope, id: ImageId, width: u32) -> Self {
        Self {
            scope,
            id,
            width: Some(width),
        }
    }

    pub fn name(&self) -> String {
        match self.width {
            None => format!("{}{}", self.scope.prefix(), self.id),
            Some(width) => format!("{}{}.w{width}", self.scope.prefix(), self.id),
        }
    }

    /// The key a name was made from; `None` for a name no key makes.
    pub fn parse(name: &str) -> Option<Self> {
        let (prefix, file) = name.rsplit_once('/')?;
        let scope = Scope::parse_prefix(prefix)?;
        let (id, width) = match file.split_once(".w") {
            Some((id, width)) => (id, Some(width.parse().ok()?)),
            None => (file, None),
        };
        let key = Self {
            scope,
            id: ImageId::parse(id).ok()?,
            width,
        };
        (key.name() == name).then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_as_their_keys_and_tenants_stay_apart() {
        let id = ImageId::generate();
        let tenant =
            TenantId::parse("a/../b ü").unwrap_or_else(|_| TenantId::parse("t ü").unwrap());
        for key in [
            ImageKey::original(Scope::Blog, id.clone()),
            ImageKey::rendition(Scope::Blog, id.clone(), 480),
            ImageKey::original(Scope::Tenant(tenant.clone()), id.clone()),
            ImageKey::rendition(Scope::Tenant(tenant), id.clone(), 960),
        ] {
            assert_eq!(
                ImageKey::parse(&key.name()),
                Some(key.clone()),
                "{}",
                key.name()
            );
            assert_eq!(
                key.name().matches('/').count(),
                key.scope.prefix().matches('/').count()
            );
        }
        assert_eq!(ImageKey::parse("blog/../x"), None);
    }
}
