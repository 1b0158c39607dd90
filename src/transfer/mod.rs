//! Taking the data along: `export` writes a store's source items to a folder, `import` loads
//! such a folder into any store (either backend, either layout, one tenant of a `multi`
//! store) and derives the copies, and `backup` copies a running embedded store (see
//! [`crate::store::embedded::backup`]).
//!
//! # The export format (version 1)
//!
//! A folder with one JSON Lines file per kind of *source* item, one item per line, exactly as
//! stored and without system properties, and a `manifest.json` written last (a folder
//! without it is an unfinished export):
//!
//! | file | items | container |
//! |---|---|---|
//! | `users.jsonl` | users (`type: "user"`) | `users` |
//! | `erasures.jsonl` | erasure markers of deleted accounts (`type: "tombstone"`) | `users` |
//! | `images.jsonl` | images in posts (`type: "image"`), their bytes under `images/` | `users` |
//! | `posts.jsonl` | posts, full content | `posts` |
//! | `tombstones.jsonl` | deleted posts (`type: "tombstone"`) | `posts` |
//! | `comments.jsonl` | comments | `posts` |
//! | `likes.jsonl` | likes | `posts` |
//!
//! The copies (post copies in `users`, the `feed`) are not exported: import derives them.
//! Items of a `multi` export carry their `tenantId`; a `single` export's (a `single` store,
//! or one tenant of a `multi` one) carry none.
//!
//! The bytes of each image, and of each of its renditions, are files under `images/`, named
//! as the image store names them (see [`images`]). An export without `images.jsonl` (taken
//! before images were kept) holds none.
//!
//! One file per kind, read in the order above, lets import validate in one pass holding only
//! the users and posts in memory: whatever a line names (an author, a post) was read before.

mod export;
mod images;
mod import;
mod marker;
mod progress;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use export::{ExportOptions, ExportSummary, export};
pub use images::IMAGES_DIR;
pub use import::{ImportOptions, ImportSummary, Plan};
pub use marker::{MARKER_ID, UnfinishedImport, unfinished_import};
pub use progress::TransferProgress;
pub use validate::{InputError, Invalid};

use crate::domain::{Comment, Like, Post, TenantId, Timestamp, Tombstone, User};
use crate::images::{IMAGE_TYPE, ImageStore};
use crate::store::{self, Container, Store, StoreSettings, Tenancy, embedded};

/// The `format` of every manifest: what the folder is.
pub const FORMAT: &str = "cosmos-blog-export";
/// The version of the format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";

/// The kinds of source item, one file each, in the order import reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    Users,
    Erasures,
    Images,
    Posts,
    Tombstones,
    Comments,
    Likes,
}

impl Kind {
    /// In the order import reads them: the items a line refers to come first.
    pub const ALL: [Kind; 7] = [
        Kind::Users,
        Kind::Erasures,
        Kind::Images,
        Kind::Posts,
        Kind::Tombstones,
        Kind::Comments,
        Kind::Likes,
    ];

