//! Summary diffs (SPEC 13; forked at step-finish, SPEC 4 step 8, and on step 1, SPEC 12 step 8).
//!
//! After every step the turn it answered is marked, and a background worker per session
//! recomputes, from the store and the snapshots:
//! - each marked turn's diff, from its first step-start snapshot to its last step-finish
//!   snapshot, stored as the user message's `summary.diffs` (`message.updated`);
//! - the session's diff over its whole history the same way, stored as the session's
//!   `summary` totals (`session.updated`) and published as `session.diff` with its files.
//!
//! The loop never waits for a diff; the run waits for the last one before it ends, so every
//! summary write happens while the run holds the session (a revert, refused while busy, can
//! never race a write that would bring a removed message back). A pass during the run works on
//! the history the run itself read at the top of its next step (the store is read
//! once per step, not once by the run and again by the worker); the pass at the run's end
//! works on the run's history brought up to the store (the newest messages only), or on the
//! worker's own read of the store when that fails. Either way a
//! later computation sees at least what an earlier one saw. The workers are the only writers
//! of a user message's `summary`: they remember the diffs they wrote or found per turn, so a
//! copy of a user message older than their own write does not make them write it again.
//!
//! A diff between two snapshot trees never changes (trees are named by their content), so the
//! workers of a run remember the last ones they computed: a step that changed no file leaves
//! every span as it was, and its pass then costs no diff and no session read.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use session_core::{
    FileDiff, Message, MessageId, MessageWithParts, SessionId, UserSummary, message::diff_totals,
    summary::snapshot_span, summary::stored_diffs, summary::turn,
};
use session_store::{SessionPatch, SessionSummary, Store};
use tokio::task::JoinHandle;

use super::bus::{Bus, BusEvent};
use super::history_mirror::HistoryMirror;
use super::runs::lock;
use super::snapshot::Snapshotter;

/// The summary work of each session.
#[derive(Debug, Default)]
pub(super) struct Summaries {
    sessions: Arc<Mutex<HashMap<SessionId, Pending>>>,
}

/// What is left to compute for one session, and the worker computing it.
#[derive(Debug, Default)]
struct Pending {
    /// User messages whose turn changed since their diff was last computed.
    turns: BTreeSet<MessageId>,
    /// The history the run read last, for the next pass (instead of reading the store).
    handed: Option<Arc<Vec<MessageWithParts>>>,
    worker: Option<JoinHandle<()>>,
    /// What the run's successive workers learned, shared by them.
    state: Arc<tokio::sync::Mutex<WorkerState>>,
}

/// How many tree-to-tree diffs a run's workers remember: the session's span and the open
/// turns' spans, with room for a few more.
const REMEMBERED_DIFFS: usize = 8;

/// What a session's summary workers carry from one pass to the next.
#[derive(Debug, Default)]
struct WorkerState {
    /// The session's history as the last pass read it.
    mirror: HistoryMirror,
    /// The latest diffs computed (whole, before `stored_diffs` cuts them), by (from, to) tree
    /// hash, newest last.
    diffs: Vec<((String, String), Vec<FileDiff>)>,
    /// The span whose totals the session row is known to hold (written or found by a pass).
    session_span: Option<(String, String)>,
    /// Each turn's diffs as a pass wrote or found them on its user message.
    turn_diffs: HashMap<MessageId, Vec<FileDiff>>,
}

impl WorkerState {
    /// The remembered diff from `from` to `to`.
    fn remembered(&self, from: &str, to: &str) -> Option<&Vec<FileDiff>> {
        self.diffs.iter().rev().find(|((f, t), _)| f == from && t == to).map(|(_, diffs)| diffs)
    }

    fn remember(&mut self, from: &str, to: &str, diffs: &[FileDiff]) {
        if self.remembered(from, to).is_some() {
            return;
        }
        if self.diffs.len() == REMEMBERED_DIFFS {
            self.diffs.remove(0);
        }
        self.diffs.push(((from.to_owned(), to.to_owned()), diffs.to_vec()));
    }
}

/// What a worker computes with.
#[derive(Clone)]
pub(super) struct Writer {
    store: Arc<dyn Store>,
    snapshots: Arc<dyn Snapshotter>,
    bus: Bus,
}

