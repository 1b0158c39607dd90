//! The storage contract: the slice of Cosmos DB's NoSQL API that the platform uses, so the
//! domain code runs unchanged on the embedded store (`embedded`, SQLite) and on Azure Cosmos DB
//! (`cosmos`). Items are JSON objects; every operation names its container and, except the
//! cross-partition queries, one logical partition.

pub mod charge;
pub mod cosmos;
pub mod embedded;
pub mod layer;
mod open;
mod partition_key;
mod query;
mod settings;
mod signal;
pub mod tenant;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

pub use open::{open, open_existing, open_read_only, stop_counting};
pub use partition_key::{PartitionKey, PartitionKeyError, PartitionKeyValue};
pub use query::{
    Filter, FilterOp, JsonPage, Page, PageRequest, PartitionVersion, Query, QueryScope, SortOrder,
};
pub use settings::StoreSettings;
pub use signal::ChangeSignal;

/// The data layout of a deployment, chosen once: the containers' partition keys depend on it
/// and cannot change after they exist.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Tenancy {
    /// One blog: the V3 model's keys (`/userId`, `/postId`, `/type`).
    #[default]
    Single,
    /// Many blogs on one account: hierarchical keys whose first level is `/tenantId`.
    Multi,
}

impl Tenancy {
    pub fn name(self) -> &'static str {
        match self {
            Tenancy::Single => "single",
            Tenancy::Multi => "multi",
        }
    }
}

impl std::fmt::Display for Tenancy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Operations in one transactional batch at most: Cosmos DB refuses more, so every backend
/// and every writer of batches keeps to it.
pub(crate) const MAX_BATCH_OPERATIONS: usize = 100;

/// The field that names an item's tenant in the `multi` layout (its first key level).
pub(crate) const TENANT_FIELD: &str = "tenantId";

/// The containers of the V3 model, the views the change feed keeps beside them (a tag's
/// posts, a month's posts), plus the lease container of the change-feed processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Container {
    Users,
    Posts,
    Feed,
    /// Short copies of published posts, one logical partition per tag (Q8).
    Tags,
    /// Short copies of published posts, one logical partition per month of publication
    /// (Q9), each with its count, and the index of the months and their counts.
    Archive,
    Leases,
}

impl Container {
    pub const ALL: [Container; 6] = [
        Container::Users,
        Container::Posts,
        Container::Feed,
        Container::Tags,
        Container::Archive,
        Container::Leases,
    ];

    /// Its place in [`Container::ALL`]: what tables of one thing per container index.
    pub fn index(self) -> usize {
        match self {
            Container::Users => 0,
            Container::Posts => 1,
            Container::Feed => 2,
            Container::Tags => 3,
            Container::Archive => 4,
            Container::Leases => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Container::Users => "users",
            Container::Posts => "posts",
            Container::Feed => "feed",
            Container::Tags => "tags",
            Container::Archive => "archive",
            Container::Leases => "leases",
        }
    }

    /// Partition key paths of the V3 model, the `single` layout: what the domain code sees,
    /// whatever the layout (a tenant's view of a `multi` store is a `single` one).
    pub fn partition_key_paths(self) -> &'static [&'static str] {
        match self {
            Container::Users => &["/userId"],
            Container::Posts => &["/postId"],
            Container::Feed => &["/type"],
            Container::Tags => &["/tag"],
            Container::Archive => &["/month"],
            Container::Leases => &["/id"],
        }
    }

    /// Partition key paths in `tenancy`, as Cosmos DB declares them (up to three for
    /// hierarchical keys).
    pub fn key_paths(self, tenancy: Tenancy) -> &'static [&'static str] {
        match (tenancy, self) {
            (Tenancy::Single, _) | (Tenancy::Multi, Container::Leases) => {
                self.partition_key_paths()
            }
            (Tenancy::Multi, Container::Users) => &["/tenantId", "/userId"],
            (Tenancy::Multi, Container::Posts) => &["/tenantId", "/postId"],
            (Tenancy::Multi, Container::Feed) => &["/tenantId", "/type"],
            (Tenancy::Multi, Container::Tags) => &["/tenantId", "/tag"],
            (Tenancy::Multi, Container::Archive) => &["/tenantId", "/month"],
        }
    }

    /// Whether items of this container may carry a `ttl` (tombstones of deleted items):
    /// time-to-live is on, with no default, in every container of the model.
    pub(crate) fn expires_items(self) -> bool {
        self != Container::Leases
    }

    /// The partition key of `item` in this container, read from the key paths.
    pub fn partition_key_of(self, item: &Value) -> Result<PartitionKey, StoreError> {
        self.partition_key_in(Tenancy::Single, item)
    }

    /// The partition key of `item` in this container of a `tenancy` store.
    pub fn partition_key_in(self, tenancy: Tenancy, item: &Value) -> StoreResult<PartitionKey> {
        PartitionKey::from_item(item, self.key_paths(tenancy))
            .map_err(|e| StoreError::BadRequest(format!("{}: {e}", self.name())))
    }

    /// The logical partition key of each item (as a JSON array text) in this container of a
    /// `tenancy` store; items without a valid key are left out.
    pub fn partition_keys_in<'a>(
        self,
        tenancy: Tenancy,
        items: impl Iterator<Item = &'a Value>,
    ) -> impl Iterator<Item = String> {
        items.filter_map(move |item| {
            self.partition_key_in(tenancy, item)
                .ok()
                .map(|pk| pk.to_json_array())
        })
    }
}

