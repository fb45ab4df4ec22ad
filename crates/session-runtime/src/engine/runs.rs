//! The table of runs in this process (SPEC 12 step 11, `ensureRunning`): one run per session,
//! prompts that join a running loop, and the guard that removes a run however it ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use session_core::{AssistantMessage, SessionId};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::error::RuntimeError;

/// What a finished run hands the prompts that joined it: its last assistant message, or the
/// text of its error.
pub(super) type RunResult = Result<AssistantMessage, String>;

/// Locks a mutex, going on after a panic elsewhere: a poisoned table must not wedge every
/// later run.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A run in progress in this process: a prompt loop, or a revert.
struct RunEntry {
    /// Which run this is (see [`RunTable::counter`]).
    run: u64,
    /// Cancels the run.
    cancel: CancellationToken,
    /// Filled once when a prompt loop ends; `None` for a revert, which prompts cannot join.
    finished: Option<watch::Sender<Option<RunResult>>>,
    /// How many prompts joined: each stored its user message for the running loop to answer.
    joins: u64,
}

/// The runs of this process, by session.
#[derive(Default)]
pub(super) struct RunTable {
    runs: Mutex<HashMap<SessionId, RunEntry>>,
    /// Numbers runs so a finished run's guard never removes a newer run's entry.
    counter: AtomicU64,
}

/// Removes a session's run entry when the run ends, however it ends.
pub(super) struct RunGuard<'a> {
    table: &'a RunTable,
    session_id: SessionId,
    /// The run this guard belongs to.
    pub(super) run: u64,
    /// Cancels the run.
    pub(super) cancel: CancellationToken,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        let mut runs = lock(&self.table.runs);
        if runs.get(&self.session_id).is_some_and(|entry| entry.run == self.run) {
            runs.remove(&self.session_id);
        }
    }
}

impl RunTable {
    /// Registers a run of the session, or `None` when one is going. A `joinable` run (a
    /// prompt loop) lets later prompts join it; a revert does not.
    pub(super) fn begin(&self, session_id: &SessionId, joinable: bool) -> Option<RunGuard<'_>> {
        let mut runs = lock(&self.runs);
        if runs.contains_key(session_id) {
            return None;
        }
        let run = self.counter.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        let finished = joinable.then(|| watch::channel(None).0);
        runs.insert(session_id.clone(), RunEntry { run, cancel: cancel.clone(), finished, joins: 0 });
        Some(RunGuard { table: self, session_id: session_id.clone(), run, cancel })
    }

    /// Cancels the session's run; false when none is going.
    pub(super) fn cancel(&self, session_id: &SessionId) -> bool {
        lock(&self.runs).get(session_id).map(|entry| entry.cancel.cancel()).is_some()
    }

    /// True while a run (prompt loop or revert) of the session is going.
    pub(super) fn is_busy(&self, session_id: &SessionId) -> bool {
        lock(&self.runs).contains_key(session_id)
    }

    /// True when a prompt may join the session's run: none is going, or it is a prompt loop.
    pub(super) fn is_joinable(&self, session_id: &SessionId) -> bool {
        lock(&self.runs).get(session_id).is_none_or(|entry| entry.finished.is_some())
    }

    /// Tells the session's running loop that a prompt joined; `None` when no loop runs.
    pub(super) fn join(&self, session_id: &SessionId) -> Option<watch::Receiver<Option<RunResult>>> {
        let mut runs = lock(&self.runs);
        let entry = runs.get_mut(session_id)?;
        let receiver = entry.finished.as_ref()?.subscribe();
        entry.joins += 1;
        Some(receiver)
    }

    /// How many prompts joined the session's run `run` so far.
    pub(super) fn joins(&self, session_id: &SessionId, run: u64) -> u64 {
        lock(&self.runs).get(session_id).filter(|entry| entry.run == run).map_or(0, |entry| entry.joins)
    }

    /// Ends the run unless a prompt joined since `seen` (when it `may_continue`): removes its
    /// entry and hands its result to the joined prompts. Returns false (and keeps the run)
    /// when one joined.
    pub(super) fn end(
        &self,
        session_id: &SessionId,
        run: u64,
        seen: u64,
        result: &Result<AssistantMessage, RuntimeError>,
        may_continue: bool,
    ) -> bool {
        let mut runs = lock(&self.runs);
        let Some(entry) = runs.get(session_id).filter(|entry| entry.run == run) else { return true };
        if may_continue && entry.joins != seen {
            return false;
        }
        if let Some(entry) = runs.remove(session_id)
            && let Some(finished) = entry.finished
        {
            let shared = match result {
                Ok(message) => Ok(message.clone()),
                Err(error) => Err(error.to_string()),
            };
            finished.send_replace(Some(shared));
        }
        true
    }
}
