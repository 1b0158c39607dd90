//! `import`: validate the whole export ([`Plan::validate`]), then load it ([`Plan::import`]):
//!
//! 1. **Sources.** Each file in turn, a chunk of lines at a time, grouped by partition into
//!    transactional batches (at most 100 operations and [`batches::MAX_BATCH_BYTES`]), at most
//!    `concurrency` batches in flight. A batch first reads which of its items the target
//!    already holds (one query by id in the partition) and upserts only the others, so a
//!    second run, or one after a kill, writes nothing that is already there. Into a blog
//!    that held no source item when the import began, that read is skipped: nothing loaded
//!    can be there but what the import itself writes, and validation refused duplicates. Each item is
//!    written as the platform would hold it: its counts recomputed from the export's comments
//!    and likes, its `userUsername` the author's username in the export. Transient failures
//!    (a 429 the SDK gave up on, an unreachable store) are retried with backoff, waiting at
//!    least the `Retry-After` the store asked for.
//! 2. **Copies.** The change-feed handlers run over the imported users, erasure markers,
//!    posts and tombstones, a page at a time per blog, as `rebuild` runs them over a whole
//!    store: post copies in `users` and `feed`, usernames, deletes and erasures carried out.
//!    Only what was imported is visited, and the tenants come from the export: no scan of
//!    the store looks for them.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, stream};
use serde_json::Value;

mod batches;

use super::images::import_bytes;
use super::marker::{self, UnfinishedImport};
use super::validate::{self, Catalog, ImportedBlog, InputError, Invalid, Line, Lines};
use super::{Kind, MANIFEST, Manifest, TransferProgress};
use crate::copies::{Report, Source};
use crate::domain::{Post, TenantId, is_a};
use crate::images::{ImageStore, Scope};
use crate::store::{Container, PageRequest, Query, Store, Tenancy};
use crate::words::count;
use batches::{Batches, Loaded, Views, retrying, stored_form};

/// What deriving the copies counts: the users, erasure markers, posts and deleted posts
/// whose copies are made.
const SOURCES: (&str, &str) = ("source", "sources");
/// Documents per handler call while deriving the copies (as `rebuild` reads them).
const DERIVE_PAGE: usize = 500;

#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The tenant to load (see `cosmos-blog import --help`).
    pub tenant: Option<TenantId>,
    /// Batches in flight at once.
    pub concurrency: usize,
    /// Load it even onto a store marked by an unfinished import of another export (what
    /// that import wrote stays; `verify` judges the result).
    pub force: bool,
}

/// Where the lines of an export go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Routing {
    /// From a `multi` export, only this tenant's lines are loaded.
    keep: Option<TenantId>,
    into: Destination,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Destination {
    /// The store as it is (`single`).
    Store,
    /// This tenant of a `multi` store.
    Tenant(TenantId),
    /// Each line's own tenant of a `multi` store.
    OwnTenant,
}

impl Routing {
    /// The routing for an export of layout `export` into a store of layout `target`, or why
    /// the combination is refused.
    fn new(export: Tenancy, target: Tenancy, tenant: Option<TenantId>) -> Result<Self, String> {
        use Tenancy::{Multi, Single};
        match (export, target, tenant) {
            (Single, Single, None) => Ok(Self {
                keep: None,
                into: Destination::Store,
            }),
            (Single, Single, Some(_)) => Err(
                "--tenant picks a tenant of a multi-layout export or of a multi store; this \
                 export and the store are both single"
                    .into(),
            ),
            (Single, Multi, Some(tenant)) => Ok(Self {
                keep: None,
                into: Destination::Tenant(tenant),
            }),
            (Single, Multi, None) => Err(
                "a single-layout export goes into one tenant of a multi store: name it with \
                 --tenant"
                    .into(),
            ),
            (Multi, Single, Some(tenant)) => Ok(Self {
                keep: Some(tenant),
                into: Destination::Store,
            }),
            (Multi, Single, None) => Err(
                "a multi-layout export holds many blogs and the store holds one: pick the \
                 tenant to load with --tenant"
                    .into(),
            ),
            (Multi, Multi, Some(tenant)) => Ok(Self {
                keep: Some(tenant.clone()),
                into: Destination::Tenant(tenant),
            }),
            (Multi, Multi, None) => Ok(Self {
                keep: None,
                into: Destination::OwnTenant,
            }),
        }
    }