/// An entity tag: changes on every write of the item; the token of optimistic concurrency.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ETag(pub String);

/// An item as read, without system properties, and its current entity tag.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub item: Value,
    pub etag: ETag,
}

/// One operation of a transactional batch. All operations of a batch address the same
/// logical partition and either all take effect or none does.
#[derive(Debug, Clone)]
pub enum BatchOperation {
    Create {
        item: Value,
    },
    Upsert {
        item: Value,
    },
    Replace {
        item: Value,
        if_match: Option<ETag>,
    },
    /// `if_match`: only if the item is still the version of that etag (else the batch fails
    /// with [`StoreError::PreconditionFailed`] at this operation).
    Delete {
        id: String,
        if_match: Option<ETag>,
    },
}

/// A page of the change log of one container, in commit order, with the checkpoint that
/// resumes after it. Only the latest version of each item is delivered (like the Cosmos DB
/// "latest version" change feed); deletes are not delivered.
#[derive(Debug, Clone)]
pub struct ChangeBatch {
    pub items: Vec<Value>,
    pub checkpoint: Checkpoint,
}

/// Opaque position in a container's change log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint(pub String);

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("an item with this id already exists")]
    Conflict,
    #[error("the item changed since it was read (etag mismatch)")]
    PreconditionFailed,
    #[error("request rate too large")]
    Throttled { retry_after: Option<Duration> },
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("request refused by the store: {0}")]
    BadRequest(String),
    #[error("operation {index} of the transactional batch failed: {cause}")]
    BatchOperationFailed {
        index: usize,
        cause: Box<StoreError>,
    },
    #[error("store failure: {0}")]
    Internal(String),
}

impl StoreError {
    /// Failures that may go away on their own, so a change-feed batch is worth retrying.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Throttled { .. } | StoreError::Unavailable(_) => true,
            StoreError::PreconditionFailed => true,
            StoreError::BatchOperationFailed { cause, .. } => cause.is_transient(),
            _ => false,
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An item as stored JSON text, not parsed (see [`Store::query_json`]).
pub type RawItem = Box<serde_json::value::RawValue>;

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// A short name for logs ("embedded", "cosmos").
    fn backend(&self) -> &'static str;

    /// The layout of the containers. A tenant's view of a `multi` store
    /// ([`tenant::TenantStore`]) is `single`: the domain code never sees tenants.
    fn tenancy(&self) -> Tenancy {
        Tenancy::Single
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>>;

    /// [`Store::read_item`] as the item's stored JSON text, not parsed and without its etag,
    /// for a reader that hands the item on as it is (the API's point reads). Like the items
    /// of [`Store::query_json`], it may carry fields the model does not know (Cosmos DB's
    /// system properties, a `multi` store's tenant): a typed reader ignores them.
    ///
    /// Answered as [`Store::query_json`] answers, as a page of the item alone (none when it
    /// is not there) with no continuation; `known` as there: the version an earlier answer to
    /// the same read carried.
    async fn read_item_json(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
        known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage>;

    /// Fails with [`StoreError::Conflict`] if an item with the same id exists in the partition.
    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag>;

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag>;

    /// Fails with [`StoreError::NotFound`] if the item does not exist, and with
    /// [`StoreError::PreconditionFailed`] if `if_match` is given and is not the current etag.
    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag>;

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()>;

    /// Runs the operations atomically in one logical partition. On failure nothing is
    /// written and the error is [`StoreError::BatchOperationFailed`] naming the first failing
    /// operation. On success, the etag of each operation's item (`None` for deletes).
    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>>;

    /// Items matching `query`, without system properties, a page at a time.
    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>>;

    /// The same page as [`Store::query`], each item as the JSON text the store holds, for
    /// readers that deserialize the items into their own types: they skip building a
    /// document tree per item, the largest cost of a list. An item may carry fields that
    /// [`Store::query`] leaves out (a tenant's stamp in a tenant's view, system properties),
    /// which a typed reader ignores.
    ///
    /// `known`: the version an earlier answer to the same query and page carried. A store that
    /// keeps versions answers [`JsonPage::Unchanged`] when the partition has not changed since,
    /// without reading the page; one that keeps none (Cosmos DB) always reads it.
    async fn query_json(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
        known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage>;

    /// The next changes of `container` after `since` (from the beginning when `None`), at
    /// most `max_items`. Items carry their system properties (`_etag`, `_ts`, `_lsn`), as the
    /// Cosmos DB change feed delivers them.
    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch>;

    /// Makes the store version the pages of a partition from now on ([`JsonPage`]), if it
    /// can: whether it will. Versions cost the store a little on every write, so it keeps
    /// none unless a reader that keeps pages asks. Cosmos DB has no version of a logical
    /// partition.
    async fn keep_partition_versions(&self) -> StoreResult<bool> {
        Ok(false)
    }

    /// Whether a page read at `known` is still what the store holds, told without any call:
    /// nothing at all has been committed since, and none of its items has expired. A reader
    /// that kept the page hands it over at once, with no request and nothing to trace. On
    /// `false` the reader asks with the page's query, which may still answer
    /// [`JsonPage::Unchanged`]. A store that keeps no versions never tells.
    fn holds_unchanged(&self, known: &PartitionVersion) -> bool {
        let _ = known;
        false
    }

    /// Resolves when `container` may have new changes, or after `timeout`. Stores that
    /// cannot tell just wait the timeout, which makes the pump poll.
    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        let _ = container;
        tokio::time::sleep(timeout).await;
    }
}

/// Every item matching a query, one page at a time, following the continuation tokens:
/// `while let Some(items) = pages.next().await? { ... }`. For the scans that read a whole
/// result (the username fan-out, erasures, `rebuild`, `verify`).
pub struct Pages<'a> {
    store: &'a dyn Store,
    container: Container,
    query: &'a Query,
    max_items: u32,
    continuation: Option<String>,
    done: bool,
}

impl<'a> Pages<'a> {
    pub fn new(
        store: &'a dyn Store,
        container: Container,
        query: &'a Query,
        max_items: u32,
    ) -> Self {
        Self {
            store,
            container,
            query,
            max_items,
            continuation: None,
            done: false,
        }
    }