/// The files the session changed, from its first step's snapshot to its last one (or, with
/// `turn_id`, over that user message's turn alone); empty without snapshots.
pub(super) async fn session_diff(
    store: &dyn Store,
    snapshots: &dyn Snapshotter,
    session_id: &SessionId,
    turn_id: Option<&MessageId>,
) -> Result<Vec<FileDiff>, session_store::StoreError> {
    let history = store.load_history(session_id).await?.messages;
    let span = match turn_id {
        Some(user_id) => snapshot_span(turn(&history, user_id).iter().copied()),
        None => snapshot_span(&history),
    };
    let Some((from, to)) = span else { return Ok(Vec::new()) };
    Ok(snapshots.diff_trees(from, to).await.map(stored_diffs).unwrap_or_default())
}

impl Summaries {
    /// Marks the turn of user message `turn` changed: the next [`Summaries::start`] or the
    /// run's end computes it.
    pub(super) fn mark(&self, session_id: &SessionId, turn: &MessageId) {
        lock(&self.sessions).entry(session_id.clone()).or_default().turns.insert(turn.clone());
    }

    /// Hands `history` (what the run just read) to the session's summary work and makes sure a
    /// worker (from `writer`) computes the marked turns.
    pub(super) fn start(
        &self,
        writer: impl FnOnce() -> Writer,
        session_id: &SessionId,
        history: Arc<Vec<MessageWithParts>>,
    ) {
        let mut sessions = lock(&self.sessions);
        let Some(pending) = sessions.get_mut(session_id).filter(|pending| !pending.turns.is_empty()) else {
            return;
        };
        pending.handed = Some(history);
        if pending.worker.as_ref().is_none_or(JoinHandle::is_finished) {
            let worker = writer();
            let sessions = self.sessions.clone();
            let session_id = session_id.clone();
            let state = pending.state.clone();
            pending.worker = Some(tokio::spawn(async move {
                // Each pass needs a history the run handed over: turns marked after it wait
                // for the run's next read (or its end, which reads the store itself).
                loop {
                    let (turns, handed) = match lock(&sessions).get_mut(&session_id) {
                        Some(pending) if !pending.turns.is_empty() => match pending.handed.take() {
                            Some(handed) => (std::mem::take(&mut pending.turns), handed),
                            None => return,
                        },
                        _ => return,
                    };
                    worker.summarize(&session_id, &turns, Some(handed), &state).await;
                }
            }));
        }
    }

    /// Waits for the session's summary work, then computes what is still marked with `writer`:
    /// the run's end calls it, so the last step's diff is stored before the run lets the
    /// session go. `history` is the run's own, brought up to the store here for that last pass
    /// (a read of the newest messages instead of the whole session).
    pub(super) async fn finish(&self, writer: Writer, session_id: &SessionId, history: &mut HistoryMirror) {
        // Taking the entry out stops the worker after its current pass.
        let Some(pending) = lock(&self.sessions).remove(session_id) else { return };
        if let Some(worker) = pending.worker
            && let Err(error) = worker.await
            && error.is_panic()
        {
            tracing::warn!(%error, "summary diffs: the worker panicked");
        }
        if !pending.turns.is_empty() {
            // The run's last step came after its last read: the store is read here (by the
            // worker itself when the run's history cannot be brought up to date).
            let handed = match history.refresh(writer.store.as_ref(), session_id).await {
                Ok(()) => Some(history.shared()),
                Err(error) => {
                    tracing::debug!(%session_id, %error, "summary diffs: the run's history could not be read");
                    None
                }
            };
            writer.summarize(session_id, &pending.turns, handed, &pending.state).await;
        }
    }
}

impl Writer {
    /// A writer of summaries into `store`, diffing with `snapshots`, telling `bus`.
    pub(super) fn new(store: Arc<dyn Store>, snapshots: Arc<dyn Snapshotter>, bus: Bus) -> Self {
        Self { store, snapshots, bus }
    }
}

impl Writer {
    /// Recomputes the diffs of `turns` and of the whole session; failures are logged.
    async fn summarize(
        &self,
        session_id: &SessionId,
        turns: &BTreeSet<MessageId>,
        handed: Option<Arc<Vec<MessageWithParts>>>,
        state: &tokio::sync::Mutex<WorkerState>,
    ) {
        if let Err(error) = self.try_summarize(session_id, turns, handed, &mut *state.lock().await).await {
            tracing::warn!(%session_id, %error, "summary diffs: not stored");
        }
    }