    /// The blog of the target a line of `tenant` goes to (`None`: the store itself), or
    /// `None` when the line is not loaded.
    fn route(&self, tenant: &Option<TenantId>) -> Option<Option<TenantId>> {
        if self.keep.is_some() && &self.keep != tenant {
            return None;
        }
        Some(match &self.into {
            Destination::Store => None,
            Destination::Tenant(target) => Some(target.clone()),
            Destination::OwnTenant => tenant.clone(),
        })
    }
}

/// A validated export, ready to load into a store of the layout it was validated for.
pub struct Plan {
    folder: PathBuf,
    manifest: Manifest,
    catalog: Catalog,
    routing: Routing,
    target: Tenancy,
    concurrency: usize,
    force: bool,
    /// The mark this import leaves in the store until it ends.
    marker: UnfinishedImport,
}

impl Plan {
    /// Reads and checks the whole export in `folder` for a store of layout `target`, writing
    /// nothing anywhere.
    pub fn validate(
        folder: &Path,
        target: Tenancy,
        options: &ImportOptions,
        progress: &mut TransferProgress,
    ) -> Result<Plan, Invalid> {
        let manifest = validate::read_manifest(folder)?;
        let refuse = |reason: String| {
            Invalid::one(
                folder,
                InputError {
                    file: MANIFEST.to_owned(),
                    line: None,
                    reason,
                },
            )
        };
        let routing = Routing::new(manifest.layout, target, options.tenant.clone())
            .map_err(|why| refuse(format!("layout {}: {why}", manifest.layout)))?;
        let catalog = validate::validate(folder, &manifest, progress)?;
        if let Some(tenant) = &routing.keep
            && catalog.blog(&Some(tenant.clone())).is_none()
        {
            return Err(refuse(format!(
                "tenant {:?} holds nothing in this export",
                tenant.as_str()
            )));
        }
        Ok(Plan {
            folder: folder.to_owned(),
            manifest,
            catalog,
            routing,
            target,
            concurrency: options.concurrency.max(1),
            force: options.force,
            marker: UnfinishedImport::begin(
                validate::manifest_digest(folder)?,
                folder,
                options.tenant.clone(),
            ),
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Puts the bytes of the images loaded into `images`, the target's image store: each
    /// blog's under the scope of the blog it goes to. Run before [`Plan::import`], so that no
    /// item is ever without its image. The number of files put.
    pub async fn import_image_bytes(&self, images: &dyn ImageStore) -> anyhow::Result<u64> {
        let into = |tenant: &Option<TenantId>| {
            self.routing
                .route(tenant)
                .map(|into| Scope::of(into.as_ref()))
        };
        import_bytes(images, &self.catalog.images, into, &self.folder).await
    }

    /// The blogs of the export that are loaded, each with where it goes.
    fn loaded(&self) -> impl Iterator<Item = (&Option<TenantId>, &ImportedBlog)> {
        self.catalog
            .blogs
            .iter()
            .filter(|(tenant, _)| self.routing.route(tenant).is_some())
    }

    /// Loads the export into `store` and derives the copies.
    pub async fn import(
        &self,
        store: &Arc<dyn Store>,
        progress: &mut TransferProgress,
    ) -> anyhow::Result<ImportSummary> {
        anyhow::ensure!(
            store.tenancy() == self.target,
            "the export was validated for a {} store, not a {} one",
            self.target,
            store.tenancy()
        );
        self.mark(store).await?;
        let mut views = Views::new(store);
        let started = Instant::now();
        let empty = self.empty_blogs(&mut views).await?;
        let mut summary = ImportSummary {
            read: self.manifest.total(),
            loaded: self.loaded().map(|(_, blog)| blog.loaded()).sum(),
            left_over: self.loaded().map(|(_, blog)| blog.left_over).sum(),
            blogs: self.loaded().count(),
            sources: self.sources(),
            ..ImportSummary::default()
        };
        self.write_sources(&mut views, &empty, &mut summary, progress)
            .await?;
        summary.writing = started.elapsed();
        let started = Instant::now();
        summary.copies = self.derive_copies(&mut views, &empty, progress).await?;
        summary.deriving = started.elapsed();
        // The last write is done: the store is whole again.
        marker::unmark(store).await?;
        Ok(summary)
    }

    /// Marks the store before the first write; an unfinished import of the same export is
    /// finished by this one, one of another export is refused unless forced.
    async fn mark(&self, store: &Arc<dyn Store>) -> anyhow::Result<()> {
        match marker::unfinished_import(store).await? {
            Some(earlier) if earlier.same_import(&self.marker) => {
                tracing::info!(
                    "import: finishing the import of this export begun at {}",
                    earlier.started_at
                );
                Ok(())
            }
            Some(earlier) if !self.force => anyhow::bail!(
                "{earlier}; this is another export ({}{}): finish that one first, or load \
                 this one over it with --force",
                self.marker.export,
                match &self.marker.tenant {
                    Some(tenant) => format!(", tenant {tenant}"),
                    None => String::new(),
                }
            ),
            _ => marker::mark(store, &self.marker).await,
        }
    }

    /// The sources whose copies are derived: users, erasure markers, posts and deleted posts
    /// of the blogs loaded.
    fn sources(&self) -> u64 {
        self.loaded()
            .map(|(_, blog)| {
                blog.users.len() + blog.erased.len() + blog.posts.len() + blog.deleted.len()
            })
            .sum::<usize>() as u64
    }

    /// The lines of `kind` that are loaded, each with the blog it goes to and the item as
    /// the target will hold it.
    fn loaded_lines(
        &self,
        kind: Kind,
    ) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Loaded>> + '_> {
        let mut lines = match validate::absent_and_empty(&self.folder, &self.manifest, kind) {
            true => None,
            false => Some(
                Lines::open(&self.folder, kind, self.manifest.layout)
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
            ),
        };
        Ok(
            std::iter::from_fn(move || lines.as_mut()?.next()).filter_map(move |(number, line)| {
                let loaded = line
                    .map_err(|why| {
                        anyhow::anyhow!(
                            "{}:{number}: {why} (the export changed since it was validated)",
                            kind.file_name()
                        )
                    })
                    .and_then(|line| self.loaded_item(kind, line));
                loaded.transpose()
            }),
        )
    }

    fn loaded_item(&self, kind: Kind, line: Line) -> anyhow::Result<Option<Loaded>> {
        let Some(into) = self.routing.route(&line.tenant) else {
            return Ok(None);
        };
        let blog = self
            .catalog
            .blog(&line.tenant)
            .context("the export changed since it was validated")?;
        if blog.is_left_over(&line.item) {
            return Ok(None);
        }
        let (item, bytes) = stored_form(line.item, blog)?;
        let pk = kind.container().partition_key_of(&item)?;
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(Some(Loaded {
            into,
            pk,
            id,
            item,
            bytes,
        }))
    }

    /// The blogs of the target, among those loaded into, that hold no source item.
    async fn empty_blogs(&self, views: &mut Views) -> anyhow::Result<HashSet<Option<TenantId>>> {
        let destinations: BTreeSet<Option<TenantId>> = self
            .loaded()
            .filter_map(|(tenant, _)| self.routing.route(tenant))
            .collect();
        let mut empty = HashSet::new();
        for into in destinations {
            let store = views.of(&into);
            let mut holds = false;
            for container in [Container::Users, Container::Posts] {
                let any = Query::cross_partition();
                let page = retrying(|| store.query(container, &any, PageRequest::first(1)))
                    .await
                    .with_context(|| format!("cannot read {}", container.name()))?;
                holds |= !page.items.is_empty();
            }
            if !holds {
                empty.insert(into);
            }
        }
        Ok(empty)
    }

    async fn write_sources(
        &self,
        views: &mut Views,
        empty: &HashSet<Option<TenantId>>,
        summary: &mut ImportSummary,
        progress: &mut TransferProgress,
    ) -> anyhow::Result<()> {
        progress.start("import: writing", Some(summary.loaded));
        for kind in Kind::ALL {
            let lines = self.loaded_lines(kind)?;
            let mut batches = Batches::new(lines, &mut *views, empty, kind.container());
            // The next chunk is read and grouped while the batches before it are written:
            // the store's writes go on meanwhile, their answers wait for the next poll.
            let mut done = stream::iter(std::iter::from_fn(|| batches.next()))
                .map(|batch| async move { batch?.write().await })
                .buffer_unordered(self.concurrency);
            while let Some(result) = done.next().await {
                let written = result?;
                summary.written += written.written;
                summary.unchanged += written.unchanged;
                progress.advance(written.written + written.unchanged);
            }
        }
        progress.finish();
        Ok(())
    }

    /// Runs `OnUserChanged` over the loaded users and erasure markers, then `OnPostChanged`
    /// over the loaded posts and tombstones, [`DERIVE_PAGE`] documents per call and blog.
    /// The users of a blog that was `empty` are left out: every item there that names them
    /// was written by this import, with their username already, so their rename fan-out (a
    /// query across the blog per user) would find nothing.
    async fn derive_copies(
        &self,
        views: &mut Views,
        empty: &HashSet<Option<TenantId>>,
        progress: &mut TransferProgress,
    ) -> anyhow::Result<Report> {
        progress.start_counting("import: deriving the copies", Some(self.sources()), SOURCES);
        let mut report = Report::default();
        for (kinds, source) in [
            ([Kind::Users, Kind::Erasures], Source::Users),
            ([Kind::Posts, Kind::Tombstones], Source::Posts),
        ] {
            let mut pending: HashMap<Option<TenantId>, Vec<Value>> = HashMap::new();
            for kind in kinds {
                for loaded in self.loaded_lines(kind)? {
                    let loaded = loaded?;
                    if kind == Kind::Users && empty.contains(&loaded.into) {
                        progress.advance(1);
                        continue;
                    }
                    let documents = pending.entry(loaded.into.clone()).or_default();
                    documents.push(handed_to(source, loaded.item));
                    if documents.len() >= DERIVE_PAGE {
                        let documents = std::mem::take(documents);
                        let blog = (&views.of(&loaded.into), loaded.into.as_ref());
                        report.merge(derive(source, blog, documents, progress).await?);
                    }
                }
            }
            for (into, documents) in pending {
                if !documents.is_empty() {
                    let blog = (&views.of(&into), into.as_ref());
                    report.merge(derive(source, blog, documents, progress).await?);
                }
            }
        }
        progress.finish();
        Ok(report)
    }
}

/// What the handler of `source` is given of a loaded item. `OnPostChanged` reads each post's
/// current version from the store, so a post travels in short form, which bounds what waits
/// in memory.
fn handed_to(source: Source, item: Value) -> Value {
    if source != Source::Posts || !is_a::<Post>(&item) {
        return item;
    }
    match serde_json::from_value::<Post>(item.clone()) {
        Ok(post) => serde_json::to_value(post.short()).unwrap_or(item),
        Err(_) => item,
    }
}

/// Runs the handler of `source` on `documents` of a blog: its store, and its tenant in `multi`.
async fn derive(
    source: Source,
    (store, tenant): (&Arc<dyn Store>, Option<&TenantId>),
    documents: Vec<Value>,
    progress: &mut TransferProgress,
) -> anyhow::Result<Report> {
    let count = documents.len() as u64;
    // The handlers are idempotent: a retried page writes only what is still missing.
    let report = retrying(|| source.handle_blog(store, tenant, &documents))
        .await
        .context("cannot derive the copies")?;
    progress.advance(count);
    Ok(report)
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportSummary {
    /// Items of the export.
    pub read: u64,
    /// Items of the blogs loaded (all of them, or one tenant's).
    pub loaded: u64,
    /// Comments and likes of deleted posts in those blogs, not loaded (the delete removes
    /// them).
    pub left_over: u64,
    /// Blogs loaded (1, or the tenants of a `multi` export).
    pub blogs: usize,
    /// Items written: missing in the target, or different there.
    pub written: u64,
    /// Items the target already held as they are.
    pub unchanged: u64,
    /// Users, erasure markers, posts and deleted posts whose copies were derived (what the
    /// progress of that phase counts).
    pub sources: u64,
    /// The handlers' work: copies written (post copies, feed, usernames, deletes).
    pub copies: Report,
    pub writing: Duration,
    pub deriving: Duration,
}

impl ImportSummary {
    /// What the command prints.
    pub fn lines(&self) -> Vec<String> {
        let rate = |items: u64, took: Duration| items as f64 / took.as_secs_f64().max(1e-9);
        let mut lines = vec![
            format!(
                "import: {} read, {} loaded into {}: {} written, {} unchanged ({:.1} s, {:.0} items/s)",
                count(self.read, "item", "items"),
                self.loaded,
                count(self.blogs as u64, "blog", "blogs"),
                self.written,
                self.unchanged,
                self.writing.as_secs_f64(),
                rate(self.loaded, self.writing)
            ),
            format!(
                "import: copies derived from {}: {} ({:.1} s)",
                count(self.sources, "source", "sources"),
                count(self.copies.written as u64, "copy written", "copies written"),
                self.deriving.as_secs_f64()
            ),
        ];
        if self.left_over > 0 {
            lines.push(format!(
                "import: left out {} of deleted posts",
                count(self.left_over, "comment or like", "comments and likes")
            ));
        }
        lines.extend(
            self.copies
                .skipped
                .iter()
                .map(|why| format!("import: skipped {why}")),
        );
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_layout_pair_loads_or_is_refused() {
        let t = || TenantId::parse("t").ok();
        use Tenancy::{Multi, Single};
        assert!(Routing::new(Single, Single, t()).is_err());
        assert!(Routing::new(Single, Multi, None).is_err());
        assert!(Routing::new(Multi, Single, None).is_err());
        let into_tenant = Routing::new(Single, Multi, t()).unwrap();
        assert_eq!(into_tenant.route(&None), Some(t()));
        let pick = Routing::new(Multi, Single, t()).unwrap();
        assert_eq!(pick.route(&t()), Some(None));
        assert_eq!(pick.route(&TenantId::parse("u").ok()), None);
        let all = Routing::new(Multi, Multi, None).unwrap();
        assert_eq!(all.route(&t()), Some(t()));
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    #[test]
    fn the_summary_counts_in_the_units_of_the_progress_and_agrees_in_number() {
        let summary = ImportSummary {
            read: 1,
            loaded: 1,
            left_over: 1,
            blogs: 1,
            written: 1,
            sources: 14,
            copies: Report {
                processed: 8,
                written: 1,
                ..Report::default()
            },
            ..ImportSummary::default()
        };
        let lines = summary.lines();
        assert!(
            lines[0].starts_with("import: 1 item read, 1 loaded into 1 blog: 1 written"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("import: copies derived from 14 sources: 1 copy written ("),
            "the sources the progress counted, not the handlers' visits: {lines:?}"
        );
        assert_eq!(
            lines[2],
            "import: left out 1 comment or like of deleted posts"
        );
    }
}
