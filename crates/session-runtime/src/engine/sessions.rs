//! The sessions as a client reads them through the runtime: one session, the folder's list, a
//! history, an export, deletion, the files a session changed and its todo list. Each reads the
//! runtime's own store, so a client holds the runtime and nothing else.

use session_core::{FileDiff, MessageId, SessionId};
use session_store::{ListSessions, Session, SessionDocument, SessionHistory, SessionPage, StoreError};
use session_tools::Todo;

use super::runtime::Runtime;
use super::summary::session_diff;

impl Runtime {
    /// The session `id`'s record.
    pub async fn session(&self, id: &SessionId) -> Result<Session, StoreError> {
        self.store.get_session(id).await
    }

    /// A page of sessions that `query` selects.
    pub async fn list_sessions(&self, query: &ListSessions) -> Result<SessionPage, StoreError> {
        self.store.list_sessions(query).await
    }

    /// The session's stored messages with their parts, oldest first.
    pub async fn history(&self, id: &SessionId) -> Result<SessionHistory, StoreError> {
        self.store.load_history(id).await
    }

    /// The session as a document (`session export`'s JSON).
    pub async fn export_session(&self, id: &SessionId) -> Result<SessionDocument, StoreError> {
        self.store.export_session(id).await
    }

    /// Deletes the session and its children; returns the ids deleted.
    pub async fn delete_session(&self, id: &SessionId) -> Result<Vec<SessionId>, StoreError> {
        self.store.delete_session(id).await
    }

    /// Closes the store: what it buffers is written (a process calls it once, on its way out).
    pub async fn close_store(&self) -> Result<(), StoreError> {
        self.store.close().await
    }

    /// The files the session changed, from its first step's snapshot to its last one (or, with
    /// `turn`, over that user message's turn alone); empty without snapshots.
    pub async fn session_diff(
        &self,
        session_id: &SessionId,
        turn_id: Option<&MessageId>,
    ) -> Result<Vec<FileDiff>, StoreError> {
        session_diff(self.store.as_ref(), self.snapshots.as_ref(), session_id, turn_id).await
    }

    /// The session's todo list, as `todowrite` last left it.
    pub fn todos(&self, session_id: &SessionId) -> Vec<Todo> {
        self.tools.todos().get(session_id)
    }
}