    async fn try_summarize(
        &self,
        session_id: &SessionId,
        turns: &BTreeSet<MessageId>,
        handed: Option<Arc<Vec<MessageWithParts>>>,
        state: &mut WorkerState,
    ) -> Result<(), session_store::StoreError> {
        if handed.is_none() {
            state.mirror.refresh(&*self.store, session_id).await?;
        }
        let history: &[MessageWithParts] = match &handed {
            Some(history) => history,
            None => state.mirror.messages(),
        };
        let mut written = Vec::new();
        let mut computed = Vec::new();
        let mut turn_diffs = Vec::new();
        for user_id in turns {
            let messages = turn(history, user_id);
            let diffs = match snapshot_span(messages.iter().copied()) {
                // A turn no step started in (its first request failed) changed nothing: its
                // diffs are empty, and stored so, as OpenCode stores them.
                None => Vec::new(),
                Some((from, to)) => match state.remembered(from, to) {
                    Some(diffs) => stored_diffs(diffs.clone()),
                    None => {
                        let Some(diffs) = self.snapshots.diff_trees(from, to).await else { continue };
                        computed.push(((from.to_owned(), to.to_owned()), diffs.clone()));
                        stored_diffs(diffs)
                    }
                },
            };
            let Some(Message::User(user)) = messages.first().map(|m| &m.info) else { continue };
            if state.turn_diffs.get(user_id) == Some(&diffs)
                || user.summary.as_ref().is_some_and(|summary| summary.diffs == diffs)
            {
                turn_diffs.push((user_id.clone(), diffs));
                continue;
            }
            let mut user = user.clone();
            user.summary = Some(UserSummary { diffs: diffs.clone(), ..user.summary.unwrap_or_default() });
            let message = Message::User(user);
            self.store.upsert_message(&message).await?;
            self.bus.publish(BusEvent::MessageUpdated { info: Box::new(message.clone()) });
            turn_diffs.push((user_id.clone(), diffs));
            written.push(message);
        }
        let span = snapshot_span(history).map(|(from, to)| (from.to_owned(), to.to_owned()));
        for message in written {
            state.mirror.update_info(message);
        }
        state.turn_diffs.extend(turn_diffs);
        for ((from, to), diffs) in computed {
            state.remember(&from, &to, &diffs);
        }
        let Some((from, to)) = span else {
            // No step of the session started yet: it changed nothing, which its totals say.
            return self.store_totals(session_id, &[]).await;
        };
        // The session row already holds this span's totals: the same trees, the same diff.
        if state.session_span.as_ref() == Some(&(from.clone(), to.clone())) {
            return Ok(());
        }
        let diffs = match state.remembered(&from, &to) {
            Some(diffs) => diffs.clone(),
            None => {
                let Some(diffs) = self.snapshots.diff_trees(&from, &to).await else { return Ok(()) };
                state.remember(&from, &to, &diffs);
                diffs
            }
        };
        self.store_totals(session_id, &diffs).await?;
        state.session_span = Some((from, to));
        Ok(())
    }

    /// Stores `diffs`' totals as the session's summary, unless it holds them already.
    async fn store_totals(
        &self,
        session_id: &SessionId,
        diffs: &[FileDiff],
    ) -> Result<(), session_store::StoreError> {
        let (additions, deletions, files) = diff_totals(diffs);
        let summary = SessionSummary { additions, deletions, files, diffs: None };
        let session = self.store.get_session(session_id).await?;
        if session.summary.as_ref() != Some(&summary) {
            let patch = SessionPatch { summary: Some(Some(summary)), ..SessionPatch::default() };
            let session = self.store.update_session(session_id, patch).await?;
            self.bus.publish(BusEvent::SessionUpdated { info: Box::new(session) });
            self.bus.publish(BusEvent::SessionDiff {
                session_id: session_id.clone(),
                diff: stored_diffs(diffs.to_vec()),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(file: &str) -> Vec<FileDiff> {
        vec![FileDiff { file: file.to_owned(), patch: None, additions: 1, deletions: 0, status: None }]
    }

    #[test]
    fn a_remembered_diff_is_found_by_both_trees_and_the_oldest_goes_first() {
        let mut state = WorkerState::default();
        state.remember("a", "b", &diff("one"));
        assert_eq!(state.remembered("a", "b"), Some(&diff("one")));
        assert_eq!(state.remembered("b", "a"), None, "a span has a direction");
        // Remembering a span again keeps the first answer (the same trees, the same diff).
        state.remember("a", "b", &diff("other"));
        assert_eq!(state.remembered("a", "b"), Some(&diff("one")));
        for n in 0..REMEMBERED_DIFFS {
            state.remember("a", &format!("c{n}"), &diff("later"));
        }
        assert_eq!(state.diffs.len(), REMEMBERED_DIFFS);
        assert_eq!(state.remembered("a", "b"), None, "the oldest span was let go");
        assert!(state.remembered("a", &format!("c{}", REMEMBERED_DIFFS - 1)).is_some());
    }
}