    /// The next page's items, or `None` after the last page.
    pub async fn next(&mut self) -> StoreResult<Option<Vec<Value>>> {
        if self.done {
            return Ok(None);
        }
        let request = PageRequest {
            max_items: self.max_items,
            continuation: self.continuation.take(),
        };
        let page = self
            .store
            .query(self.container, self.query, request)
            .await?;
        self.continuation = page.continuation;
        self.done = self.continuation.is_none();
        Ok(Some(page.items))
    }
}

/// Removes Cosmos DB system properties (`_rid`, `_self`, `_etag`, `_attachments`, `_ts`,
/// `_lsn`, ...) from an item: responses and copies carry only the item's own fields.
pub(crate) fn strip_system_properties(item: &mut Value) {
    if let Value::Object(fields) = item {
        fields.retain(|name, _| !name.starts_with('_'));
    }
}

/// Checks an item before it is written, as Cosmos DB does on every write (both stores check
/// it first so that both refuse the same items with the same error): a JSON object with a
/// non-empty string id, in the partition addressed. Strips system properties; returns the id.
pub(crate) fn checked_item(
    tenancy: Tenancy,
    container: Container,
    pk: &PartitionKey,
    item: &mut Value,
) -> StoreResult<String> {
    strip_system_properties(item);
    let id = match item.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => {
            return Err(StoreError::BadRequest(
                "an item needs a non-empty string id".into(),
            ));
        }
    };
    pk.check_item(item, container.key_paths(tenancy))
        .map_err(|e| StoreError::BadRequest(e.to_string()))?;
    Ok(id)
}

/// The text of `field` in the item `id` of `container` whose partition key is its own id (a
/// user, a lease): one point read; `None` when the item or the field is missing.
pub async fn read_text_field(
    store: &dyn Store,
    container: Container,
    id: &str,
    field: &str,
) -> StoreResult<Option<String>> {
    let found = store
        .read_item(container, &PartitionKey::single(id), id)
        .await?;
    Ok(found.and_then(|document| {
        document
            .item
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }))
}

/// Deletes the item `id`, if it is there: the count of items deleted (0 or 1). For the
/// cascades and clean-ups, where an item already gone is what was wanted.
pub async fn delete_if_present(
    store: &dyn Store,
    container: Container,
    pk: &PartitionKey,
    id: &str,
) -> StoreResult<usize> {
    match store.delete_item(container, pk, id).await {
        Ok(()) => Ok(1),
        Err(StoreError::NotFound) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Replaces the item `id` by what `rewrite` makes of it, on the condition (If-Match) that it
/// is still the version read; when another write came between (a like or a comment rewrites
/// a post's counts), reads it again and asks `rewrite` again, so neither write is lost.
/// `rewrite` answers the new item and what to say of it, or `None` to leave the item as it
/// is. `None` too when the item is missing, or deleted meanwhile.
pub async fn rewrite_item<T, Rewritten>(
    store: &dyn Store,
    container: Container,
    pk: &PartitionKey,
    id: &str,
    mut rewrite: impl FnMut(Value) -> Rewritten,
) -> StoreResult<Option<T>>
where
    Rewritten: Future<Output = StoreResult<Option<(Value, T)>>>,
{
    loop {
        let Some(current) = store.read_item(container, pk, id).await? else {
            return Ok(None);
        };
        let Some((item, outcome)) = rewrite(current.item).await? else {
            return Ok(None);
        };
        match store
            .replace_item(container, pk, item, Some(&current.etag))
            .await
        {
            Ok(_) => return Ok(Some(outcome)),
            Err(StoreError::PreconditionFailed) => continue,
            Err(StoreError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}
