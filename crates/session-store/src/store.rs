//! The `Store` trait: what the runtime asks of persistence.

use async_trait::async_trait;
use session_core::{Message, MessageId, Part, SessionId};

use crate::document::SessionDocument;
use crate::error::StoreResult;
use crate::model::{
    HistoryTail, Lease, ListSessions, NewSession, PartDelta, RecoveryReport, Removed, RevertPoint, Session,
    SessionHistory, SessionPage, SessionPatch, StoreStats, WriteBatch,
};

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The embedded SQLite file.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// Sessions, messages and parts, on SQLite or PostgreSQL.
///
/// Writes of messages and parts are ordered: a write that returned is committed, and a later
/// one never lands before it. Deltas are buffered and written with their part (see
/// [`Store::append_delta`]). Reads of a session first write its buffered deltas.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug {
    /// The database behind this store.
    fn backend(&self) -> BackendKind;

    /// This store's owner id in leases.
    fn owner(&self) -> &str;

    /// Counters of the writer.
    fn stats(&self) -> StoreStats;

    /// Creates a session; [`crate::StoreError::AlreadyExists`] when its given id is taken.
    async fn create_session(&self, new: NewSession) -> StoreResult<Session>;

    /// One session.
    async fn get_session(&self, id: &SessionId) -> StoreResult<Session>;

    /// A page of sessions, most recently updated first.
    async fn list_sessions(&self, query: &ListSessions) -> StoreResult<SessionPage>;

    /// Changes title, summary, revert record or times, and returns the result.
    async fn update_session(&self, id: &SessionId, patch: SessionPatch) -> StoreResult<Session>;

    /// Deletes a session with its messages, parts and child sessions; returns every deleted id.
    async fn delete_session(&self, id: &SessionId) -> StoreResult<Vec<SessionId>>;

    /// Copies the messages before `at` (all of them without `at`) into a new session titled
    /// "T (fork #n)" whose parent is the original; ids are new, references among them follow.
    async fn fork_session(&self, id: &SessionId, at: Option<&MessageId>) -> StoreResult<Session>;

    /// Writes a message (insert or replace).
    async fn upsert_message(&self, message: &Message) -> StoreResult<()>;

    /// Writes a part (insert or replace). For text and reasoning, an open part starts a
    /// streaming buffer and the closed part ends it.
    async fn upsert_part(&self, part: &Part) -> StoreResult<()>;

    /// Writes messages and parts in one transaction: all or none.
    async fn commit(&self, batch: &WriteBatch) -> StoreResult<()>;

    /// Appends to a streaming text or reasoning part. The text is buffered and written at
    /// least every flush interval and when the part is upserted, not once per delta. Returns
    /// once queued; a delta for a part that is not streaming is logged and dropped.
    async fn append_delta(&self, delta: PartDelta) -> StoreResult<()>;

    /// Writes every buffered delta now.
    async fn flush(&self) -> StoreResult<()>;

    /// A session's messages and parts in id order; unreadable rows are reported and skipped.
    async fn load_history(&self, session_id: &SessionId) -> StoreResult<SessionHistory>;

    /// The messages from `from` on (by id) with their parts, and how many messages the
    /// session has in all, in one snapshot: how a run's history in memory catches up after a
    /// step without reading the whole session again.
    async fn load_history_tail(&self, session_id: &SessionId, from: &MessageId) -> StoreResult<HistoryTail>;

    /// Revert cleanup: removes what follows `point` and clears the session's revert record.
    async fn remove_from(&self, session_id: &SessionId, point: &RevertPoint) -> StoreResult<Removed>;

    /// The whole session as one versioned document.
    async fn export_session(&self, id: &SessionId) -> StoreResult<SessionDocument>;

    /// Stores a document's session with its ids; [`crate::StoreError::AlreadyExists`] when the
    /// session (or one of its messages or parts) is there.
    async fn import_session(&self, document: &SessionDocument) -> StoreResult<Session>;

    /// Takes a session to run it; the store's heartbeat renews the lease until it is released
    /// or the store closes. Fails with [`crate::StoreError::Leased`] while another live
    /// process holds it. Taking it over from a dead run closes what that run left open.
    async fn acquire_lease(&self, session_id: &SessionId) -> StoreResult<Lease>;

    /// Writes buffered deltas of the session and gives its lease up (the session is idle).
    async fn release_lease(&self, session_id: &SessionId) -> StoreResult<()>;

    /// The session's live lease, if any (none means idle).
    async fn lease(&self, session_id: &SessionId) -> StoreResult<Option<Lease>>;

    /// Recovers every session whose lease expired: open tool parts become interrupted errors,
    /// open text and reasoning end, unfinished assistant messages complete with an aborted
    /// error, and the session goes idle. Opening a store runs it once.
    async fn recover_expired(&self) -> StoreResult<RecoveryReport>;

    /// Writes what is buffered, releases this store's leases and closes the connections.
    async fn close(&self) -> StoreResult<()>;
}
