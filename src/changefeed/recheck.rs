//! The delayed re-check (anti-entropy): a second, later look at every change.
//!
//! The handlers keep the copies right when they see the latest state. Sometimes they cannot:
//! a read on another instance that does not see a rename yet (Session consistency across
//! instances), a trigger batch the host skipped after its retries, a hand edit in the portal,
//! a bug. The re-check reads the change feeds of `users` and `posts` a fixed delay behind the
//! present (`BLOG_RECHECK_DELAY_MS`, 10 minutes by default), from checkpoints of its own in
//! `leases` (`recheck.users`, `recheck.posts`; the pump and the triggers keep theirs apart),
//! runs `verify`'s checks on each changed item and its dependents
//! ([`crate::verify::check_changes`]) and applies the repairs of what differs, with If-Match.
//!
//! - Its cost grows with the number of changes, not with the size of the store: a few point
//!   reads per change, one query per changed user (the fan-out's), the post's comments and
//!   likes once per post and batch, the feed's first page once per batch.
//! - It writes nothing when all is well but its checkpoints; each repair logs one line naming
//!   the item and what was wrong.
//! - It advances a checkpoint only after the batch before it was checked and repaired, like
//!   the pump; a crash re-checks the batch, which the idempotent repairs make harmless.
//! - In `multi` each change is checked in its tenant's view.
//!
//! "A delay behind the present" is decided by each change's commit time (`_ts`, whole
//! seconds, so a change counts as committed at the end of its second): it reads on until the
//! first change newer than now − delay, and checkpoints right before it. On Cosmos DB a page
//! of the feed comes from one physical partition; a partition whose next change is not due
//! yet holds the others back until it is, by at most the delay.
//!
//! It runs standalone as a task beside the pump ([`RecheckTask`]), and under the Functions
//! host as the timer-triggered function [`FUNCTION_NAME`], which re-checks up to the present
//! − delay within [`TIMER_BUDGET`] per invocation.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::pump::{load_checkpoint, retry_policy, save_checkpoint};
use super::task::BackgroundTask;
use crate::copies::Source;
use crate::store::{Checkpoint, Store, StoreResult, tenant};
use crate::verify::{Repairs, check_changes};

/// The name of the timer-triggered function that runs the re-check under the Functions host.
pub(crate) const FUNCTION_NAME: &str = "Recheck";
/// Its schedule (NCRONTAB, with seconds): every minute.
pub(crate) const TIMER_SCHEDULE: &str = "0 */1 * * * *";
/// The default delay behind the present: ten minutes, far past any replication lag and the
/// triggers' retries of a failed batch (the copies are normally right long before).
pub(crate) const DEFAULT_DELAY_MS: u64 = 600_000;
/// How long one timer invocation, or one pass of the task, re-checks before it answers (or
/// goes round again): under the timer's period, so invocations do not pile up.
pub const TIMER_BUDGET: Duration = Duration::from_secs(50);
/// Changes read at once (the pump's batch size).
const BATCH_SIZE: usize = 100;

/// Where this process runs the re-check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// Not at all (`BLOG_RECHECK_DELAY_MS=0`).
    Off,
    /// As a task beside the in-process change-feed pump (standalone, or the embedded store
    /// under the host); the timer function then has nothing to do.
    BesideThePump(Duration),
    /// When the Functions host invokes the timer function.
    OnTimer(Duration),
}

/// What one pass of the re-check did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecheckReport {
    /// Changes checked.
    pub checked: usize,
    /// One line per repair that wrote: the item, what was wrong, what was done.
    pub repaired: Vec<String>,
    /// Violations no repair can undo, and repairs the store refused.
    pub unfixable: Vec<String>,
    /// Whether both feeds were read up to the present − delay (`false`: the time ran out).
    pub caught_up: bool,
    /// When the oldest change still waiting becomes due, if one is.
    pub next_due: Option<SystemTime>,
}

impl RecheckReport {
    /// Lines for the Functions host's `Logs`.
    pub fn log_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "{FUNCTION_NAME}: {} changes checked, {} repaired, {} unfixable, {}",
            self.checked,
            self.repaired.len(),
            self.unfixable.len(),
            if self.caught_up {
                "caught up"
            } else {
                "behind: the next invocation goes on"
            }
        )];
        let named = self.repaired.iter().chain(&self.unfixable);
        lines.extend(named.map(|line| format!("{FUNCTION_NAME}: {line}")));
        lines
    }
}

