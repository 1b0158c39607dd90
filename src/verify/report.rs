//! What a check finds: violations, what was scanned, and the repairs planned from them.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::repair::{Repair, RepairOutcome};
use crate::domain::TenantId;
use crate::store::{Container, Store, StoreResult, tenant};
use crate::words::{count, first_lines};

/// Whether a violation is explained by a change not yet applied (see
/// [`crate::verify::verify_explained`]).
pub type Explained<'a> = dyn Fn(&Violation) -> bool + Send + Sync + 'a;

/// Violations kept in the report; the rest are only counted (per kind).
pub const MAX_RECORDED: usize = 1_000;
/// How often (in items scanned) the progress callback is called.
pub const PROGRESS_EVERY: usize = 10_000;
/// Repairs planned from one scan, at most (each is a few ids): a store broken beyond that is
/// repaired in further rounds, so memory stays bounded whatever the damage.
pub const MAX_REPAIRS: usize = 100_000;
/// What an invariant violation is about. [`ViolationKind::code`] is its stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// An item that does not read as its type (or has no known type).
    UnreadableItem,
    /// A post whose `commentCount` or `likeCount` differs from its comments or likes.
    CountMismatch,
    /// A post, comment or like whose `userUsername` is not its author's current username.
    StaleUsername,
    /// A post, comment or like whose author has no user item.
    UnknownAuthor,
    /// A comment or like whose post does not exist.
    OrphanItem,
    /// A like whose id is not the one derived from its liker.
    LikeIdMismatch,
    /// A post with no copy in its author's partition of `users`.
    MissingUserCopy,
    /// A copy of a post in another user's partition of `users`.
    MisplacedUserCopy,
    /// A copy in `users` whose post does not exist.
    OrphanUserCopy,
    /// A copy in `users` that differs from its post's short form.
    UserCopyDiffers,
    /// A post that belongs in the feed (one of the most recent) and is not in it.
    MissingFromFeed,
    /// A post in the feed although more recent posts are left out.
    OldPostInFeed,
    /// A feed item beyond the feed's bound of 100.
    FeedOverBound,
    /// A feed item whose post does not exist.
    OrphanFeedCopy,
    /// A feed item that differs from its post's short form.
    FeedCopyDiffers,
    /// A feed item whose post is a draft or scheduled: nobody but its author may see it.
    UnpublishedInFeed,
    /// A comment or like of a deleted post, or an item an erased user wrote before the
    /// erasure: something a delete should have removed.
    LeftAfterDelete,
    /// A published post without its copy in the partition of one of its tags or its month.
    MissingViewCopy,
    /// A copy in `tags` or `archive` of a post that does not belong there (deleted, not
    /// published, without that tag, of another month).
    OrphanViewCopy,
    /// A copy in `tags` or `archive` that differs from its post's short form.
    ViewCopyDiffers,
    /// A month whose count (in its partition or in the archive's index) differs from the
    /// posts its partition holds.
    MonthCountMismatch,
    /// A scheduled post without its entry in the schedule, or with one that differs (another
    /// time, another author): the publisher would not publish it, or not then.
    MissingScheduleEntry,
    /// A schedule entry whose post is not scheduled (published, a draft, deleted, missing).
    OrphanScheduleEntry,
    /// A tenant with schedule entries that the publisher's directory does not list (`multi`):
    /// the publisher never visits its schedule.
    TenantNotInScheduleDirectory,
}

impl ViolationKind {
    pub fn code(self) -> &'static str {
        match self {
            Self::UnreadableItem => "unreadable-item",
            Self::CountMismatch => "count-mismatch",
            Self::StaleUsername => "stale-username",
            Self::UnknownAuthor => "unknown-author",
            Self::OrphanItem => "orphan-item",
            Self::LikeIdMismatch => "like-id-mismatch",
            Self::MissingUserCopy => "missing-user-copy",
            Self::MisplacedUserCopy => "misplaced-user-copy",
            Self::OrphanUserCopy => "orphan-user-copy",
            Self::UserCopyDiffers => "user-copy-differs",
            Self::MissingFromFeed => "missing-from-feed",
            Self::OldPostInFeed => "old-post-in-feed",
            Self::FeedOverBound => "feed-over-bound",
            Self::OrphanFeedCopy => "orphan-feed-copy",
            Self::FeedCopyDiffers => "feed-copy-differs",
            Self::UnpublishedInFeed => "unpublished-in-feed",
            Self::LeftAfterDelete => "left-after-delete",
            Self::MissingViewCopy => "missing-view-copy",
            Self::OrphanViewCopy => "orphan-view-copy",
            Self::ViewCopyDiffers => "view-copy-differs",
            Self::MonthCountMismatch => "month-count-mismatch",
            Self::MissingScheduleEntry => "missing-schedule-entry",
            Self::OrphanScheduleEntry => "orphan-schedule-entry",
            Self::TenantNotInScheduleDirectory => "tenant-not-in-schedule-directory",
        }
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// One broken invariant, about one item: the offending item, or for something missing, the
/// source item that lacks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    pub container: Container,
    /// The item's partition key value.
    pub partition: String,
    pub id: String,
    pub detail: String,
    /// The tenant whose model the item is in (`multi`); its `partition` then shows the key in
    /// the store, `[tenant, partition]`.
    pub tenant: Option<TenantId>,
    /// The targeted write that undoes it; `None` when only a person can (an unreadable
    /// item, an author with no user item, two likes of one user).
    pub repair: Option<Repair>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}/{}/{}: {}",
            self.kind,
            self.container.name(),
            self.partition,
            self.id,
            self.detail
        )
    }
}

