//! `import`: validate the whole export ([`Plan::validate`]), then load it ([`Plan::import`]):
//!
//! 1. **Sources.** Each file in turn, a chunk of lines at a time, grouped by partition into
//!    transactional batches (at most 100 operations and [`MAX_BATCH_BYTES`]), at most
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

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use backon::Retryable;
use futures::{StreamExt, stream};
use serde_json::Value;

use super::marker::{self, UnfinishedImport};
use super::validate::{self, Catalog, ImportedBlog, InputError, Invalid, Item, Line, Lines};
use super::{Kind, MANIFEST, Manifest, TransferProgress};
use crate::copies::{Report, Source};
use crate::domain::{Post, TenantId, is_a};
use crate::retry::Backoff;
use crate::store::{
    BatchOperation, Container, FilterOp, MAX_BATCH_OPERATIONS, PageRequest, PartitionKey, Query,
    Store, StoreError, StoreResult, Tenancy, tenant,
};
use crate::words::count;

/// Bytes of items in one batch at most: Cosmos DB refuses requests over 2 MiB; the rest is
/// room for the request's own envelope.
const MAX_BATCH_BYTES: usize = 3 << 19;
/// Lines parsed and grouped into batches together; bounded in bytes too (posts may be large).
const CHUNK_ITEMS: usize = 20_000;
const CHUNK_BYTES: usize = 16 << 20;
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
        let mut lines = Lines::open(&self.folder, kind, self.manifest.layout)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(
            std::iter::from_fn(move || lines.next()).filter_map(move |(number, line)| {
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
            let mut batches = Batches {
                lines: self.loaded_lines(kind)?,
                ready: VecDeque::new(),
                views: &mut *views,
                empty,
                container: kind.container(),
            };
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
                        let view = views.of(&loaded.into);
                        report.merge(derive(source, &view, documents, progress).await?);
                    }
                }
            }
            for (into, documents) in pending {
                if !documents.is_empty() {
                    report.merge(derive(source, &views.of(&into), documents, progress).await?);
                }
            }
        }
        progress.finish();
        Ok(report)
    }
}

/// An item on its way into the target.
struct Loaded {
    /// The target's blog (`None`: the store itself).
    into: Option<TenantId>,
    pk: PartitionKey,
    id: String,
    item: Value,
    /// Its size as serialised, near enough.
    bytes: usize,
}

/// The item as the target will hold it: counts recomputed from the export, the author's
/// username as the export's user has it (an erased author's items keep theirs: the
/// erasure removes them), and every field in the domain type's canonical form. With its
/// serialised size.
fn stored_form(item: Item, blog: &ImportedBlog) -> serde_json::Result<(Value, usize)> {
    let renamed = |user_username: &mut String, user_id| {
        if let Some(username) = blog.username(user_id) {
            username.clone_into(user_username);
        }
    };
    let value = match item {
        Item::User(user) => serde_json::to_value(user),
        Item::Erasure(tombstone) | Item::DeletedPost(tombstone) => serde_json::to_value(tombstone),
        Item::Post(mut post) => {
            let tally = blog.tally(&post.post_id);
            post.comment_count = tally.comments;
            post.like_count = tally.likes;
            renamed(&mut post.user_username, &post.user_id);
            serde_json::to_value(post)
        }
        Item::Comment(mut comment) => {
            renamed(&mut comment.user_username, &comment.user_id);
            serde_json::to_value(comment)
        }
        Item::Like(mut like) => {
            renamed(&mut like.user_username, &like.user_id);
            serde_json::to_value(like)
        }
    }?;
    let bytes = approximate_size(&value);
    Ok((value, bytes))
}

/// The serialised size of an item of the model, near enough to bound a batch: its strings'
/// lengths plus a generous allowance per field.
fn approximate_size(item: &Value) -> usize {
    match item {
        Value::Object(fields) => fields
            .iter()
            .map(|(name, value)| name.len() + 8 + approximate_size(value))
            .sum(),
        Value::String(text) => text.len() + text.len() / 8 + 2,
        Value::Array(values) => values.iter().map(approximate_size).sum::<usize>() + 2,
        _ => 24,
    }
}