/// The lease that keeps the re-check's checkpoint of `source`'s feed.
fn lease_id(source: Source) -> String {
    format!("recheck.{}", source.container().name())
}

/// One pass: for each source, from its checkpoint, checks and repairs every change committed
/// at least `delay` ago, and stops at the first younger one, or when `budget` is spent.
pub async fn run(
    store: &Arc<dyn Store>,
    delay: Duration,
    budget: Duration,
) -> StoreResult<RecheckReport> {
    let started = Instant::now();
    let cutoff = SystemTime::now().checked_sub(delay).unwrap_or(UNIX_EPOCH);
    let mut report = RecheckReport {
        caught_up: true,
        ..RecheckReport::default()
    };
    for source in Source::ALL {
        let lease = lease_id(source);
        let mut checkpoint = load_checkpoint(store, &lease).await?;
        loop {
            if started.elapsed() >= budget {
                report.caught_up = false;
                break;
            }
            match step(store, source, checkpoint.as_ref(), cutoff, &mut report).await? {
                Step::Advanced(next) => {
                    save_checkpoint(store, &lease, &next).await?;
                    checkpoint = Some(next);
                }
                Step::Waiting(due) => {
                    report.next_due = match (report.next_due, due) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    break;
                }
            }
        }
    }
    Ok(report)
}

/// Moves the re-check's checkpoints to the present end of both feeds, so that it checks only
/// the changes from now on (the harness measures the write mix so; a first deployment on a
/// large store may skip its history so, and run `verify --repair` once instead). Reads the
/// feeds through once.
pub async fn skip_to_present(store: &Arc<dyn Store>) -> StoreResult<()> {
    for source in Source::ALL {
        let lease = lease_id(source);
        let mut checkpoint = load_checkpoint(store, &lease).await?;
        loop {
            let batch = store
                .read_changes(source.container(), checkpoint.as_ref(), 1_000)
                .await?;
            let done = batch.items.is_empty();
            checkpoint = Some(batch.checkpoint);
            if done {
                break;
            }
        }
        if let Some(end) = &checkpoint {
            save_checkpoint(store, &lease, end).await?;
        }
    }
    Ok(())
}

enum Step {
    /// A batch was checked (and repaired); the checkpoint after it.
    Advanced(Checkpoint),
    /// Nothing due: the feed is read to its end, or its next change is younger than the delay
    /// (due then).
    Waiting(Option<SystemTime>),
}

/// When a change counts as committed: the end of its `_ts` second (a change without one, which
/// no store delivers, counts as long committed).
fn committed(change: &Value) -> SystemTime {
    change
        .get("_ts")
        .and_then(Value::as_u64)
        .map_or(UNIX_EPOCH, |ts| {
            UNIX_EPOCH + Duration::from_secs(ts.saturating_add(1))
        })
}

/// How many changes at the head of `changes` were committed by `cutoff`.
fn due(changes: &[Value], cutoff: SystemTime) -> usize {
    changes
        .iter()
        .take_while(|change| committed(change) <= cutoff)
        .count()
}

async fn step(
    store: &Arc<dyn Store>,
    source: Source,
    checkpoint: Option<&Checkpoint>,
    cutoff: SystemTime,
    report: &mut RecheckReport,
) -> StoreResult<Step> {
    let container = source.container();
    let batch = store
        .read_changes(container, checkpoint, BATCH_SIZE)
        .await?;
    if batch.items.is_empty() {
        // Some stores move the position even on an empty read; keep it if so.
        return Ok(match checkpoint {
            Some(at) if *at == batch.checkpoint => Step::Waiting(None),
            _ => Step::Advanced(batch.checkpoint),
        });
    }
    let delay = SystemTime::now().duration_since(cutoff).unwrap_or_default();
    let waiting = |change: &Value| Step::Waiting(Some(committed(change) + delay));
    let ready = due(&batch.items, cutoff);
    let (changes, next) = if ready == batch.items.len() {
        (batch.items, batch.checkpoint)
    } else if ready == 0 {
        return Ok(waiting(&batch.items[0]));
    } else {
        // Read the due head again on its own, for a checkpoint that ends right after it.
        let head = store.read_changes(container, checkpoint, ready).await?;
        let ready = due(&head.items, cutoff);
        if ready == 0 || ready < head.items.len() {
            // The feed moved between the reads; the next pass takes it from here.
            return Ok(waiting(head.items.get(ready).unwrap_or(&batch.items[0])));
        }
        (head.items, head.checkpoint)
    };
    check_and_repair(store, source, &changes, report).await?;
    report.checked += changes.len();
    Ok(Step::Advanced(next))
}

