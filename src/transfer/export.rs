//! `export`: one scan of `users` and one of `posts`, a page at a time, each item written to
//! the file of its kind as it comes; memory holds one page whatever the store's size.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use super::images::{ExportedImages, export_bytes};
use super::{FORMAT, FORMAT_VERSION, Kind, Manifest, TransferProgress};
use crate::domain::{TenantId, Timestamp, Tombstone, User};
use crate::images::{IMAGE_TYPE, ImageItem, ImageStore, Scope};
use crate::store::{Container, Pages, Query, Store, TENANT_FIELD, Tenancy, tenant};
use crate::words::count;

/// Items asked for per page (Cosmos DB's cap on a page).
const PAGE_SIZE: u32 = 1_000;
/// Write buffer of each file.
const BUFFER_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Export this tenant of a `multi` store alone, as a `single`-layout export.
    pub tenant: Option<TenantId>,
}

#[derive(Debug, Clone)]
pub struct ExportSummary {
    pub folder: PathBuf,
    pub manifest: Manifest,
    /// Items of `posts` of no known type, left out.
    pub unknown: u64,
    pub elapsed: Duration,
}

impl ExportSummary {
    /// What the command prints.
    pub fn lines(&self) -> Vec<String> {
        let counts = Kind::ALL
            .iter()
            .map(|kind| kind.count(self.manifest.count(*kind)))
            .collect::<Vec<_>>()
            .join(", ");
        let seconds = self.elapsed.as_secs_f64();
        let images = match self.manifest.image_bytes {
            0 => String::new(),
            bytes => format!(", {:.1} MiB of images", bytes as f64 / (1024.0 * 1024.0)),
        };
        let mut lines = vec![format!(
            "export: {} ({counts}{images}) to {} in {seconds:.1} s ({:.0} items/s), {} layout{}",
            count(self.manifest.total(), "item", "items"),
            self.folder.display(),
            self.manifest.total() as f64 / seconds.max(1e-9),
            self.manifest.layout,
            match &self.manifest.tenant {
                Some(tenant) => format!(" (tenant {tenant})"),
                None => String::new(),
            }
        )];
        if self.unknown > 0 {
            lines.push(format!(
                "export: left out {} of posts of no known type",
                count(self.unknown, "item", "items")
            ));
        }
        lines
    }
}

/// Writes the source items of `store` (or of one tenant of it) into `out`, which must be
/// empty or absent, and the bytes of its images, read from `images`. The manifest is written
/// last, once every file is on disk.
pub async fn export(
    store: &Arc<dyn Store>,
    images: &dyn ImageStore,
    out: &Path,
    options: &ExportOptions,
    progress: &mut TransferProgress,
) -> anyhow::Result<ExportSummary> {
    let started = Instant::now();
    let taken_at = Timestamp::now();
    let (source, layout) = match &options.tenant {
        None => (Arc::clone(store), store.tenancy()),
        Some(tenant) => {
            anyhow::ensure!(
                store.tenancy() == Tenancy::Multi,
                "--tenant picks a tenant of a multi store; this store is single"
            );
            // The tenant's view: prefix queries, items without their tenantId.
            (tenant::scoped(store, tenant), Tenancy::Single)
        }
    };
    prepare_folder(out)?;
    let mut files = Files::create(out)?;
    progress.start("export", None);
    // Users, erasure markers and images, not the post copies (derived).
    let users = Query::cross_partition().of_types(&[User::TYPE, Tombstone::TYPE, IMAGE_TYPE]);
    files
        .scan(&*source, Container::Users, &users, progress)
        .await?;
    // Every item of `posts` is a source item.
    files
        .scan(
            &*source,
            Container::Posts,
            &Query::cross_partition(),
            progress,
        )
        .await?;
    progress.finish();
    let counts = files.finish()?;
    // A blog's images are its tenant's in the store when one tenant is exported alone.
    let source_scope = |tenant: &Option<TenantId>| match &options.tenant {
        Some(exported) => Scope::Tenant(exported.clone()),
        None => Scope::of(tenant.as_ref()),
    };
    let image_bytes = export_bytes(images, &files.images, source_scope, out).await?;
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        version: FORMAT_VERSION,
        layout,
        tenant: options.tenant.clone(),
        taken_at,
        source: store.backend().to_owned(),
        counts,
        image_bytes,
    };
    write_manifest(out, &manifest)?;
    Ok(ExportSummary {
        folder: out.to_owned(),
        manifest,
        unknown: files.unknown,
        elapsed: started.elapsed(),
    })
}