    pub fn file_name(self) -> &'static str {
        match self {
            Kind::Users => "users.jsonl",
            Kind::Erasures => "erasures.jsonl",
            Kind::Images => "images.jsonl",
            Kind::Posts => "posts.jsonl",
            Kind::Tombstones => "tombstones.jsonl",
            Kind::Comments => "comments.jsonl",
            Kind::Likes => "likes.jsonl",
        }
    }

    pub fn container(self) -> Container {
        match self {
            Kind::Users | Kind::Erasures | Kind::Images => Container::Users,
            _ => Container::Posts,
        }
    }

    /// The `type` of this kind's items.
    pub fn item_type(self) -> &'static str {
        match self {
            Kind::Users => User::TYPE,
            Kind::Erasures | Kind::Tombstones => Tombstone::TYPE,
            Kind::Images => IMAGE_TYPE,
            Kind::Posts => Post::TYPE,
            Kind::Comments => Comment::TYPE,
            Kind::Likes => Like::TYPE,
        }
    }

    /// The kind of a source item of `container`, by its `type`; `None` for the copies and
    /// for what the model does not know.
    pub fn of(container: Container, item: &Value) -> Option<Kind> {
        let item_type = item.get("type").and_then(Value::as_str)?;
        Kind::ALL
            .into_iter()
            .find(|kind| kind.container() == container && kind.item_type() == item_type)
    }

    fn name(self) -> &'static str {
        &self.file_name()[..self.file_name().len() - ".jsonl".len()]
    }

    /// `n` items of this kind, in words ("1 comment", "2 erasures").
    pub fn count(self, n: u64) -> String {
        let name = self.name();
        crate::words::count(n, &name[..name.len() - 1], name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `manifest.json`: what the folder holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    pub version: u32,
    /// `multi`: every item carries its `tenantId`; `single`: none does.
    pub layout: Tenancy,
    /// The tenant of the `multi` store a `single` export was taken from, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantId>,
    /// When the export began. The scan is not a snapshot: items written while it ran may or
    /// may not be in it.
    pub taken_at: Timestamp,
    /// The backend exported ("embedded", "cosmos").
    pub source: String,
    /// Items per kind: the number of lines of each file.
    pub counts: BTreeMap<Kind, u64>,
    /// Bytes of the images' files (renditions included).
    #[serde(default)]
    pub image_bytes: u64,
}

impl Manifest {
    pub fn count(&self, kind: Kind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    fn path(folder: &Path) -> PathBuf {
        folder.join(MANIFEST)
    }
}

// ---- the commands --------------------------------------------------------------------------

fn parse_tenant(raw: &str) -> Result<TenantId, String> {
    TenantId::parse(raw).map_err(|e| e.to_string())
}

/// `cosmos-blog export`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExportArgs {
    /// Folder to write the export into (created if missing; it must be empty).
    #[arg(long)]
    pub out: PathBuf,
    /// In a `multi` store: export this tenant alone, as a `single`-layout export [default:
    /// every tenant, each item with its tenantId].
    #[arg(long, value_parser = parse_tenant)]
    pub tenant: Option<TenantId>,
}

/// `cosmos-blog import`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportArgs {
    /// Folder of an export (`cosmos-blog export --out`).
    #[arg(long)]
    pub from: PathBuf,
    /// The tenant to load: a `single` export goes into this tenant of a `multi` store; from a
    /// `multi` export only this tenant's items are loaded (into a `single` store, or the same
    /// tenant of a `multi` one).
    #[arg(long, value_parser = parse_tenant)]
    pub tenant: Option<TenantId>,
    /// Store requests in flight at once [default: 8 on Azure Cosmos DB, which throttles
    /// beyond the provisioned throughput; 64 on the embedded store, whose one writer commits
    /// concurrent writes together].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: Option<u16>,
    /// Load this export even onto a store that an import of another export left unfinished
    /// (refused otherwise). What that import wrote stays, and the `verify` that ends this one
    /// judges the result; finishing the other import first is the safe way.
    #[arg(long)]
    pub force: bool,
}

/// `cosmos-blog backup`.
#[derive(Debug, Clone, clap::Args)]
pub struct BackupArgs {
    /// The file to write: a complete embedded store (it must not exist yet).
    #[arg(long)]
    pub to: PathBuf,
}

/// Requests in flight on Azure Cosmos DB by default: the RU budget, not the client, is the
/// limit there.
const COSMOS_CONCURRENCY: usize = 8;
/// On the embedded store: enough writes waiting for its one writer to commit many together.
const EMBEDDED_CONCURRENCY: usize = 64;

/// `cosmos-blog export`: writes the export, a progress bar on a terminal, then what it wrote.
/// The images' bytes are read from `images`, the image store the server uses.
pub async fn run_export(
    settings: &StoreSettings,
    images: &dyn ImageStore,
    args: &ExportArgs,
) -> anyhow::Result<()> {
    let store = store::open_read_only(settings).await?;
    // Half a store exported looks like a whole one to the next import: refuse it.
    if let Some(unfinished) = unfinished_import(&store).await? {
        anyhow::bail!("{unfinished}; export refuses a store an import left half-loaded");
    }
    let options = ExportOptions {
        tenant: args.tenant.clone(),
    };
    let summary = export(
        &store,
        images,
        &args.out,
        &options,
        &mut TransferProgress::on_stderr(false),
    )
    .await?;
    for line in summary.lines() {
        crate::words::print_line(&line);
    }
    Ok(())
}