/// Items read, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    pub users: usize,
    pub posts: usize,
    pub comments: usize,
    pub likes: usize,
    pub user_copies: usize,
    pub feed_items: usize,
    /// Tombstones of deleted posts.
    pub tombstones: usize,
    /// Erasure markers of deleted accounts (counted apart, as `export` does).
    pub erasures: usize,
    /// Items of the views: post copies in `tags` and `archive`, and the months' counts.
    pub view_items: usize,
    /// Items of no known type (also reported as violations).
    pub other: usize,
}

impl Scanned {
    pub fn total(&self) -> usize {
        self.users
            + self.posts
            + self.comments
            + self.likes
            + self.user_copies
            + self.feed_items
            + self.tombstones
            + self.erasures
            + self.view_items
            + self.other
    }
}

impl fmt::Display for Scanned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |n: usize| n as u64;
        let mut counts = vec![
            count(n(self.users), "user", "users"),
            count(n(self.posts), "post", "posts"),
            count(n(self.comments), "comment", "comments"),
            count(n(self.likes), "like", "likes"),
            count(
                n(self.user_copies),
                "post copy in users",
                "post copies in users",
            ),
            count(n(self.feed_items), "feed item", "feed items"),
        ];
        if self.tombstones > 0 {
            counts.push(count(n(self.tombstones), "tombstone", "tombstones"));
        }
        if self.erasures > 0 {
            counts.push(count(n(self.erasures), "erasure marker", "erasure markers"));
        }
        if self.view_items > 0 {
            counts.push(count(n(self.view_items), "view item", "view items"));
        }
        if self.other > 0 {
            counts.push(count(
                n(self.other),
                "item of unknown type",
                "items of unknown type",
            ));
        }
        f.write_str(&counts.join(", "))
    }
}

/// The outcome of a scan.
#[derive(Debug, Default, Clone)]
pub struct VerifyReport {
    pub scanned: Scanned,
    /// The first [`MAX_RECORDED`] violations, in the order found.
    pub violations: Vec<Violation>,
    /// All violations, recorded or not.
    pub total_violations: usize,
    pub by_kind: BTreeMap<ViolationKind, usize>,
    /// The repairs of all violations (not only the recorded ones), up to [`MAX_REPAIRS`].
    pub repairs: Repairs,
    /// Violations left out because a change not yet applied will undo them (a copy not made
    /// yet): see [`crate::verify::verify_explained`].
    pub explained: usize,
}

impl VerifyReport {
    /// Whether every invariant holds.
    pub fn holds(&self) -> bool {
        self.total_violations == 0
    }

    /// One line per violation, the first `max` of them, then how many more there are.
    pub fn violation_lines(&self, max: usize) -> Vec<String> {
        first_lines(&self.violations, max, self.total_violations, |more| {
            let by_kind = self
                .by_kind
                .iter()
                .map(|(kind, n)| format!("{kind}: {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "... and {} (all violations by kind: {by_kind})",
                count(more as u64, "more violation", "more violations")
            )
        })
    }

    /// The one-line verdict.
    pub fn verdict(&self) -> String {
        let explained = match self.explained {
            0 => String::new(),
            n => format!(
                "; {} left out, which changes not yet applied will make",
                count(n as u64, "copy", "copies")
            ),
        };
        if self.holds() {
            format!(
                "verify: OK, every invariant holds ({}){explained}",
                self.scanned
            )
        } else {
            format!(
                "verify: FAILED, {} ({}){explained}",
                count(self.total_violations as u64, "violation", "violations"),
                self.scanned
            )
        }
    }

    /// The violations of `kind` among those recorded.
    pub fn of_kind(&self, kind: ViolationKind) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(move |v| v.kind == kind)
    }

