//! `verify`: the `fsck` of the product. It scans a store and checks every invariant of the
//! V3 model that the denormalised copies promise:
//!
//! - each post's `commentCount` and `likeCount` equal its comments and likes;
//! - every post, comment and like in `posts` carries its author's current username, and its
//!   author exists (the API refuses writes by a caller without a user item, so an item whose
//!   author is missing was not written through it);
//! - every like's id is the one derived from its liker (one like per user per post);
//! - `users` holds exactly one short copy of each post, in its author's partition, equal to
//!   the source's short form ([`Post::short`]), and no copy whose source is gone;
//! - `feed` holds exactly the most recent min(100, number of posts) posts, each equal to its
//!   short form;
//! - the views hold each published post in the partition of each of its tags (`tags`) and of
//!   its month (`archive`), equal to its short form, and nothing else; each month's count (in
//!   its partition and in the archive's index) equals the posts its partition holds;
//! - the schedule holds an entry for each scheduled post, as the post says, and no other; in
//!   a `multi` store the publisher's directory lists every tenant whose schedule holds one;
//! - deletes have been carried out: a deleted post (a tombstone) has no comment, like or copy
//!   left, and nothing an erased user wrote before their erasure is left but tombstones.
//!
//! The scan is not a snapshot: run it when writes have settled (the change feed has caught
//! up), or a copy that is merely late shows as a violation. It reads every container in pages
//! of cross-partition queries (Cosmos DB refuses cross-partition aggregates, so it counts
//! itself) and keeps, per post, its counts, author, creation date and a hash of its short
//! form; never the comments, likes or copies themselves. A `multi` store is scanned once too,
//! each item handed to its tenant's model.
//!
//! The checks themselves live in [`checks`], once: each takes one item and what it is compared
//! with, and returns the violation with its targeted [`Repair`]. The scan ([`verify`]) runs
//! them over everything; the delayed re-check ([`check_changes`], run by
//! `changefeed::recheck`) runs them over what changed; [`verify_and_repair`] (`verify
//! --repair`) runs the scan, applies the repairs, and scans again.

mod changes;
pub(crate) mod checks;
pub mod images;
mod repair;
mod report;
mod scan;
mod views;

use std::sync::Arc;

pub use changes::check_changes;
pub use repair::{CopyIn, Repair, RepairOutcome};
pub use report::{
    AppliedRepairs, Explained, MAX_RECORDED, MAX_REPAIRS, PROGRESS_EVERY, Repairs, ScanProgress,
    Scanned, VerifyReport, Violation, ViolationKind,
};

use crate::store::{Store, StoreResult};

/// Rounds of `verify --repair` at most: a repair may uncover work for another (an erasure
/// turns posts into tombstones, whose clean-up is then due).
pub(crate) const MAX_REPAIR_ROUNDS: usize = 5;

/// Scans `store` and checks every invariant (see the module documentation).
pub async fn verify(store: &Arc<dyn Store>) -> StoreResult<VerifyReport> {
    verify_with_progress(store, &mut |_| {}).await
}

/// [`verify`], calling `progress` every [`PROGRESS_EVERY`] items scanned. A `multi` store is
/// scanned once, each tenant checked as a V3 model of its own.
pub async fn verify_with_progress(
    store: &Arc<dyn Store>,
    progress: &mut (dyn FnMut(&ScanProgress) + Send),
) -> StoreResult<VerifyReport> {
    scan::scan(store, progress, &|_| false).await
}

/// [`verify_with_progress`], leaving out of the violations those that `explained` accepts:
/// copies that changes not yet applied by the change feed will make (on a live store, or a
/// backup taken while the server wrote). They are counted in [`VerifyReport::explained`].
pub async fn verify_explained(
    store: &Arc<dyn Store>,
    progress: &mut (dyn FnMut(&ScanProgress) + Send),
    explained: &Explained<'_>,
) -> StoreResult<VerifyReport> {
    scan::scan(store, progress, explained).await
}

/// What `verify --repair` found and did.
#[derive(Debug, Default, Clone)]
pub struct RepairReport {
    /// The first scan.
    pub before: VerifyReport,
    /// The repairs that wrote, and those the store refused, over every round.
    pub applied: AppliedRepairs,
    /// The last scan: whether everything holds now.
    pub after: VerifyReport,
}

/// `verify --repair`: scans, applies the repairs of what it found, and scans again, for up to
/// [`MAX_REPAIR_ROUNDS`] rounds while a round still fixes something (a repair can uncover
/// more work: an erased user's posts become tombstones whose clean-up is then due).
/// Idempotent, and safe while the application serves: every repair re-reads what it changes
/// and writes with If-Match, or through the change-feed handlers' own write paths.
pub async fn verify_and_repair(
    store: &Arc<dyn Store>,
    progress: &mut (dyn FnMut(&ScanProgress) + Send),
    fixed: &mut (dyn FnMut(&str) + Send),
) -> StoreResult<RepairReport> {
    let before = verify_with_progress(store, progress).await?;
    let mut report = RepairReport {
        after: before.clone(),
        before,
        applied: AppliedRepairs::default(),
    };
    for _ in 0..MAX_REPAIR_ROUNDS {
        if report.after.holds() || report.after.repairs.is_empty() {
            break;
        }
        let round = report.after.repairs.apply(store, fixed).await?;
        let progressed = !round.fixed.is_empty();
        report.applied.fixed.extend(round.fixed);
        report.applied.failed.extend(round.failed);
        report.after = verify_with_progress(store, progress).await?;
        if !progressed {
            break;
        }
    }
    Ok(report)
}
