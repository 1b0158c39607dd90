//! The images' rule: every image item's bytes (the image and each of its renditions) are in
//! the image store, and every name in the image store belongs to an image item. Bytes are
//! written before their item and removed after it, so an interrupted upload or delete leaves
//! bytes without an item (orphans), which `verify --repair` removes; an item without its bytes
//! was made some other way, and only reported.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use crate::blog::images::image_keys;
use crate::domain::TenantId;
use crate::images::{IMAGE_TYPE, ImageItem, ImageStore, ImageStoreError, Scope};
use crate::store::{Container, Pages, Query, Store, StoreError, TENANT_FIELD};

/// What the images' scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageReport {
    /// Image items read.
    pub items: u64,
    /// Names an item needs that the image store does not hold.
    pub missing: Vec<String>,
    /// Names the image store holds that no item needs.
    pub orphans: Vec<String>,
    /// Image items that do not read as one.
    pub unreadable: Vec<String>,
}

impl ImageReport {
    pub fn holds(&self) -> bool {
        self.missing.is_empty() && self.orphans.is_empty() && self.unreadable.is_empty()
    }

    /// One line per problem, for `verify`'s output.
    pub fn lines(&self) -> Vec<String> {
        let missing = self.missing.iter().map(|name| {
            format!(
                "image-bytes-missing: {name}: an image item names it, the image store holds nothing"
            )
        });
        let orphans = self.orphans.iter().map(|name| {
            format!("orphan-image-bytes: {name}: no image item names it (--repair removes it)")
        });
        let unreadable = self
            .unreadable
            .iter()
            .map(|why| format!("unreadable-image-item: {why}"));
        missing.chain(orphans).chain(unreadable).collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImageScanError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Images(#[from] ImageStoreError),
}

/// Compares the image items of `store` (every tenant of a `multi` one) with the names `bytes`
/// holds.
pub async fn check_images(
    store: &Arc<dyn Store>,
    bytes: &dyn ImageStore,
) -> Result<ImageReport, ImageScanError> {
    let mut report = ImageReport::default();
    let mut needed = HashSet::new();
    let query = Query::cross_partition().of_type(IMAGE_TYPE);
    let mut pages = Pages::new(&**store, Container::Users, &query, 1000);
    while let Some(items) = pages.next().await? {
        for item in items {
            report.items += 1;
            let scope = match item.get(TENANT_FIELD).and_then(Value::as_str) {
                Some(tenant) => match TenantId::parse(tenant) {
                    Ok(tenant) => Scope::Tenant(tenant),
                    Err(why) => {
                        report.unreadable.push(format!("{item}: {why}"));
                        continue;
                    }
                },
                None => Scope::Blog,
            };
            match serde_json::from_value::<ImageItem>(item.clone()) {
                Ok(image) => needed.extend(image_keys(&scope, &image).iter().map(|k| k.name())),
                Err(why) => report.unreadable.push(format!("{item}: {why}")),
            }
        }
    }
    let held: HashSet<String> = bytes.list().await?.into_iter().collect();
    report.missing = needed.difference(&held).cloned().collect();
    report.orphans = held.difference(&needed).cloned().collect();
    report.missing.sort();
    report.orphans.sort();
    Ok(report)
}

/// Removes the orphans `report` found; how many.
pub async fn remove_orphans(
    bytes: &dyn ImageStore,
    report: &ImageReport,
) -> Result<usize, ImageStoreError> {
    for name in &report.orphans {
        bytes.delete(name).await?;
    }
    Ok(report.orphans.len())
}
