//! The embedded default: each image's bytes a file under `images/` in the embedded store's
//! folder. A file is written beside its final name and renamed into place once whole and on
//! disk, so a crash leaves a stray temporary file (never served, removed by
//! `verify --repair`) but never a half image under an image's name.

use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;

use super::store::{ImageStore, ImageStoreError};

/// Files of writes under way start with it; they are no image's.
const PARTIAL_PREFIX: &str = ".partial-";

pub struct FileImageStore {
    root: PathBuf,
}

impl FileImageStore {
    /// The store in `root` (created when first written).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Where the images of the embedded store in `data_dir` are kept.
    pub fn beside_embedded_store(data_dir: &Path) -> Self {
        Self::new(data_dir.join("images"))
    }

    fn path_of(&self, name: &str) -> Result<PathBuf, ImageStoreError> {
        let mut path = self.root.clone();
        for segment in name.split('/') {
            let plain = !segment.is_empty()
                && segment != "."
                && segment != ".."
                && (!segment.starts_with('.') || segment.starts_with(PARTIAL_PREFIX))
                && !segment.contains('\\');
            if !plain {
                return Err(ImageStoreError(format!("not an image name: {name:?}")));
            }
            path.push(segment);
        }
        Ok(path)
    }
}

fn failed(what: &str, path: &Path, error: std::io::Error) -> ImageStoreError {
    ImageStoreError(format!("cannot {what} {}: {error}", path.display()))
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ImageStoreError> + Send + 'static,
) -> Result<T, ImageStoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ImageStoreError(format!("file task failed: {e}")))?
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ImageStoreError> {
    let dir = path
        .parent()
        .ok_or_else(|| ImageStoreError("an image file has a folder".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| failed("create", dir, e))?;
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("image");
    let partial = dir.join(format!(
        "{PARTIAL_PREFIX}{file_name}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let written = (|| {
        let mut file = std::fs::File::create(&partial)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&partial, path)?;
        // The rename itself is on disk once the folder is.
        std::fs::File::open(dir)?.sync_all()
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        failed("write", path, e)
    })
}

fn list_files(root: &Path, prefix: &str, names: &mut Vec<String>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let full = format!("{prefix}{name}");
        if entry.file_type()?.is_dir() {
            list_files(&entry.path(), &format!("{full}/"), names)?;
        } else {
            names.push(full);
        }
    }
    Ok(())
}

#[async_trait]
impl ImageStore for FileImageStore {
    fn backend(&self) -> &'static str {
        "files"
    }

    async fn put(&self, name: &str, bytes: Bytes, _: &str) -> Result<(), ImageStoreError> {
        let path = self.path_of(name)?;
        blocking(move || write_atomically(&path, &bytes)).await
    }

    async fn get(&self, name: &str) -> Result<Option<Bytes>, ImageStoreError> {
        let path = self.path_of(name)?;
        blocking(move || match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(Bytes::from(bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(failed("read", &path, e)),
        })
        .await
    }

    async fn delete(&self, name: &str) -> Result<(), ImageStoreError> {
        let path = self.path_of(name)?;
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(failed("delete", &path, e)),
        })
        .await
    }

    /// Every file, the partial ones of writes under way (or cut off by a crash) among them:
    /// they are named by no image, and `verify` counts them as orphans.
    async fn list(&self) -> Result<Vec<String>, ImageStoreError> {
        let root = self.root.clone();
        blocking(move || {
            let mut names = Vec::new();
            list_files(&root, "", &mut names).map_err(|e| failed("list", &root, e))?;
            Ok(names)
        })
        .await
    }
}
