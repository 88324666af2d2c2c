//! WAL checkpoints mostly off the writer's thread. SQLite's automatic
//! checkpoint runs inside the commit that grows the log past its limit, on
//! the writer's thread: every write waits while the log's pages are copied
//! into the database. Here the writer only notes how long the log is and
//! nudges a checkpointer with a connection of its own, which copies the
//! log while the next commits go on (WAL allows one of each). Once the
//! log is long, the writer copies what those commits added itself, after
//! each commit until the log is wholly in the database and the next write
//! starts it again from the beginning, instead of letting it grow.

use std::cell::Cell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use rusqlite::hooks::Wal;
use rusqlite::Connection;

use crate::store::error::StoreError;

/// Log pages at which a checkpoint is asked for (as SQLite's automatic
/// checkpoint has it), and again after each this many more.
const CHECKPOINT_PAGES: c_int = 1000;
/// Log pages from which the writer copies what the checkpointer has not,
/// so that the log starts again.
const FINISH_PAGES: c_int = 8 * CHECKPOINT_PAGES;

thread_local! {
    /// The log's length after the last commit on this thread's writer.
    static WAL_PAGES: Cell<c_int> = const { Cell::new(0) };
}

/// Called by SQLite after each commit; taking the hook also turns the
/// automatic checkpoint off.
fn note_length(_: &Wal, pages: c_int) -> rusqlite::Result<()> {
    WAL_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// The writer's side: asks for checkpoints as the log grows.
pub(super) struct Checkpoints {
    nudge: SyncSender<()>,
    /// Whether the checkpointer is at work.
    copying: Arc<AtomicBool>,
    /// Log pages at which the next checkpoint is asked for.
    next: AtomicI32,
}

impl Checkpoints {
    /// Hooks `writer`'s commits and starts the checkpointer on `conn`, a
    /// connection of its own to the same database. The checkpointer ends
    /// when this is dropped.
    pub fn start(writer: &Connection, conn: Connection) -> Result<Checkpoints, StoreError> {
        let (nudge, nudged) = sync_channel(1);
        let copying = Arc::new(AtomicBool::new(false));
        let theirs = copying.clone();
        std::thread::Builder::new()
            .name("engram-checkpoint".into())
            .spawn(move || run(conn, nudged, &theirs))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the checkpointer: {e}")))?;
        writer.wal_hook(Some(note_length));
        Ok(Checkpoints {
            nudge,
            copying,
            next: AtomicI32::new(CHECKPOINT_PAGES),
        })
    }

    /// After a commit on `writer`: asks for a checkpoint as the log grows;
    /// once it is long, copies what the checkpointer has not, after each
    /// commit until the log starts again (as SQLite's own checkpoint
    /// would, but with most of the log copied already). The commit stands
    /// either way, so a failed checkpoint is only logged.
    pub fn after_commit(&self, writer: &Connection) {
        let pages = WAL_PAGES.with(|p| p.replace(0));
        if pages < CHECKPOINT_PAGES {
            // The log started again.
            self.next.store(CHECKPOINT_PAGES, Ordering::Relaxed);
            return;
        }
        if self.copying.load(Ordering::Acquire) {
            return;
        }
        let here = if pages >= FINISH_PAGES {
            true
        } else if pages >= self.next.load(Ordering::Relaxed) {
            self.next.store(pages + CHECKPOINT_PAGES, Ordering::Relaxed);
            self.copying.store(true, Ordering::Release);
            // Gone: the writer copies it all itself.
            let gone = self.nudge.try_send(()).is_err();
            if gone {
                self.copying.store(false, Ordering::Release);
            }
            gone
        } else {
            false
        };
        if here {
            if let Err(e) = checkpoint(writer) {
                tracing::warn!(error = %e, "WAL checkpoint failed; a later commit tries again");
            }
        }
    }
}

fn run(conn: Connection, nudged: Receiver<()>, copying: &AtomicBool) {
    while nudged.recv().is_ok() {
        if let Err(e) = checkpoint(&conn) {
            tracing::warn!(error = %e, "WAL checkpoint failed; the writer tries again");
        }
        copying.store(false, Ordering::Release);
    }
}

/// Copies what it can of the log into the database without waiting for
/// readers or the writer (a later one does the rest).
fn checkpoint(conn: &Connection) -> Result<(), StoreError> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::{open_connection, ConnectionOptions};
    use std::time::{Duration, Instant};

    #[test]
    fn the_log_is_copied_off_the_writer_and_then_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let options = ConnectionOptions {
            busy_timeout: Duration::from_secs(5),
            cache_size_kib: 1024,
            mmap_size_mib: 0,
        };
        let writer = open_connection(&path, options, None).unwrap();
        let checkpoints =
            Checkpoints::start(&writer, open_connection(&path, options, None).unwrap()).unwrap();
        writer.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        let probe = open_connection(&path, options, None).unwrap();
        // The log's frames and how many are in the database, read without
        // copying any.
        let log = || -> (i64, i64) {
            probe
                .query_row("PRAGMA wal_checkpoint(NOOP)", [], |r| {
                    Ok((r.get(1)?, r.get(2)?))
                })
                .unwrap()
        };
        // Each commit adds a page of its own (and rewrites a few).
        let commit = || {
            writer
                .execute("INSERT INTO t VALUES (zeroblob(4000))", [])
                .unwrap();
            checkpoints.after_commit(&writer);
        };
        while log().0 < i64::from(CHECKPOINT_PAGES - 20) {
            commit();
        }
        // No checkpoint yet, and none inside a commit.
        assert_eq!(log().1, 0);
        while log().0 < i64::from(CHECKPOINT_PAGES + 20) {
            commit();
        }
        let started = Instant::now();
        while log().1 < i64::from(CHECKPOINT_PAGES) {
            assert!(started.elapsed() < Duration::from_secs(10), "{:?}", log());
            std::thread::sleep(Duration::from_millis(5));
        }
        // Written on, the log starts again (the checkpointer may have
        // copied it all, or the writer finishes past FINISH_PAGES) rather
        // than growing.
        let mut longest = 0;
        for _ in 0..(4 * FINISH_PAGES) {
            commit();
            let (frames, _) = log();
            longest = longest.max(frames);
            if frames < i64::from(CHECKPOINT_PAGES) {
                break;
            }
            if frames % 100 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let (frames, _) = log();
        assert!(
            frames < i64::from(CHECKPOINT_PAGES),
            "{frames} (longest {longest})"
        );
        assert!(longest < i64::from(2 * FINISH_PAGES), "{longest}");
    }
}