/// Runs the checks on `changes` of `source`'s feed, each tenant's in its view, and applies
/// the repairs; one log line per repair and per violation left.
async fn check_and_repair(
    store: &Arc<dyn Store>,
    source: Source,
    changes: &[Value],
    report: &mut RecheckReport,
) -> StoreResult<()> {
    let (models, strays) = tenant::by_model(store, changes);
    if strays > 0 {
        let line = format!("{strays} changes without a valid tenantId");
        tracing::warn!(function = FUNCTION_NAME, "re-check: {line}");
        report.unfixable.push(line);
    }
    for (tenant, view, documents) in models {
        let named = |line: &str| match &tenant {
            Some(tenant) => format!("tenant {:?}: {line}", tenant.as_str()),
            None => line.to_owned(),
        };
        let violations = check_changes(&view, source.container(), &documents).await?;
        let mut repairs = Repairs::default();
        for violation in &violations {
            if violation.repair.is_none() {
                let line = named(&format!("cannot repair {violation}"));
                tracing::warn!(function = FUNCTION_NAME, "re-check: {line}");
                report.unfixable.push(line);
            }
            repairs.add(violation);
        }
        let applied = repairs
            .apply(&view, &mut |fixed| {
                tracing::warn!(function = FUNCTION_NAME, "re-check: {}", named(fixed));
            })
            .await?;
        report
            .repaired
            .extend(applied.fixed.iter().map(|line| named(line)));
        for failed in applied.failed {
            let line = named(&failed);
            tracing::warn!(function = FUNCTION_NAME, "re-check: {line}");
            report.unfixable.push(line);
        }
    }
    Ok(())
}

/// Starts the re-check beside the pump. A batch checked but not yet checkpointed when it is
/// stopped is checked again on the next start, which writes nothing then.
pub fn start(store: Arc<dyn Store>, delay: Duration) -> BackgroundTask {
    BackgroundTask::spawn(run_forever(store, delay))
}

async fn run_forever(store: Arc<dyn Store>, delay: Duration) {
    let mut backoff = retry_policy();
    loop {
        match run(&store, delay, TIMER_BUDGET).await {
            Ok(report) => {
                backoff = retry_policy();
                tracing::debug!(
                    checked = report.checked,
                    repaired = report.repaired.len(),
                    unfixable = report.unfixable.len(),
                    caught_up = report.caught_up,
                    "re-check pass"
                );
                tokio::time::sleep(idle(&report, delay)).await;
            }
            Err(e) => {
                let wait = backoff.next().unwrap_or(Duration::from_secs(30));
                tracing::warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "re-check failed; it will be retried");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// How long the task waits after a pass: not at all when it is behind; until the next change
/// is due when one waits; else a whole delay (a change committed from now on is not due
/// before then).
fn idle(report: &RecheckReport, delay: Duration) -> Duration {
    if !report.caught_up {
        return Duration::ZERO;
    }
    match report.next_due {
        Some(due) => due.duration_since(SystemTime::now()).unwrap_or_default(),
        None => delay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_is_due_once_its_whole_second_is_past_the_delay() {
        let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        let changes = [json!({"_ts": 100}), json!({"_ts": 101}), json!({"_ts": 99})];
        assert_eq!(
            due(&changes, at(100)),
            0,
            "committed until the end of second 100"
        );
        assert_eq!(due(&changes, at(101)), 1);
        assert_eq!(due(&changes, at(102)), 3);
        assert_eq!(due(&[json!({"id": "no _ts"})], at(0)), 1);
    }

    #[test]
    fn the_task_waits_for_the_next_change_or_a_whole_delay() {
        let delay = Duration::from_secs(600);
        let behind = RecheckReport::default();
        assert_eq!(idle(&behind, delay), Duration::ZERO);
        let idle_store = RecheckReport {
            caught_up: true,
            ..RecheckReport::default()
        };
        assert_eq!(idle(&idle_store, delay), delay);
        let waiting = RecheckReport {
            caught_up: true,
            next_due: Some(SystemTime::now() + Duration::from_secs(5)),
            ..RecheckReport::default()
        };
        assert!(idle(&waiting, delay) <= Duration::from_secs(5));
    }
}