/// The target store, and each tenant's view of it.
struct Views {
    store: Arc<dyn Store>,
    tenants: HashMap<TenantId, Arc<dyn Store>>,
}

impl Views {
    fn new(store: &Arc<dyn Store>) -> Self {
        Self {
            store: Arc::clone(store),
            tenants: HashMap::new(),
        }
    }

    fn of(&mut self, into: &Option<TenantId>) -> Arc<dyn Store> {
        match into {
            None => Arc::clone(&self.store),
            Some(tenant) => Arc::clone(
                self.tenants
                    .entry(tenant.clone())
                    .or_insert_with(|| tenant::scoped(&self.store, tenant)),
            ),
        }
    }
}

/// Items of one logical partition of one blog, written together.
struct Batch {
    store: Arc<dyn Store>,
    container: Container,
    pk: PartitionKey,
    items: Vec<(String, Value)>,
    /// The blog held no source item when the import began: none of these can be there.
    new: bool,
}

#[derive(Debug, Default, Clone, Copy)]
struct Written {
    written: u64,
    unchanged: u64,
}

/// The batches of a file's items, a chunk of lines at a time.
struct Batches<'a, I> {
    lines: I,
    ready: VecDeque<Batch>,
    views: &'a mut Views,
    empty: &'a HashSet<Option<TenantId>>,
    container: Container,
}

impl<I: Iterator<Item = anyhow::Result<Loaded>>> Batches<'_, I> {
    /// The next batch, reading the next chunk of lines when the last one is all handed out.
    fn next(&mut self) -> Option<anyhow::Result<Batch>> {
        if self.ready.is_empty() {
            let mut chunk = Vec::new();
            let mut bytes = 0;
            while chunk.len() < CHUNK_ITEMS && bytes < CHUNK_BYTES {
                match self.lines.next() {
                    Some(Ok(loaded)) => {
                        bytes += loaded.bytes;
                        chunk.push(loaded);
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => break,
                }
            }
            self.ready = batches(self.views, self.empty, self.container, chunk).into();
        }
        self.ready.pop_front().map(Ok)
    }
}

/// Groups a chunk's items by blog and partition, in order, and cuts each group into batches
/// of at most [`MAX_BATCH_OPERATIONS`] items and [`MAX_BATCH_BYTES`].
fn batches(
    views: &mut Views,
    empty: &HashSet<Option<TenantId>>,
    container: Container,
    chunk: Vec<Loaded>,
) -> Vec<Batch> {
    let mut groups: Vec<(Option<TenantId>, PartitionKey, Vec<Loaded>)> = Vec::new();
    let mut position: HashMap<(Option<TenantId>, String), usize> = HashMap::new();
    for loaded in chunk {
        let key = (loaded.into.clone(), loaded.pk.to_json_array());
        let at = *position.entry(key).or_insert_with(|| {
            groups.push((loaded.into.clone(), loaded.pk.clone(), Vec::new()));
            groups.len() - 1
        });
        groups[at].2.push(loaded);
    }
    let mut batches = Vec::new();
    for (into, pk, items) in groups {
        let store = views.of(&into);
        let new = empty.contains(&into);
        let mut batch: Vec<(String, Value)> = Vec::new();
        let mut bytes = 0;
        for loaded in items {
            let full = batch.len() >= MAX_BATCH_OPERATIONS
                || (!batch.is_empty() && bytes + loaded.bytes > MAX_BATCH_BYTES);
            if full {
                batches.push(Batch {
                    store: Arc::clone(&store),
                    container,
                    pk: pk.clone(),
                    items: std::mem::take(&mut batch),
                    new,
                });
                bytes = 0;
            }
            bytes += loaded.bytes;
            batch.push((loaded.id, loaded.item));
        }
        if !batch.is_empty() {
            batches.push(Batch {
                store,
                container,
                pk,
                items: batch,
                new,
            });
        }
    }
    batches
}

