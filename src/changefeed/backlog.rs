//! How far behind the standalone pump is: the changes of each source container after the
//! checkpoint the pump keeps in `leases`. `verify` reads them so that a copy merely not made
//! yet (on a live store, or in a backup taken while the server wrote) is told apart from a
//! broken invariant: a violation whose repair is what a pending change's handler will do is
//! left out of the count and said to be explained.
//!
//! Without a checkpoint (the pump never ran there: a store served by the Functions triggers,
//! whose leases are the host's, or one only ever imported) nothing is known to be pending and
//! every violation counts.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::pump::{lease_id, load_checkpoint};
use crate::copies::Source;
use crate::domain::{Post, TenantId, Tombstone, User};
use crate::store::{Store, StoreResult, Tenancy, tenant};
use crate::verify::{CopyIn, Repair, Violation};

/// Changes read per request while counting.
const PAGE: usize = 1_000;

/// An item named by its blog (`None`: a `single` store) and its id.
type Subject = (Option<TenantId>, String);

/// The changes the pump has not handled yet.
#[derive(Debug, Clone, Default)]
pub struct Backlog {
    /// Per source: the changes after its checkpoint, or `None` without a checkpoint.
    pub pending: Vec<(Source, Option<usize>)>,
    /// Users and erasure markers changed: their usernames and erasures are to be carried out.
    users: HashSet<Subject>,
    /// Posts and deleted posts changed: their copies and deletes are to be made.
    posts: HashSet<Subject>,
    /// The blogs whose feed a pending change of a post refills or trims.
    feeds: HashSet<Option<TenantId>>,
}

impl Backlog {
    /// Changes pending in all, over the sources that have a checkpoint.
    pub fn total(&self) -> usize {
        self.pending.iter().filter_map(|(_, n)| *n).sum()
    }

    /// Whether the pump has run on this store (some source has a checkpoint).
    pub fn known(&self) -> bool {
        self.pending.iter().any(|(_, n)| n.is_some())
    }

    /// Whether `violation` is a copy, a username or a delete's clean-up that a pending change
    /// will make: its repair is what that change's handler does.
    pub fn explains(&self, violation: &Violation) -> bool {
        let tenant = &violation.tenant;
        let post = |id: &str| self.posts.contains(&(tenant.clone(), id.to_owned()));
        let user = |id: &str| self.users.contains(&(tenant.clone(), id.to_owned()));
        match &violation.repair {
            Some(Repair::Erase { user_id }) | Some(Repair::Username { user_id, .. }) => {
                user(user_id)
            }
            Some(
                Repair::ClearDeletedPost { post_id }
                | Repair::Recopy { post_id }
                | Repair::Views { post_id, .. },
            ) => post(post_id),
            // A pending change of any post may move a month's count.
            Some(Repair::MonthCount { .. }) => !self.posts.is_empty(),
            Some(Repair::DeleteCopy {
                copy_in: CopyIn::Users | CopyIn::Schedule,
                id,
                ..
            }) => post(id),
            // A pending change of the tenant's posts enlists it once handled.
            Some(Repair::Enlist { .. }) => self.feeds.contains(tenant),
            Some(Repair::DeleteCopy {
                copy_in: CopyIn::Feed,
                id,
                ..
            }) => post(id) || self.feeds.contains(tenant),
            Some(Repair::Feed) => self.feeds.contains(tenant),
            Some(Repair::Recount { .. } | Repair::DeleteOrphans { .. }) | None => false,
        }
    }

    /// What `verify` says of it.
    pub fn describe(&self) -> String {
        if !self.known() {
            return "no checkpoint of the standalone change-feed pump in leases: every \
                    violation counts, including copies not made yet"
                .to_owned();
        }
        let per_source = self
            .pending
            .iter()
            .filter_map(|(source, n)| Some(format!("{} {}", source.container().name(), (*n)?)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{} not yet applied by the change feed ({per_source}); the copies they make are \
             not counted as violations",
            crate::words::count(self.total() as u64, "change", "changes")
        )
    }

    fn note(&mut self, source: Source, tenancy: Tenancy, item: &Value) {
        let tenant = match tenancy {
            Tenancy::Single => None,
            Tenancy::Multi => tenant::tenant_of(item),
        };
        let field = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_owned);
        let item_type = item.get("type").and_then(Value::as_str);
        match source {
            Source::Users if matches!(item_type, Some(User::TYPE | Tombstone::TYPE)) => {
                if let Some(user_id) = field("userId") {
                    self.users.insert((tenant, user_id));
                }
            }
            Source::Posts if matches!(item_type, Some(Post::TYPE | Tombstone::TYPE)) => {
                if let Some(post_id) = field("postId") {
                    self.posts.insert((tenant.clone(), post_id));
                }
                self.feeds.insert(tenant);
            }
            _ => {}
        }
    }
}

/// Reads the pump's checkpoints and the changes after them (ids only are kept).
pub async fn backlog(store: &Arc<dyn Store>) -> StoreResult<Backlog> {
    let mut backlog = Backlog::default();
    for source in Source::ALL {
        let Some(mut checkpoint) = load_checkpoint(store, &lease_id(source)).await? else {
            backlog.pending.push((source, None));
            continue;
        };
        let mut pending = 0;
        loop {
            let batch = store
                .read_changes(source.container(), Some(&checkpoint), PAGE)
                .await?;
            if batch.items.is_empty() || batch.checkpoint == checkpoint {
                break;
            }
            pending += batch.items.len();
            for item in &batch.items {
                backlog.note(source, store.tenancy(), item);
            }
            checkpoint = batch.checkpoint;
        }
        backlog.pending.push((source, Some(pending)));
    }
    Ok(backlog)
}
