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
//! never race a write that would bring a removed message back). Each pass brings the session's
//! history mirror up to the store when it starts (issue 25: the newest messages only, not the
//! whole history at every step), so a later computation always sees at least what an earlier
//! one saw. The workers are the only writers of a user message's `summary`, and they put what
//! they write into the mirror, so its older messages stay current.
//!
//! A diff between two snapshot trees never changes (trees are named by their content), so the
//! workers of a run remember the last ones they computed: a step that changed no file leaves
//! every span as it was, and its pass then costs no diff and no session read.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use session_core::{
    FileDiff, Message, MessageId, SessionId, UserSummary, message::diff_totals, summary::snapshot_span,
    summary::stored_diffs, summary::turn,
};
use session_store::{SessionPatch, SessionSummary, Store};
use tokio::task::JoinHandle;

use super::bus::{Bus, BusEvent};
use super::history_mirror::HistoryMirror;
use super::runs::lock;
use super::runtime::Runtime;
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
struct Writer {
    store: Arc<dyn Store>,
    snapshots: Arc<dyn Snapshotter>,
    bus: Bus,
}

impl Runtime {
    /// The files the session changed, from its first step's snapshot to its last one (or, with
    /// `turn`, over that user message's turn alone); empty without snapshots.
    pub async fn session_diff(
        &self,
        session_id: &SessionId,
        turn_id: Option<&MessageId>,
    ) -> Result<Vec<session_core::FileDiff>, session_store::StoreError> {
        let history = self.store.load_history(session_id).await?.messages;
        let span = match turn_id {
            Some(user_id) => snapshot_span(turn(&history, user_id).iter().copied()),
            None => snapshot_span(&history),
        };
        let Some((from, to)) = span else { return Ok(Vec::new()) };
        Ok(self.snapshots.diff_trees(from, to).await.map(stored_diffs).unwrap_or_default())
    }

    /// The session's todo list, as `todowrite` last left it.
    pub fn todos(&self, session_id: &SessionId) -> Vec<session_tools::Todo> {
        self.tools.todos().get(session_id)
    }

    /// Marks the turn of user message `turn` changed and makes sure a worker computes it.
    pub(super) fn fork_summary(&self, session_id: &SessionId, turn: &MessageId) {
        // Without snapshots every diff is empty and nothing would be written: a pass would
        // only read the history's tail from the store after every step.
        if !self.snapshots.is_on() {
            return;
        }
        let mut sessions = lock(&self.summaries.sessions);
        let pending = sessions.entry(session_id.clone()).or_default();
        pending.turns.insert(turn.clone());
        if pending.worker.as_ref().is_none_or(JoinHandle::is_finished) {
            let worker = self.summary_writer();
            let sessions = self.summaries.sessions.clone();
            let session_id = session_id.clone();
            let state = pending.state.clone();
            pending.worker = Some(tokio::spawn(async move {
                loop {
                    let turns = match lock(&sessions).get_mut(&session_id) {
                        Some(pending) => std::mem::take(&mut pending.turns),
                        None => return,
                    };
                    if turns.is_empty() {
                        return;
                    }
                    worker.summarize(&session_id, &turns, &state).await;
                }
            }));
        }
    }

    /// Waits for the session's summary work, then computes what is still marked: the run's
    /// end calls it, so the last step's diff is stored before the run lets the session go.
    pub(super) async fn finish_summaries(&self, session_id: &SessionId) {
        // Taking the entry out stops the worker after its current pass.
        let Some(pending) = lock(&self.summaries.sessions).remove(session_id) else { return };
        if let Some(worker) = pending.worker
            && let Err(error) = worker.await
            && error.is_panic()
        {
            tracing::warn!(%error, "summary diffs: the worker panicked");
        }
        if !pending.turns.is_empty() {
            self.summary_writer().summarize(session_id, &pending.turns, &pending.state).await;
        }
    }

    fn summary_writer(&self) -> Writer {
        Writer { store: self.store.clone(), snapshots: self.snapshots.clone(), bus: self.bus.clone() }
    }
}

impl Writer {
    /// Recomputes the diffs of `turns` and of the whole session; failures are logged.
    async fn summarize(
        &self,
        session_id: &SessionId,
        turns: &BTreeSet<MessageId>,
        state: &tokio::sync::Mutex<WorkerState>,
    ) {
        if let Err(error) = self.try_summarize(session_id, turns, &mut *state.lock().await).await {
            tracing::warn!(%session_id, %error, "summary diffs: not stored");
        }
    }

    async fn try_summarize(
        &self,
        session_id: &SessionId,
        turns: &BTreeSet<MessageId>,
        state: &mut WorkerState,
    ) -> Result<(), session_store::StoreError> {
        state.mirror.refresh(&*self.store, session_id).await?;
        let history = state.mirror.messages();
        let mut written = Vec::new();
        let mut computed = Vec::new();
        for user_id in turns {
            let messages = turn(history, user_id);
            let Some((from, to)) = snapshot_span(messages.iter().copied()) else { continue };
            let diffs = match state.remembered(from, to) {
                Some(diffs) => stored_diffs(diffs.clone()),
                None => {
                    let Some(diffs) = self.snapshots.diff_trees(from, to).await else { continue };
                    computed.push(((from.to_owned(), to.to_owned()), diffs.clone()));
                    stored_diffs(diffs)
                }
            };
            let Some(Message::User(user)) = messages.first().map(|m| &m.info) else { continue };
            if user.summary.as_ref().is_some_and(|summary| summary.diffs == diffs) {
                continue;
            }
            let mut user = user.clone();
            user.summary = Some(UserSummary { diffs, ..user.summary.unwrap_or_default() });
            let message = Message::User(user);
            self.store.upsert_message(&message).await?;
            self.bus.publish(BusEvent::MessageUpdated { info: Box::new(message.clone()) });
            written.push(message);
        }
        let span = snapshot_span(history).map(|(from, to)| (from.to_owned(), to.to_owned()));
        for message in written {
            state.mirror.update_info(message);
        }
        for ((from, to), diffs) in computed {
            state.remember(&from, &to, &diffs);
        }
        let Some((from, to)) = span else { return Ok(()) };
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
        let (additions, deletions, files) = diff_totals(&diffs);
        let summary = SessionSummary { additions, deletions, files, diffs: None };
        let session = self.store.get_session(session_id).await?;
        if session.summary.as_ref() != Some(&summary) {
            let patch = SessionPatch { summary: Some(Some(summary)), ..SessionPatch::default() };
            let session = self.store.update_session(session_id, patch).await?;
            self.bus.publish(BusEvent::SessionUpdated { info: Box::new(session) });
            self.bus.publish(BusEvent::SessionDiff { session_id: session_id.clone(), diff: stored_diffs(diffs) });
        }
        state.session_span = Some((from, to));
        Ok(())
    }
}