/// Creates `out`, or checks that it is empty: an export never mixes with other files.
fn prepare_folder(out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut entries =
        std::fs::read_dir(out).with_context(|| format!("cannot read {}", out.display()))?;
    anyhow::ensure!(
        entries.next().is_none(),
        "{} is not empty: export into a new folder",
        out.display()
    );
    Ok(())
}

/// The open files of an export, one per kind.
struct Files {
    folder: PathBuf,
    writers: BTreeMap<Kind, BufWriter<File>>,
    counts: BTreeMap<Kind, u64>,
    unknown: u64,
    /// The image items written, whose bytes go beside them.
    images: ExportedImages,
}

impl Files {
    fn create(folder: &Path) -> anyhow::Result<Self> {
        let mut writers = BTreeMap::new();
        for kind in Kind::ALL {
            let path = folder.join(kind.file_name());
            let file =
                File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
            writers.insert(kind, BufWriter::with_capacity(BUFFER_BYTES, file));
        }
        Ok(Self {
            folder: folder.to_owned(),
            writers,
            counts: Kind::ALL.into_iter().map(|kind| (kind, 0)).collect(),
            unknown: 0,
            images: ExportedImages::default(),
        })
    }

    /// Every item of `container` matching `query`, each to the file of its kind.
    async fn scan(
        &mut self,
        store: &dyn Store,
        container: Container,
        query: &Query,
        progress: &mut TransferProgress,
    ) -> anyhow::Result<()> {
        let mut pages = Pages::new(store, container, query, PAGE_SIZE);
        while let Some(items) = pages
            .next()
            .await
            .with_context(|| format!("cannot read {}", container.name()))?
        {
            for item in &items {
                self.write(container, item)?;
            }
            progress.advance(items.len() as u64);
        }
        Ok(())
    }

    fn write(&mut self, container: Container, item: &Value) -> anyhow::Result<()> {
        let Some(kind) = Kind::of(container, item) else {
            self.unknown += 1;
            return Ok(());
        };
        let (Some(writer), Some(count)) = (self.writers.get_mut(&kind), self.counts.get_mut(&kind))
        else {
            return Ok(());
        };
        serde_json::to_writer(&mut *writer, item)?;
        writer.write_all(b"\n")?;
        *count += 1;
        if kind == Kind::Images {
            let tenant = match item.get(TENANT_FIELD).and_then(Value::as_str) {
                Some(raw) => Some(TenantId::parse(raw)?),
                None => None,
            };
            let image = serde_json::from_value::<ImageItem>(item.clone())
                .with_context(|| format!("an image item that does not read as one: {item}"))?;
            self.images.add(tenant, image);
        }
        Ok(())
    }

    /// Flushes every file to disk; the counts per kind.
    fn finish(&mut self) -> anyhow::Result<BTreeMap<Kind, u64>> {
        for (kind, writer) in &mut self.writers {
            let path = self.folder.join(kind.file_name());
            writer
                .flush()
                .and_then(|()| writer.get_ref().sync_all())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(self.counts.clone())
    }
}

/// Writes the manifest under a temporary name, then renames it: a folder with a manifest
/// holds a whole export.
fn write_manifest(folder: &Path, manifest: &Manifest) -> anyhow::Result<()> {
    let path = Manifest::path(folder);
    let partial = folder.join(format!("{}.partial", super::MANIFEST));
    let text = serde_json::to_string_pretty(manifest)?;
    let write = || -> std::io::Result<()> {
        let mut file = File::create(&partial)?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&partial, &path)?;
        // The rename itself is on disk once the folder is.
        File::open(folder)?.sync_all()
    };
    write().with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_the_tenant_and_agrees_in_number() {
        let tenant = TenantId::parse("contoso").ok();
        let counts = Kind::ALL
            .into_iter()
            .map(|kind| (kind, u64::from(kind == Kind::Users)))
            .collect();
        let summary = ExportSummary {
            folder: PathBuf::from("out"),
            manifest: Manifest {
                format: FORMAT.to_owned(),
                version: FORMAT_VERSION,
                layout: Tenancy::Single,
                tenant,
                taken_at: Timestamp::now(),
                source: "embedded".to_owned(),
                counts,
                image_bytes: 0,
            },
            unknown: 1,
            elapsed: Duration::from_secs(1),
        };
        let lines = summary.lines();
        assert!(
            lines[0].starts_with(
                "export: 1 item (1 user, 0 erasures, 0 images, 0 posts, 0 tombstones, 0 comments, 0 likes) to out"
            ),
            "{lines:?}"
        );
        assert!(
            lines[0].ends_with("single layout (tenant contoso)"),
            "{lines:?}"
        );
        assert_eq!(
            lines[1],
            "export: left out 1 item of posts of no known type"
        );
    }
}
