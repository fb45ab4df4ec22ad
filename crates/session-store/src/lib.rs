//! Persistence for the session runtime: sessions, messages and parts on SQLite (the embedded
//! default: one file, WAL) or PostgreSQL (several runtime instances sharing sessions).
//!
//! The crate owns:
//! - the [`Store`] trait the runtime writes and reads through, with two implementations that
//!   pass the same test suite, [`SqliteStore`] and [`PgStore`], and [`open`] for a
//!   [`DatabaseConfig`];
//! - the [`Session`] record (OpenCode's JSON names: slug, path, agent, model, permission,
//!   and the `cost` and `tokens` totals, which the store keeps as step-finish parts are
//!   written and removed) and the versioned export document, [`SessionDocument`];
//! - the schema, as embedded per-backend migrations, with runtime-checked queries; money is
//!   exact (TEXT on SQLite, NUMERIC on PostgreSQL) and times are epoch milliseconds;
//! - write ordering and durability: one writer task per store commits each caller's rows
//!   all-or-nothing (group commit under load) and coalesces text and reasoning deltas, written
//!   at least every flush interval and at part end;
//! - ownership and crash recovery: a running session is leased by its process and renewed by
//!   a heartbeat; sessions whose lease expired are recovered as SPEC 8's cleanup would have
//!   left them (interrupted tools, closed text, aborted assistant messages, idle session);
//! - tolerance of bad data: unreadable rows are reported with their ids and skipped, and parts
//!   of kinds from newer versions are kept as raw JSON.
//!
//! ```no_run
//! use session_store::{NewSession, SqliteConfig, SqliteStore, Store, StoreOptions};
//!
//! # async fn example() -> Result<(), session_store::StoreError> {
//! let config = SqliteConfig::new("/tmp/sessions.db");
//! let store = SqliteStore::open(&config, StoreOptions::default()).await?;
//! let session = store.create_session(NewSession::new("project", "/work/project")).await?;
//! store.acquire_lease(&session.id).await?; // this process runs it now
//! // ... upsert_message / upsert_part / append_delta / commit as the processor's effects say ...
//! store.release_lease(&session.id).await?;
//! let history = store.load_history(&session.id).await?;
//! assert!(history.skipped.is_empty());
//! store.close().await?;
//! # Ok(()) }
//! ```
//!
//! It deliberately does not own the data model (messages, parts and tool states are
//! `session-core`'s), events and the bus, session status beyond the lease, or where the
//! SQLite file lives and which database to use: the caller decides and passes a
//! configuration. It reads no environment variables.

mod backend;
mod bulk;
mod config;
mod document;
mod engine;
mod error;
/// The row decoders under arbitrary input, for the `store_rows` fuzz target only.
#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzzing;
mod liveness;
mod model;
mod notify;
mod rows;
mod sql;
mod store;
mod stores;
mod usage;
mod util;
mod writer;

pub use config::{Clock, DatabaseConfig, PgConfig, SqliteConfig, StoreOptions, SystemClock, random_entropy};
pub use document::{DOCUMENT_VERSION, DocumentMessage, DocumentPart, SessionDocument};
pub use error::{EntityKind, StoreError, StoreResult};
pub use model::{
    AgentModel, DEFAULT_VARIANT, HistoryTail, Lease, ListSessions, NewSession, PartDelta, RawPart,
    RecoveryReport, Removed, RevertPoint, RevertRecord, Session, SessionCursor, SessionHistory, SessionModel,
    SessionPage, SessionPatch, SessionSummary, SessionTime, SessionTokens, SkippedRow, StoreStats,
    WriteBatch,
};
pub use notify::{MAX_NOTICE_BYTES, NoticeListener, Notifier, NotifyError, decode_notice, encode_notice};
pub use store::{BackendKind, Store};
pub use stores::{PgStore, SqliteStore, open};