impl Batch {
    /// Reads which of the items the partition already holds as they are, and upserts the
    /// others in one transactional batch.
    async fn write(self) -> anyhow::Result<Written> {
        let present = if self.new {
            Vec::new()
        } else {
            self.present().await?
        };
        let present: HashMap<&str, &Value> = present
            .iter()
            .filter_map(|item| Some((item.get("id")?.as_str()?, item)))
            .collect();
        let operations: Vec<BatchOperation> = self
            .items
            .iter()
            .filter(|(id, item)| present.get(id.as_str()) != Some(&item))
            .map(|(_, item)| BatchOperation::Upsert { item: item.clone() })
            .collect();
        let written = operations.len() as u64;
        if !operations.is_empty() {
            retrying(|| {
                self.store
                    .execute_batch(self.container, &self.pk, operations.clone())
            })
            .await
            .with_context(|| self.failed("write"))?;
        }
        Ok(Written {
            written,
            unchanged: self.items.len() as u64 - written,
        })
    }

    /// The batch's items that the partition holds, as it holds them.
    async fn present(&self) -> anyhow::Result<Vec<Value>> {
        let ids: Vec<Value> = self
            .items
            .iter()
            .map(|(id, _)| Value::from(id.as_str()))
            .collect();
        let held = Query::in_partition(self.pk.clone()).filter("id", FilterOp::In, ids);
        let page = PageRequest::first(self.items.len() as u32);
        let present = retrying(|| self.store.query(self.container, &held, page.clone()))
            .await
            .with_context(|| self.failed("read"))?;
        Ok(present.items)
    }

    fn failed(&self, what: &str) -> String {
        format!(
            "cannot {what} {} items of {}/{}",
            self.items.len(),
            self.container.name(),
            self.pk.to_json_array()
        )
    }
}

/// Runs `operation` again while it fails for a reason that passes (throttled, unavailable),
/// with jittered exponential backoff, waiting at least what the store asked for
/// (`Retry-After` of a 429, which the Cosmos DB SDK has already honoured a few times before
/// giving up).
async fn retrying<T, F, Fut>(operation: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<T>>,
{
    let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10))
        .at_most(12)
        .builder();
    operation
        .retry(backoff)
        .when(StoreError::is_transient)
        .adjust(|error, next| next.map(|backoff| backoff.max(retry_after(error))))
        .notify(|error, wait| tracing::debug!(%error, ?wait, "import: retrying"))
        .await
}

/// How long the store asked to wait before the next request.
fn retry_after(error: &StoreError) -> Duration {
    match error {
        StoreError::Throttled {
            retry_after: Some(wait),
        } => *wait,
        StoreError::BatchOperationFailed { cause, .. } => retry_after(cause),
        _ => Duration::ZERO,
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

/// Runs the handler of `source` on `documents` of the blog `store`.
async fn derive(
    source: Source,
    store: &Arc<dyn Store>,
    documents: Vec<Value>,
    progress: &mut TransferProgress,
) -> anyhow::Result<Report> {
    let count = documents.len() as u64;
    // The handlers are idempotent: a retried page writes only what is still missing.
    let report = retrying(|| source.handle(store, &documents))
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

    #[test]
    fn a_throttled_batch_waits_what_the_store_asked() {
        let throttled = StoreError::Throttled {
            retry_after: Some(Duration::from_millis(700)),
        };
        assert_eq!(retry_after(&throttled), Duration::from_millis(700));
        let in_batch = StoreError::BatchOperationFailed {
            index: 3,
            cause: Box::new(throttled),
        };
        assert_eq!(retry_after(&in_batch), Duration::from_millis(700));
        assert_eq!(retry_after(&StoreError::NotFound), Duration::ZERO);
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
