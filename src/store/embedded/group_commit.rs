//! The one writing connection, on a thread of its own, committing the writes waiting as one
//! group: one fsync for the group instead of one per write, and one count of changes per
//! partition the group wrote.

use std::cell::RefCell;
use std::ops::Deref;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Instant;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::commits::{FOREIGN_COMMIT_POLL, ForeignCommits, Versioning};
use super::schema::{COUNT_A_CHANGE, COUNTED_CONTAINERS, COUNTS_CHANGES};
use super::sqlite::sql_error_ref;
use crate::store::{Container, StoreError};

/// Writes committed together at most: a group pays one fsync instead of one per write.
const MAX_GROUP: usize = 64;

/// One write waiting for the writer thread. `run` does the work inside the group's
/// transaction and says whether it succeeded (a failed write is rolled back to its own
/// savepoint, leaving the others); `finish` learns whether the group committed.
pub(super) struct WriteJob {
    pub(super) run: WriteRun,
    pub(super) finish: Box<dyn FnOnce(Option<StoreError>) + Send>,
}

/// The writer thread: takes the writes waiting and commits them as one transaction (group
/// commit). Every write is answered only after its group's commit is durable, so
/// `synchronous=FULL` keeps its promise while concurrent writers share the fsync. While pages
/// are versioned, it counts its own commits and, between groups, those of other processes
/// (`foreign`: what it had seen of them when the store opened).
pub(super) fn run_writer(
    mut conn: Connection,
    jobs: std::sync::mpsc::Receiver<WriteJob>,
    versioning: &Versioning,
    mut foreign: ForeignCommits,
) {
    // Whether the file counts its partitions' writes, once seen: only a process that has the
    // file to itself stops the counting (`stop_counting`), so it never stops under a writer.
    let mut counting = false;
    // A look costs a read transaction on the thread every write waits for: under a stream of
    // writes, one per poll, not one per group.
    let mut looked: Option<Instant> = None;
    loop {
        // Nothing reads the count while no page is versioned: the thread then sleeps until a
        // write comes (the one that turns versioning on among them).
        let watching = versioning.counts_changes();
        if watching && looked.is_none_or(|at| at.elapsed() >= FOREIGN_COMMIT_POLL) {
            if foreign.noticed(&conn) {
                versioning.count_commit();
            }
            looked = Some(Instant::now());
        }
        let next = if watching {
            jobs.recv_timeout(FOREIGN_COMMIT_POLL)
        } else {
            jobs.recv().map_err(|_| RecvTimeoutError::Disconnected)
        };
        let first = match next {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let (runs, finishes): (Vec<_>, Vec<_>) =
            group.into_iter().map(|job| (job.run, job.finish)).unzip();
        let outcome = commit_group(&mut conn, runs, &mut counting);
        // Counted even if the group rolled back: a needless read later, never a stale page.
        versioning.count_commit();
        for finish in finishes {
            finish(outcome.as_ref().err().map(sql_error_ref));
        }
    }
}

type WriteRun = Box<dyn FnOnce(&Batch<'_>) -> bool + Send>;

/// A group's transaction as each of its writes sees it: the transaction, and the partitions
/// written so far, whose counts of changes the group adds to once each before it commits.
pub(super) struct Batch<'conn> {
    tx: Transaction<'conn>,
    written: RefCell<Vec<(&'static str, String)>>,
}

impl<'conn> Deref for Batch<'conn> {
    type Target = Transaction<'conn>;

    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl Batch<'_> {
    /// Notes that the group wrote the partition `pk` (its key as stored) of `container`.
    pub(super) fn wrote(&self, container: Container, pk: &str) {
        if COUNTED_CONTAINERS.contains(&container) {
            self.written
                .borrow_mut()
                .push((container.name(), pk.to_owned()));
        }
    }

    /// Adds one to the count of changes of each counted partition the group wrote, if the
    /// file counts them (`counting`: it was seen to; looked at again in this transaction
    /// while not, since another process may have begun counting).
    fn count_changes(&self, counting: &mut bool) -> rusqlite::Result<()> {
        let mut written = self.written.take();
        if written.is_empty() {
            return Ok(());
        }
        if !*counting {
            *counting = self
                .prepare_cached(COUNTS_CHANGES)?
                .query_row([], |row| row.get(0))?;
            if !*counting {
                return Ok(());
            }
        }
        written.sort_unstable();
        written.dedup();
        let mut count = self.prepare_cached(COUNT_A_CHANGE)?;
        for (container, pk) in &written {
            count.execute((container, pk))?;
        }
        Ok(())
    }
}

fn commit_group(
    conn: &mut Connection,
    runs: Vec<WriteRun>,
    counting: &mut bool,
) -> rusqlite::Result<()> {
    let batch = Batch {
        tx: conn.transaction_with_behavior(TransactionBehavior::Immediate)?,
        written: RefCell::default(),
    };
    for run in runs {
        let written_before = batch.written.borrow().len();
        run_cached(&batch, "SAVEPOINT write_job")?;
        // A panicking write counts as a failed one; the thread must outlive it.
        let succeeded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&batch))).unwrap_or(false);
        if !succeeded {
            run_cached(&batch, "ROLLBACK TO write_job")?;
            batch.written.borrow_mut().truncate(written_before);
        }
        run_cached(&batch, "RELEASE write_job")?;
    }
    batch.count_changes(counting)?;
    batch.tx.commit()
}

/// Runs one statement from the connection's statement cache. The writer runs the same few
/// statements for every write: preparing them anew each time was about a tenth of the
/// process's CPU under the harness's saturating write mix.
fn run_cached(tx: &Transaction<'_>, sql: &str) -> rusqlite::Result<usize> {
    tx.prepare_cached(sql)?.execute([])
}