/// Problems printed, at most, when an export is refused.
const PROBLEMS_SHOWN: usize = 50;

/// `cosmos-blog import`: validates the whole export before it opens the store (so a refused
/// export leaves the store untouched, not even created), loads it, derives the copies, and
/// returns the store for `verify`. The images' bytes go to `images`, the image store the server
/// uses.
pub async fn run_import(
    settings: &StoreSettings,
    images: &dyn ImageStore,
    args: &ImportArgs,
) -> anyhow::Result<Arc<dyn Store>> {
    let concurrency = args
        .concurrency
        .map(usize::from)
        .unwrap_or(if settings.uses_cosmos() {
            COSMOS_CONCURRENCY
        } else {
            EMBEDDED_CONCURRENCY
        });
    let options = ImportOptions {
        tenant: args.tenant.clone(),
        concurrency,
        force: args.force,
    };
    let mut progress = TransferProgress::on_stderr(true);
    let plan = match Plan::validate(&args.from, settings.tenancy, &options, &mut progress) {
        Ok(plan) => plan,
        Err(invalid) => {
            for line in invalid.lines(PROBLEMS_SHOWN) {
                eprintln!("{line}");
            }
            anyhow::bail!("{invalid}; nothing was written");
        }
    };
    let store = store::open(settings).await?;
    // The images' bytes first: an import cut off leaves bytes without items, never the
    // reverse.
    let image_files = plan.import_image_bytes(images).await?;
    let summary = plan.import(&store, &mut progress).await?;
    if image_files > 0 {
        crate::words::print_line(&format!(
            "import: {} of images put in the image store",
            crate::words::count(image_files, "file", "files")
        ));
    }
    for line in summary.lines() {
        crate::words::print_line(&line);
    }
    Ok(store)
}

/// `cosmos-blog backup`: a consistent copy of the embedded store, taken while it serves.
pub fn run_backup(settings: &StoreSettings, args: &BackupArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        !settings.uses_cosmos(),
        "backup copies the embedded store; Azure Cosmos DB keeps its own backups (periodic or \
         continuous with point-in-time restore), and `export` writes its items to files"
    );
    let source = settings.embedded_path();
    // The images' files are copied before the store and again after it: a file is never
    // changed once written, so every image an item of the copy names is in one pass or the
    // other (one uploaded or deleted meanwhile may leave an orphan, which `verify --repair`
    // removes).
    let images_from = settings.data_dir.join(IMAGES_DIR);
    let images_to = args.to.parent().unwrap_or(Path::new(".")).join(IMAGES_DIR);
    anyhow::ensure!(
        !args.to.exists(),
        "{} exists: a backup is written to a new file",
        args.to.display()
    );
    let image_files_before = if images_from.exists() {
        anyhow::ensure!(
            !images_to.exists(),
            "{} exists: back up into a folder without images of another store",
            images_to.display()
        );
        images::copy_image_files(&images_from, &images_to)?
    } else {
        0
    };
    let bytes = embedded::backup(&source, &args.to)
        .with_context(|| format!("cannot back up {}", source.display()))?;
    let image_files = image_files_before + images::copy_image_files(&images_from, &images_to)?;
    if image_files > 0 {
        crate::words::print_line(&format!(
            "backup: {} of images copied to {}",
            crate::words::count(image_files, "file", "files"),
            images_to.display()
        ));
    }
    crate::words::print_line(&format!(
        "backup: {} ({:.1} MiB) is a copy of {}; to restore it, stop the server and put it in \
         place of {} (or serve its folder with --data-dir, named blog.sqlite3)",
        args.to.display(),
        bytes as f64 / (1024.0 * 1024.0),
        source.display(),
        source.display()
    ));
    Ok(())
}
