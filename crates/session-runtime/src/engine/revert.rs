//! Revert and unrevert (SPEC 13): take a session's file changes back to a point in its history,
//! and put them back; the messages after the point go when the session moves on.

use std::collections::BTreeSet;

use session_core::message::diff_totals;
use session_core::summary::{snapshot_span, stored_diffs};
use session_core::{FileDiff, Message, MessageId, MessageWithParts, PartId, PartKind, PatchPart, SessionId};
use session_store::{RevertPoint, RevertRecord, Session, SessionPatch, SessionSummary};

use super::bus::BusEvent;
use super::error::RuntimeError;
use super::runs::RunGuard;
use super::runtime::Runtime;

impl Runtime {
    /// Reverts the session to before `message_id` (or before its part `part_id`): every file
    /// changed by a step after that point is checked out as it was before the step, through
    /// the snapshotter, and `session.revert` records the point and a snapshot of the tree as
    /// it was, for [`Runtime::unrevert`]. The messages stay until the next prompt, which
    /// deletes everything after the point.
    ///
    /// Reverting an assistant message as a whole (no part, or no text or tool part before
    /// `part_id`) reverts from the user message that started its turn, as OpenCode does.
    /// Refused with [`RuntimeError::Busy`] while a prompt runs in the session, in this process
    /// or (through the store's lease) in another.
    pub async fn revert(
        &self,
        session_id: &SessionId,
        message_id: &MessageId,
        part_id: Option<&PartId>,
    ) -> Result<Session, RuntimeError> {
        let _guard = self.claim_idle(session_id).await?;
        let history = self.store.load_history(session_id).await?.messages;
        let point = revert_point(&history, message_id, part_id)
            .ok_or_else(|| RuntimeError::RevertPointNotFound(message_id.clone()))?;
        let session = self.store.get_session(session_id).await?;
        // A revert over a revert starts from the tree as it was before the first one.
        let snapshot = match &session.revert {
            Some(previous) => {
                if let Some(hash) = &previous.snapshot {
                    let files = changed_files(&patches_after(&history, &RevertPoint::from(previous)));
                    self.restore(hash, &files).await?;
                }
                previous.snapshot.clone()
            }
            None => self.snapshots.track().await,
        };
        let mut seen = BTreeSet::new();
        let restores: Vec<(&str, Vec<String>)> = patches_after(&history, &point)
            .into_iter()
            .map(|patch| {
                // The earliest step that touched a file has its state before the whole range.
                let files = patch.files.iter().filter(|f| seen.insert((*f).clone())).cloned().collect();
                (patch.hash.as_str(), files)
            })
            .collect();
        // The whole revert is checked before the first file changes: a stored patch (perhaps
        // from an import) naming a path outside the worktree changes nothing at all.
        for (hash, files) in &restores {
            if !files.is_empty() {
                self.snapshots.check_restore(hash, files).await.map_err(RuntimeError::Snapshot)?;
            }
        }
        for (hash, files) in &restores {
            self.restore(hash, files).await?;
        }
        // What the revert undid, as a diff from the tree before it to the tree now.
        let diff = match &snapshot {
            Some(hash) => self.snapshots.diff(hash).await,
            None => None,
        };
        // As OpenCode's revert does, the session summary now counts what the reverted range
        // changed (its first step's tree to its last), and `session.diff` lists it.
        let reverted = self.reverted_diffs(&history, &point).await;
        let summary = reverted.as_ref().map(|diffs| {
            let (additions, deletions, files) = diff_totals(diffs);
            SessionSummary { additions, deletions, files, diffs: None }
        });
        let record = RevertRecord { message_id: point.message_id, part_id: point.part_id, snapshot, diff };
        let patch = SessionPatch {
            revert: Some(Some(record)),
            summary: summary.map(Some),
            ..SessionPatch::default()
        };
        let session = self.store.update_session(session_id, patch).await?;
        if let Some(diffs) = reverted {
            self.bus
                .publish(BusEvent::SessionDiff { session_id: session_id.clone(), diff: stored_diffs(diffs) });
        }
        self.bus.publish(BusEvent::SessionUpdated { info: Box::new(session.clone()) });
        Ok(session)
    }

    /// Undoes [`Runtime::revert`]: restores the files from the snapshot the revert stored and
    /// clears `session.revert`. Without a pending revert it changes nothing. Refused with
    /// [`RuntimeError::Busy`] while a prompt runs in the session.
    pub async fn unrevert(&self, session_id: &SessionId) -> Result<Session, RuntimeError> {
        let _guard = self.claim_idle(session_id).await?;
        let session = self.store.get_session(session_id).await?;
        let Some(record) = &session.revert else { return Ok(session) };
        if let Some(hash) = &record.snapshot {
            let history = self.store.load_history(session_id).await?.messages;
            let files = changed_files(&patches_after(&history, &RevertPoint::from(record)));
            self.restore(hash, &files).await?;
        }
        let patch = SessionPatch { revert: Some(None), ..SessionPatch::default() };
        let session = self.store.update_session(session_id, patch).await?;
        self.bus.publish(BusEvent::SessionUpdated { info: Box::new(session.clone()) });
        Ok(session)
    }

