//! The schedule as `OnPostChanged` keeps it: an entry for each scheduled post in the `feed`
//! partition `schedule` (see `blog::schedule`), none for any other post. Idempotent: the
//! entries are read and written only where they differ.
//!
//! In a `multi` store each tenant's schedule is in its own partition, so the publisher also
//! needs to know which tenants have one: the directory, one item in `leases` (which no tenant
//! view scopes) that lists every tenant that has scheduled a post. It only grows (a tenant
//! whose schedule is empty costs the publisher one query per pass), so adding to it is the
//! only write, with If-Match, and it never loses a tenant to a race.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use super::partition_write::PartitionWrite;
use super::shared::Report;
use crate::blog::{SCHEDULE_TYPE, ScheduleEntry, schedule_partition};
use crate::domain::{Post, PostId, TenantId};
use crate::store::{
    BatchOperation, Container, FilterOp, Pages, PartitionKey, Query, Store, StoreError,
    StoreResult, delete_if_present,
};

/// The id of the directory item in `leases` (and its partition key).
pub(crate) const DIRECTORY_ID: &str = "schedule.tenants";

/// Puts each of `posts` (their current versions) in the schedule or takes it out, as its
/// status says: one query of the schedule's partition for the entries of these posts, then
/// the entries that differ written as transactional batches: a batch of posts costs the
/// schedule one read, and one write when an entry changes. Returns the report, whose
/// `scheduled` counts the posts that have an entry, written now or before.
pub(super) async fn keep_schedule(store: &Arc<dyn Store>, posts: Vec<Post>) -> StoreResult<Report> {
    if posts.is_empty() {
        return Ok(Report::default());
    }
    let pk = schedule_partition();
    let stored = stored_entries(store, &posts).await?;
    let mut operations = Vec::new();
    let mut scheduled = 0;
    for post in &posts {
        let wanted = ScheduleEntry::of(post)
            .map(|entry| entry.to_item())
            .transpose()
            .map_err(|e| StoreError::BadRequest(e.to_string()))?;
        let stored = stored.get(post.id.as_str());
        let what = format!("schedule of post {}", post.id);
        scheduled += usize::from(wanted.is_some());
        match (wanted, stored) {
            (Some(wanted), Some(stored)) if same_entry(&wanted, stored) => {}
            (Some(item), _) => operations.push((what, BatchOperation::Upsert { item })),
            (None, Some(_)) => {
                let id = post.id.to_string();
                operations.push((what, BatchOperation::Delete { id, if_match: None }));
            }
            (None, None) => {}
        }
    }
    let write = PartitionWrite {
        container: Container::Feed,
        pk,
        operations,
    };
    let mut report = write.run(store).await?;
    report.scheduled += scheduled;
    Ok(report)
}

/// The schedule's entries of `posts`, by post id: one query of the schedule's partition.
async fn stored_entries(
    store: &Arc<dyn Store>,
    posts: &[Post],
) -> StoreResult<HashMap<String, Value>> {
    let ids: Vec<&str> = posts.iter().map(|post| post.id.as_str()).collect();
    let query = Query::in_partition(schedule_partition())
        .of_type(SCHEDULE_TYPE)
        .filter("id", FilterOp::In, Value::from(ids));
    let mut pages = Pages::new(&**store, Container::Feed, &query, 1_000);
    let mut entries = HashMap::new();
    while let Some(items) = pages.next().await? {
        for item in items {
            if let Some(id) = item.get("id").and_then(Value::as_str) {
                entries.insert(id.to_owned(), item.clone());
            }
        }
    }
    Ok(entries)
}

/// Whether a stored entry holds what is wanted (system properties aside).
fn same_entry(wanted: &Value, stored: &Value) -> bool {
    serde_json::from_value::<ScheduleEntry>(stored.clone()).ok()
        == serde_json::from_value::<ScheduleEntry>(wanted.clone()).ok()
}

/// Takes a post out of the schedule (deleted, or no longer scheduled); absent counts as done.
pub(crate) async fn remove_entry(store: &Arc<dyn Store>, post_id: &PostId) -> StoreResult<usize> {
    delete_if_present(
        &**store,
        Container::Feed,
        &schedule_partition(),
        post_id.as_str(),
    )
    .await
}

fn directory_key() -> PartitionKey {
    PartitionKey::single(DIRECTORY_ID)
}

/// The tenants of a `multi` store that have scheduled a post.
pub async fn scheduled_tenants(store: &dyn Store) -> StoreResult<BTreeSet<TenantId>> {
    let read = store
        .read_item(Container::Leases, &directory_key(), DIRECTORY_ID)
        .await?;
    Ok(read
        .map(|document| tenants_in(&document.item))
        .unwrap_or_default())
}

fn tenants_in(item: &Value) -> BTreeSet<TenantId> {
    item.get("tenants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|raw| TenantId::parse(raw).ok())
        .collect()
}

/// Adds `tenant` to the directory unless it is there: a read, and a write only the first time
/// (If-Match, re-read on a lost race).
pub async fn enlist_tenant(store: &dyn Store, tenant: &TenantId) -> StoreResult<()> {
    let pk = directory_key();
    loop {
        let read = store
            .read_item(Container::Leases, &pk, DIRECTORY_ID)
            .await?;
        let (mut tenants, etag) = match &read {
            Some(document) => (tenants_in(&document.item), Some(&document.etag)),
            None => (BTreeSet::new(), None),
        };
        if !tenants.insert(tenant.clone()) {
            return Ok(());
        }
        let names: Vec<&str> = tenants.iter().map(TenantId::as_str).collect();
        let item = json!({"id": DIRECTORY_ID, "tenants": names});
        let written = match etag {
            Some(etag) => {
                store
                    .replace_item(Container::Leases, &pk, item, Some(etag))
                    .await
            }
            None => store.create_item(Container::Leases, &pk, item).await,
        };
        match written {
            Ok(_) => return Ok(()),
            Err(StoreError::PreconditionFailed | StoreError::Conflict) => continue,
            Err(e) => return Err(e),
        }
    }
}
