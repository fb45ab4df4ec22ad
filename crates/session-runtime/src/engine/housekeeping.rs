//! Snapshot housekeeping from the runtime's side: at the end of a run, when a pass is due, the
//! snapshots the store's recent sessions still name are collected and the snapshotter bounds
//! its store around them (see `snapshot_gc`). It runs in the background and never fails a run.

use std::collections::BTreeSet;
use std::sync::Arc;

use session_core::PartKind;
use session_store::{ListSessions, Store, StoreError};

use super::runtime::Runtime;
use super::snapshot::Snapshotter;

impl Runtime {
    /// Forks a housekeeping pass of the snapshot store when one is due.
    pub(super) fn fork_housekeeping(&self) {
        let store = self.store.clone();
        let snapshots = self.snapshots.clone();
        let directory = self.settings.worktree.to_string_lossy().into_owned();
        let now = self.clock.now_ms();
        let cancel = self.background.cancel_token();
        self.background.spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => {}
                () = housekeep(store, snapshots, directory, now) => {}
            }
        });
    }
}

async fn housekeep(store: Arc<dyn Store>, snapshots: Arc<dyn Snapshotter>, directory: String, now: u64) {
    let Some(since) = snapshots.claim_housekeeping(now).await else { return };
    let keep = match kept_snapshots(store.as_ref(), &directory, since).await {
        Ok(keep) => keep,
        Err(error) => {
            // Without the list, nothing may be pruned as unreferenced: skip this pass.
            tracing::warn!(%error, "snapshot housekeeping: the sessions could not be read");
            return;
        }
    };
    if let Err(error) = snapshots.housekeep(&keep).await {
        tracing::warn!(%error, "snapshot housekeeping failed");
    }
}

/// Every snapshot hash named by the sessions of `directory` updated at or after `since`: step
/// starts and finishes, snapshot and patch parts, and pending reverts.
pub(super) async fn kept_snapshots(
    store: &dyn Store,
    directory: &str,
    since: u64,
) -> Result<Vec<String>, StoreError> {
    let mut hashes = BTreeSet::new();
    let mut query =
        ListSessions { limit: 100, directory: Some(directory.to_owned()), ..ListSessions::default() };
    'pages: loop {
        let page = store.list_sessions(&query).await?;
        for session in &page.sessions {
            // Newest first: the rest of the list is older still.
            if session.time.updated < since {
                break 'pages;
            }
            if let Some(snapshot) = session.revert.as_ref().and_then(|revert| revert.snapshot.clone()) {
                hashes.insert(snapshot);
            }
            let history = store.load_history(&session.id).await?;
            for part in history.messages.iter().flat_map(|message| &message.parts) {
                let hash = match &part.kind {
                    PartKind::StepStart(start) => start.snapshot.as_ref(),
                    PartKind::StepFinish(finish) => finish.snapshot.as_ref(),
                    PartKind::Snapshot(snapshot) => Some(&snapshot.snapshot),
                    PartKind::Patch(patch) => Some(&patch.hash),
                    _ => None,
                };
                if let Some(hash) = hash {
                    hashes.insert(hash.clone());
                }
            }
        }
        match page.next {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    Ok(hashes.into_iter().collect())
}
