//! The store's logic, written once for both backends: one [`Engine`] per store owns the pool,
//! the writer task and the lease heartbeat; its operations are split by concern into the
//! submodules.

mod heartbeat;
mod history;
mod kept;
mod lease;
mod recovery;
mod sessions;
mod transfer;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use session_core::SessionId;
use sqlx::Pool;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::backend::{Backend, query};
use crate::config::StoreOptions;
use crate::error::{StoreError, StoreResult};
use crate::liveness;
use crate::model::{SkippedRow, StoreStats};
use crate::rows::RowWrite;
use crate::util::Ids;
use crate::writer::{CacheOp, Command, Counters, Writer};
use kept::{Conn, KeptConnection};

/// Capacity of the writer's queue; senders wait when it is full.
const QUEUE: usize = 4096;

/// One store on one backend: the pool, the writer task and the lease heartbeat.
pub(crate) struct Engine<DB: Backend> {
    pool: Pool<DB>,
    /// Reads and short statements run here while no other operation holds it.
    kept: KeptConnection<DB>,
    commands: mpsc::Sender<Command>,
    options: StoreOptions,
    owner: String,
    ids: Ids,
    counters: Arc<Counters>,
    held: Mutex<HashSet<SessionId>>,
    tasks: Mutex<Tasks>,
}

/// The store's background tasks, taken on close.
struct Tasks {
    writer: Option<JoinHandle<()>>,
    heartbeat: Option<JoinHandle<()>>,
    heartbeat_stop: Option<oneshot::Sender<()>>,
}

impl<DB: Backend> std::fmt::Debug for Engine<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &DB::NAME)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl<DB: Backend> Engine<DB> {
    /// Starts the writer and the heartbeat on a migrated pool, then recovers expired leases.
    pub(crate) async fn start(pool: Pool<DB>, options: StoreOptions) -> StoreResult<Self> {
        let now = options.clock.now_ms();
        let ids = Ids::new(now);
        let owner = match &options.owner {
            Some(owner) => owner.clone(),
            // The suffix lets a later process see that this one died (see `liveness`).
            None => format!("pid{}-{}{}", std::process::id(), ids.token(), liveness::owner_suffix()),
        };
        let counters = Arc::new(Counters::default());
        let (commands, rx) = mpsc::channel(QUEUE);
        let writer = Writer::new(pool.clone(), options.flush_interval, Arc::clone(&counters));
        let writer = tokio::spawn(writer.run(rx));
        let (stop, stopped) = oneshot::channel();
        let heartbeat = tokio::spawn(heartbeat::renew_leases::<DB>(
            pool.clone(),
            owner.clone(),
            options.clone(),
            stopped,
        ));
        let engine = Self {
            pool,
            kept: KeptConnection::default(),
            commands,
            options,
            owner,
            ids,
            counters,
            held: Mutex::new(HashSet::new()),
            tasks: Mutex::new(Tasks {
                writer: Some(writer),
                heartbeat: Some(heartbeat),
                heartbeat_stop: Some(stop),
            }),
        };
        if engine.options.recover_on_open {
            let report = engine.recover_expired().await?;
            if !report.sessions.is_empty() {
                tracing::info!(
                    sessions = report.sessions.len(),
                    parts = report.parts,
                    messages = report.messages,
                    "recovered sessions whose lease had expired"
                );
            }
        }
        Ok(engine)
    }

    fn now(&self) -> u64 {
        self.options.clock.now_ms()
    }

    /// The pool, for tests that look at its connections.
    #[cfg(test)]
    pub(crate) fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    pub(crate) fn stats(&self) -> StoreStats {
        self.counters.snapshot()
    }

    async fn send(&self, command: Command) -> StoreResult<()> {
        self.commands.send(command).await.map_err(|_| StoreError::Closed)
    }

    async fn write(&self, rows: Vec<RowWrite>, cache: Vec<CacheOp>) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Write { rows, cache, ack }).await?;
        done.await.map_err(|_| StoreError::Closed)?
    }

    async fn flush_session(&self, session: Option<&SessionId>) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Flush { session: session.cloned(), ack }).await?;
        done.await.map_err(|_| StoreError::Closed)?
    }

    async fn forget(&self, sessions: Vec<SessionId>) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Forget { sessions, ack }).await?;
        done.await.map_err(|_| StoreError::Closed)
    }

    /// A connection for one operation: the kept one when free, else one of the pool's.
    async fn conn(&self) -> StoreResult<Conn<'_, DB>> {
        self.kept.take(&self.pool).await
    }

    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, DB>> {
        self.pool.begin_with(DB::sql().begin_write).await.map_err(StoreError::from_db)
    }

    async fn begin_read(&self) -> StoreResult<sqlx::Transaction<'static, DB>> {
        self.pool.begin_with(DB::sql().begin_read).await.map_err(StoreError::from_db)
    }

    /// Writes what is buffered, stops the tasks, releases this store's leases, closes the pool.
    pub(crate) async fn close(&self) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        if self.commands.send(Command::Stop { ack }).await.is_ok() {
            let _ = done.await;
        }
        let (writer, heartbeat, stop) = {
            let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            (tasks.writer.take(), tasks.heartbeat.take(), tasks.heartbeat_stop.take())
        };
        drop(stop);
        if let Some(heartbeat) = heartbeat {
            let _ = heartbeat.await;
        }
        if let Some(writer) = writer {
            let _ = writer.await;
        }
        let held: Vec<SessionId> = self.held.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        for session_id in held {
            let result = query::<DB>(DB::sql().release_lease)
                .bind(session_id.as_str())
                .bind(self.owner.as_str())
                .execute(&self.pool)
                .await;
            if let Err(error) = result {
                tracing::warn!(session_id = %session_id, %error, "cannot release a lease on close");
            }
        }
        // The pool's close waits for every connection to come back, the kept one included.
        self.kept.release().await;
        self.pool.close().await;
        Ok(())
    }
}

/// A write transaction on `conn` (the kept connection, mostly).
async fn begin_write_on<DB: Backend>(conn: &mut DB::Connection) -> StoreResult<sqlx::Transaction<'_, DB>> {
    let statement = sqlx::SqlSafeStr::into_sql_str(DB::sql().begin_write);
    sqlx::Transaction::begin(conn, Some(statement)).await.map_err(StoreError::from_db)
}

/// Logs rows that were skipped because they no longer parse.
fn report_skipped(rows: &[SkippedRow]) {
    for row in rows {
        tracing::warn!(kind = %row.kind, id = %row.id, session_id = %row.session_id,
            message_id = row.message_id.as_deref().unwrap_or(""), reason = %row.reason,
            "skipped a stored row that no longer parses");
    }
}
