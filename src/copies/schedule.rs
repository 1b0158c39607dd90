//! The schedule as `OnPostChanged` keeps it: an entry for each scheduled post in the `feed`
//! partition `schedule` (see `blog::schedule`), none for any other post. Idempotent: each
//! entry is read and written only when it differs.
//!
//! In a `multi` store each tenant's schedule is in its own partition, so the publisher also
//! needs to know which tenants have one: the directory, one item in `leases` (which no tenant
//! view scopes) that lists every tenant that has scheduled a post. It only grows (a tenant
//! whose schedule is empty costs the publisher one query per pass), so adding to it is the
//! only write, with If-Match, and it never loses a tenant to a race.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::{StreamExt, stream};
use serde_json::{Value, json};

use super::shared::{HANDLER_CONCURRENCY, Report, settle};
use crate::blog::{ScheduleEntry, schedule_partition};
use crate::domain::{Post, PostId, TenantId};
use crate::store::{Container, PartitionKey, Store, StoreError, StoreResult};

/// The id of the directory item in `leases`.
const DIRECTORY_ID: &str = "schedule.tenants";

/// Puts each of `posts` (their current versions) in the schedule or takes it out, as its
/// status says. Returns the report, whose `scheduled` counts the entries written.
pub(super) async fn keep_schedule(store: &Arc<dyn Store>, posts: Vec<Post>) -> StoreResult<Report> {
    let results: Vec<_> = stream::iter(posts)
        .map(|post| {
            let store = Arc::clone(store);
            async move { (post.id.clone(), keep_entry(&store, &post).await) }
        })
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    let mut report = Report::default();
    for (id, result) in results {
        if let Ok(Some(true)) = result {
            report.scheduled += 1;
        }
        let written = result.map(|change| usize::from(change.is_some()));
        settle(written, format!("schedule of post {id}"), &mut report)?;
    }
    Ok(report)
}

/// `Some(true)`: the entry was written; `Some(false)`: removed; `None`: it was right.
async fn keep_entry(store: &Arc<dyn Store>, post: &Post) -> StoreResult<Option<bool>> {
    let pk = schedule_partition();
    let stored = store
        .read_item(Container::Feed, &pk, post.id.as_str())
        .await?
        .map(|document| document.item);
    let wanted = ScheduleEntry::of(post)
        .map(|entry| entry.to_item())
        .transpose()
        .map_err(|e| StoreError::BadRequest(e.to_string()))?;
    match (wanted, stored) {
        (Some(wanted), Some(stored)) if same_entry(&wanted, &stored) => Ok(None),
        (Some(wanted), _) => {
            store.upsert_item(Container::Feed, &pk, wanted).await?;
            Ok(Some(true))
        }
        (None, Some(_)) => {
            remove_entry(store, &post.id).await?;
            Ok(Some(false))
        }
        (None, None) => Ok(None),
    }
}

/// Whether a stored entry holds what is wanted (system properties aside).
fn same_entry(wanted: &Value, stored: &Value) -> bool {
    serde_json::from_value::<ScheduleEntry>(stored.clone()).ok()
        == serde_json::from_value::<ScheduleEntry>(wanted.clone()).ok()
}

/// Takes a post out of the schedule (deleted, or no longer scheduled); absent counts as done.
pub(crate) async fn remove_entry(store: &Arc<dyn Store>, post_id: &PostId) -> StoreResult<usize> {
    match store
        .delete_item(Container::Feed, &schedule_partition(), post_id.as_str())
        .await
    {
        Ok(()) => Ok(1),
        Err(StoreError::NotFound) => Ok(0),
        Err(e) => Err(e),
    }
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
