//! Images in posts on the model: each image's item lives in its uploader's partition of
//! `users` (so a user's images are one query of one partition), its bytes in the image store.
//! Bytes are written before the item and removed after it, so an item always names bytes
//! that are there; what an interrupted upload or delete leaves is bytes without an item,
//! which `verify` reports and `verify --repair` removes.

use bytes::Bytes;

use super::paging::{decode_continuation, encode_continuation};
use super::storage::{from_item, to_item, user_partition};
use super::{Blog, ListRequest, PageSize};
use crate::domain::UserId;
use crate::error::{Error, Result};
use crate::images::{IMAGE_TYPE, ImageId, ImageItem, ImageKey, ImageRefusal, Images, Scope};
use crate::store::{Container, Page, PageRequest, Pages, Query, SortOrder, delete_if_present};

/// Every name of an image's bytes: the image and its renditions.
pub fn image_keys(scope: &Scope, item: &ImageItem) -> Vec<ImageKey> {
    std::iter::once(ImageKey::original(scope.clone(), item.id.clone()))
        .chain(
            item.renditions
                .iter()
                .map(|r| ImageKey::rendition(scope.clone(), item.id.clone(), r.width)),
        )
        .collect()
}

impl Blog {
    /// Stores an upload of the caller's: checked and re-encoded by `images`, within the
    /// caller's quota; its bytes under `scope`, its item in the caller's partition.
    pub async fn upload_image(
        &self,
        images: &Images,
        scope: &Scope,
        caller: &UserId,
        declared: Option<String>,
        upload: Bytes,
    ) -> Result<ImageItem> {
        self.registered(caller).await?;
        let prepared = images.prepare(declared, upload).await?;
        let kept = self.stored_image_bytes(caller).await?;
        let needed = kept + prepared.stored_bytes();
        if needed > images.quota_bytes() {
            return Err(ImageRefusal::QuotaExceeded {
                needed,
                quota: images.quota_bytes(),
            }
            .into());
        }
        let item = ImageItem::new(ImageId::generate(), caller.clone(), &prepared);
        let content_type = prepared.format.content_type();
        let store = images.bytes();
        for rendition in &prepared.renditions {
            let key = ImageKey::rendition(scope.clone(), item.id.clone(), rendition.width);
            store
                .put(&key.name(), rendition.bytes.clone(), content_type)
                .await?;
        }
        let original = ImageKey::original(scope.clone(), item.id.clone());
        store
            .put(&original.name(), prepared.bytes.clone(), content_type)
            .await?;
        let pk = user_partition(caller);
        if let Err(failed) = self
            .store
            .create_item(Container::Users, &pk, to_item(&item)?)
            .await
        {
            // Without its item the bytes are nobody's: removed now, or by `verify --repair`.
            for key in image_keys(scope, &item) {
                let _ = store.delete(&key.name()).await;
            }
            return Err(failed.into());
        }
        Ok(item)
    }

    /// The image item `id` of `owner`, if there is one.
    pub async fn image(&self, owner: &UserId, id: &ImageId) -> Result<Option<ImageItem>> {
        let pk = user_partition(owner);
        match self
            .store
            .read_item(Container::Users, &pk, id.as_str())
            .await?
        {
            Some(document) if is_image(&document.item) => Ok(Some(from_item(document.item)?)),
            _ => Ok(None),
        }
    }

    /// The caller's own images, newest first, a page at a time: one query of the caller's
    /// partition of `users`.
    pub async fn user_images(
        &self,
        caller: &UserId,
        user_id: &UserId,
        page: ListRequest<'_>,
    ) -> Result<Page<ImageItem>> {
        let ListRequest { size, continuation } = page;
        if caller != user_id {
            return Err(Error::Forbidden("only the owner may list a user's images"));
        }
        let list = format!("images:{user_id}");
        let store_token = continuation
            .map(|token| decode_continuation(&self.key, &list, token))
            .transpose()?;
        let query = Query::in_partition(user_partition(user_id))
            .of_type(IMAGE_TYPE)
            .order_by("creationDate", SortOrder::Descending);
        let page = self
            .store
            .query(
                Container::Users,
                &query,
                PageRequest {
                    max_items: size.get(),
                    continuation: store_token,
                },
            )
            .await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(from_item)
                .collect::<Result<_>>()?,
            continuation: page
                .continuation
                .map(|token| encode_continuation(&self.key, &list, &token)),
        })
    }

    /// Deletes the caller's own image `id`: its item, then its bytes.
    pub async fn delete_image(
        &self,
        images: &Images,
        scope: &Scope,
        caller: &UserId,
        id: &ImageId,
    ) -> Result<()> {
        let Some(item) = self.image(caller, id).await? else {
            // Another user's image is not told apart from a missing one.
            return Err(Error::not_found("image", id.as_str()));
        };
        self.remove_image(images, scope, &item).await
    }

    /// Erases every image of `user_id` (an account's erasure): items and bytes.
    pub async fn erase_images(
        &self,
        images: &Images,
        scope: &Scope,
        user_id: &UserId,
    ) -> Result<()> {
        loop {
            let page = self
                .user_images(user_id, user_id, ListRequest::first(PageSize::MAX))
                .await?;
            if page.items.is_empty() {
                return Ok(());
            }
            for item in &page.items {
                self.remove_image(images, scope, item).await?;
            }
        }
    }

    async fn remove_image(&self, images: &Images, scope: &Scope, item: &ImageItem) -> Result<()> {
        let pk = user_partition(&item.user_id);
        delete_if_present(&*self.store, Container::Users, &pk, item.id.as_str()).await?;
        for key in image_keys(scope, item) {
            images.bytes().delete(&key.name()).await?;
        }
        Ok(())
    }

    /// The bytes the caller's images take (renditions included).
    async fn stored_image_bytes(&self, caller: &UserId) -> Result<u64> {
        let query = Query::in_partition(user_partition(caller)).of_type(IMAGE_TYPE);
        let mut pages = Pages::new(&*self.store, Container::Users, &query, 100);
        let mut total = 0;
        while let Some(items) = pages.next().await? {
            total += items
                .iter()
                .filter_map(|item| item.get("storedBytes").and_then(serde_json::Value::as_u64))
                .sum::<u64>();
        }
        Ok(total)
    }
}

fn is_image(item: &serde_json::Value) -> bool {
    item.get("type").and_then(serde_json::Value::as_str) == Some(IMAGE_TYPE)
}
