//! The images' bytes in an export, an import and a backup. Their items travel as the other
//! items do (`images.jsonl`); their bytes, the image and each of its renditions, are files
//! under [`IMAGES_DIR`] in the export's folder, each named as the image store names it
//! (`blog/{id}`, `blog/{id}.w480`, `tenants/{tenant}/{id}`) in the export's own layout, so
//! that a `single` export's are the blog's whatever store they came from.
//!
//! Bytes are written before items, as an upload writes them: an import cut off leaves bytes
//! without an item at worst (orphans, which `verify --repair` removes), never an item whose
//! image is missing.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use bytes::Bytes;

use crate::blog::images::image_keys;
use crate::domain::TenantId;
use crate::images::{ImageFormat, ImageItem, ImageKey, ImageStore, Scope};

/// The folder of an export that holds the images' bytes; beside a backup's file, the folder
/// that holds its images (where a store in that folder keeps them).
pub const IMAGES_DIR: &str = "images";

/// The image items of an export, by the blog they belong to in it (`None`: a `single`
/// export's).
#[derive(Debug, Default)]
pub(super) struct ExportedImages {
    pub by_blog: BTreeMap<Option<TenantId>, Vec<ImageItem>>,
}

impl ExportedImages {
    pub fn add(&mut self, tenant: Option<TenantId>, item: ImageItem) {
        self.by_blog.entry(tenant).or_default().push(item);
    }
}

/// Where the file of `key` is in an export's (or a backup's) images folder.
fn file_of(folder: &Path, key: &ImageKey) -> PathBuf {
    key.name()
        .split('/')
        .fold(folder.join(IMAGES_DIR), |path, segment| path.join(segment))
}

/// Writes the bytes of every image in `images` into the export in `folder`, read from
/// `store`: a blog's are under `source_scope(tenant)` there, and under the export's own
/// scope for the blog here. The files are synced before the manifest is written.
pub(super) async fn export_bytes(
    store: &dyn ImageStore,
    images: &ExportedImages,
    source_scope: impl Fn(&Option<TenantId>) -> Scope,
    folder: &Path,
) -> anyhow::Result<u64> {
    let mut written = 0;
    for (tenant, items) in &images.by_blog {
        let (from, to) = (source_scope(tenant), Scope::of(tenant.as_ref()));
        for item in items {
            for (source, exported) in image_keys(&from, item).iter().zip(image_keys(&to, item)) {
                let bytes = store
                    .get(&source.name())
                    .await
                    .with_context(|| format!("cannot read image {}", source.name()))?
                    .with_context(|| {
                        format!(
                            "image {} has no bytes in the image store ({}): run `verify`",
                            source.name(),
                            store.backend()
                        )
                    })?;
                write_synced(&file_of(folder, &exported), &bytes)?;
                written += bytes.len() as u64;
            }
        }
    }
    Ok(written)
}

fn write_synced(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::File::create(path)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    write().with_context(|| format!("cannot write {}", path.display()))
}

/// A file of an export that is not what its item says: its path in the export, and why.
pub(super) struct BadImageFile {
    pub file: String,
    pub reason: String,
}

/// Checks that the export in `folder` holds the bytes of each of its images, and that an
/// image's file is an image of the type its item says (an export is files anyone can edit:
/// nothing else may reach the image store through an import).
pub(super) fn check_bytes(folder: &Path, images: &ExportedImages) -> Vec<BadImageFile> {
    let mut errors = Vec::new();
    for (tenant, items) in &images.by_blog {
        let scope = Scope::of(tenant.as_ref());
        for item in items {
            for key in image_keys(&scope, item) {
                let path = file_of(folder, &key);
                let problem = match std::fs::read(&path) {
                    Err(e) => Some(format!("cannot read it: {e}")),
                    Ok(bytes) => match ImageFormat::sniff(&bytes) {
                        Some(format) if format.content_type() == item.content_type => None,
                        Some(format) => Some(format!(
                            "it is {}, but its item says {}",
                            format.content_type(),
                            item.content_type
                        )),
                        None => Some("it is not an image of a type the blog keeps".to_owned()),
                    },
                };
                if let Some(reason) = problem {
                    errors.push(BadImageFile {
                        file: format!("{IMAGES_DIR}/{}", key.name()),
                        reason: format!("image {} of user {}: {reason}", item.id, item.user_id),
                    });
                }
            }
        }
    }
    errors
}

/// Puts the bytes of the export's images in `folder` into `store`: a blog's images go to the
/// scope of the blog they are loaded into (`into(tenant)`; `None`: not loaded). The number of
/// files put.
pub(super) async fn import_bytes(
    store: &dyn ImageStore,
    images: &ExportedImages,
    into: impl Fn(&Option<TenantId>) -> Option<Scope>,
    folder: &Path,
) -> anyhow::Result<u64> {
    let mut put = 0;
    for (tenant, items) in &images.by_blog {
        let Some(target) = into(tenant) else {
            continue;
        };
        let exported = Scope::of(tenant.as_ref());
        for item in items {
            for (from, to) in image_keys(&exported, item)
                .iter()
                .zip(image_keys(&target, item))
            {
                let path = file_of(folder, from);
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                store
                    .put(&to.name(), Bytes::from(bytes), &item.content_type)
                    .await
                    .with_context(|| format!("cannot store image {}", to.name()))?;
                put += 1;
            }
        }
    }
    Ok(put)
}

/// Copies the image files of the store whose images are in `from` into `to` (a backup's
/// images folder): files are never changed once written, so a file present is whole, and
/// one already copied is left. Files of writes under way are not copied. How many were.
pub fn copy_image_files(from: &Path, to: &Path) -> anyhow::Result<u64> {
    let mut copied = 0;
    let entries = match std::fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", from.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", from.display()))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        if entry.file_type()?.is_dir() {
            copied += copy_image_files(&source, &target)?;
        } else if !target.exists() {
            std::fs::create_dir_all(to)
                .with_context(|| format!("cannot create {}", to.display()))?;
            // A link where the file system allows (no second copy of the bytes), else a copy.
            if std::fs::hard_link(&source, &target).is_err() {
                let partial = to.join(format!(".partial-{}", name.to_string_lossy()));
                std::fs::copy(&source, &partial)
                    .and_then(|_| std::fs::File::open(&partial)?.sync_all())
                    .and_then(|()| std::fs::rename(&partial, &target))
                    .with_context(|| format!("cannot copy {}", source.display()))?;
            }
            copied += 1;
        }
    }
    Ok(copied)
}