    /// Records a violation found in `tenant`'s model (`None`: the whole store's), naming it
    /// by its key in the store; one that `explained` accepts is only counted (in
    /// [`VerifyReport::explained`]).
    pub(crate) fn record_unless(
        &mut self,
        tenant: Option<&TenantId>,
        mut violation: Violation,
        explained: &Explained<'_>,
    ) {
        if let Some(tenant) = tenant {
            violation.partition = format!("[{:?}, {:?}]", tenant.as_str(), violation.partition);
            violation.tenant = Some(tenant.clone());
        }
        if explained(&violation) {
            self.explained += 1;
            return;
        }
        self.total_violations += 1;
        *self.by_kind.entry(violation.kind).or_default() += 1;
        self.repairs.add(&violation);
        if self.violations.len() < MAX_RECORDED {
            self.violations.push(violation);
        }
    }
}

/// Where a scan is, for progress lines on a large store.
#[derive(Debug, Clone, Copy)]
pub struct ScanProgress {
    /// The container being scanned.
    pub container: Container,
    pub scanned: Scanned,
    pub violations: usize,
}

/// The repairs of a set of violations: each once, in the order they must run (see
/// [`Repair`]), each with the first violation it undoes, to say what it fixed.
#[derive(Debug, Default, Clone)]
pub struct Repairs {
    planned: BTreeMap<(Repair, Option<TenantId>), String>,
    /// Repairs not planned because [`MAX_REPAIRS`] were already.
    pub left_out: usize,
}

/// What applying repairs did: one line per repair that wrote, and per repair the store
/// refused for good.
#[derive(Debug, Default, Clone)]
pub struct AppliedRepairs {
    pub fixed: Vec<String>,
    pub failed: Vec<String>,
}

impl Repairs {
    /// Plans the repair of `violation` (and what must follow it), if it has one.
    pub fn add(&mut self, violation: &Violation) {
        let Some(repair) = &violation.repair else {
            return;
        };
        for repair in std::iter::once(repair.clone()).chain(repair.then()) {
            let key = (repair, violation.tenant.clone());
            if self.planned.contains_key(&key) {
                continue;
            }
            if self.planned.len() >= MAX_REPAIRS {
                self.left_out += 1;
                continue;
            }
            self.planned.insert(key, violation.to_string());
        }
    }

    pub fn len(&self) -> usize {
        self.planned.len()
    }

    pub fn is_empty(&self) -> bool {
        self.planned.is_empty()
    }

    /// Applies every planned repair to `store`, each in its tenant's view, in order; `fixed`
    /// is called with one line per repair that wrote, naming what was wrong and what it did.
    /// A transient store failure stops it (what is done is done; running again is safe).
    pub async fn apply(
        &self,
        store: &Arc<dyn Store>,
        fixed: &mut (dyn FnMut(&str) + Send),
    ) -> StoreResult<AppliedRepairs> {
        let mut applied = AppliedRepairs::default();
        for ((repair, tenant), what) in &self.planned {
            let view = match tenant {
                Some(tenant) => tenant::scoped(store, tenant),
                None => Arc::clone(store),
            };
            match repair.apply(&view).await? {
                RepairOutcome::Fixed(how) => {
                    let line = format!("repaired {what}: {how}");
                    fixed(&line);
                    applied.fixed.push(line);
                }
                RepairOutcome::Unchanged => {}
                RepairOutcome::Failed(why) => applied
                    .failed
                    .push(format!("cannot {repair} ({what}): {why}")),
            }
        }
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::CopyIn;

    fn violation(n: usize, repair: Option<Repair>) -> Violation {
        Violation {
            kind: ViolationKind::CountMismatch,
            container: Container::Posts,
            partition: format!("p{n}"),
            id: format!("p{n}"),
            detail: "x".into(),
            tenant: None,
            repair,
        }
    }

    #[test]
    fn lines_show_the_first_violations_then_a_count() {
        let mut report = VerifyReport::default();
        for n in 0..5 {
            report.record_unless(None, violation(n, None), &|_| false);
        }
        let lines = report.violation_lines(3);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "count-mismatch posts/p0/p0: x");
        assert!(
            lines[3].starts_with("... and 2 more violations"),
            "{}",
            lines[3]
        );
        assert!(!report.holds());
    }

    #[test]
    fn repairs_are_planned_once_each_sources_before_copies_and_the_feed_last() {
        let mut repairs = Repairs::default();
        let recopy = Repair::Recopy {
            post_id: "p".into(),
        };
        let feed_orphan = Repair::DeleteCopy {
            copy_in: CopyIn::Feed,
            partition: "post".into(),
            id: "q".into(),
        };
        let recount = Repair::Recount {
            post_id: "p".into(),
        };
        for repair in [
            recopy.clone(),
            feed_orphan.clone(),
            recopy.clone(),
            recount.clone(),
        ] {
            repairs.add(&violation(0, Some(repair)));
        }
        repairs.add(&violation(1, None));
        let order: Vec<&Repair> = repairs.planned.keys().map(|(r, _)| r).collect();
        assert_eq!(order, [&recount, &feed_orphan, &recopy, &Repair::Feed]);
    }
}