    /// SPEC 13 `cleanup`: once the session moves on, the messages and parts after a pending
    /// revert point are deleted and the revert record cleared.
    pub(super) async fn cleanup_revert(&self, session_id: &SessionId) -> Result<(), RuntimeError> {
        let session = self.store.get_session(session_id).await?;
        let Some(record) = &session.revert else { return Ok(()) };
        let removed = self.store.remove_from(session_id, &RevertPoint::from(record)).await?;
        for message_id in removed.messages {
            self.bus.publish(BusEvent::MessageRemoved { session_id: session_id.clone(), message_id });
        }
        for part_id in removed.parts {
            self.bus.publish(BusEvent::PartRemoved {
                session_id: session_id.clone(),
                message_id: record.message_id.clone(),
                part_id,
            });
        }
        let session = self.store.get_session(session_id).await?;
        self.bus.publish(BusEvent::SessionUpdated { info: Box::new(session) });
        Ok(())
    }

    /// Marks the session busy for a revert (so no prompt starts meanwhile); refused while a
    /// prompt runs here or another process holds the session's lease.
    async fn claim_idle(&self, session_id: &SessionId) -> Result<RunGuard<'_>, RuntimeError> {
        let guard =
            self.runs.begin(session_id, false).ok_or_else(|| RuntimeError::Busy(session_id.clone()))?;
        if self.store.lease(session_id).await?.is_some() {
            return Err(RuntimeError::Busy(session_id.clone()));
        }
        Ok(guard)
    }

    /// The diffs of the messages from `point` on (the whole message at the point, as
    /// OpenCode takes every message whose id is not before it); `None` without snapshots.
    async fn reverted_diffs(
        &self,
        history: &[MessageWithParts],
        point: &RevertPoint,
    ) -> Option<Vec<FileDiff>> {
        let (from, to) = snapshot_span(reverted_range(history, &point.message_id))?;
        self.snapshots.diff_trees(from, to).await
    }

    async fn restore(&self, hash: &str, files: &[String]) -> Result<(), RuntimeError> {
        if files.is_empty() {
            return Ok(());
        }
        self.snapshots.restore(hash, files).await.map_err(RuntimeError::Snapshot)
    }
}

/// Where a revert to `message_id` (or its part `part_id`) starts, following OpenCode's
/// `revert`: a part with no text or tool part before it in its message counts as the whole
/// message, and a whole message is reverted from the user message of its turn.
pub(super) fn revert_point(
    history: &[MessageWithParts],
    message_id: &MessageId,
    part_id: Option<&PartId>,
) -> Option<RevertPoint> {
    let mut last_user: Option<&MessageId> = None;
    for message in history {
        if let Message::User(user) = &message.info {
            last_user = Some(&user.id);
        }
        let mut useful_before = false;
        for part in &message.parts {
            let hit = match part_id {
                Some(part_id) => &part.id == part_id,
                None => message.info.id() == message_id,
            };
            if hit {
                let part_id = if useful_before { part_id.cloned() } else { None };
                let message_id = match (&part_id, last_user) {
                    (None, Some(user)) => user.clone(),
                    _ => message.info.id().clone(),
                };
                return Some(RevertPoint { message_id, part_id });
            }
            useful_before |= matches!(part.kind, PartKind::Text(_) | PartKind::Tool(_));
        }
    }
    None
}

/// The messages from `message_id` to the end of `history`.
fn reverted_range<'a>(
    history: &'a [MessageWithParts],
    message_id: &MessageId,
) -> impl Iterator<Item = &'a MessageWithParts> {
    history.iter().skip_while(move |message| message.info.id() != message_id)
}

/// The patch parts at and after `point`, in history order.
pub(super) fn patches_after<'a>(history: &'a [MessageWithParts], point: &RevertPoint) -> Vec<&'a PatchPart> {
    let mut started = false;
    let mut patches = Vec::new();
    for message in history {
        let at_point = message.info.id() == &point.message_id;
        if at_point && point.part_id.is_none() {
            started = true;
        }
        for part in &message.parts {
            if at_point && point.part_id.as_ref() == Some(&part.id) {
                started = true;
            }
            if started && let PartKind::Patch(patch) = &part.kind {
                patches.push(patch);
            }
        }
    }
    patches
}

fn changed_files(patches: &[&PatchPart]) -> Vec<String> {
    let files: BTreeSet<&String> = patches.iter().flat_map(|p| p.files.iter()).collect();
    files.into_iter().cloned().collect()
}
