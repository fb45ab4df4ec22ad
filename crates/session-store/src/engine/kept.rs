//! The engine's kept connection: reads and the engine's own short statements run on
//! one connection the engine keeps, when no other operation holds it, instead of on one
//! taken from the pool for each. sqlx's pool tests every connection it gets back with a
//! round trip (a ping to SQLite's worker thread, a network round trip to PostgreSQL), and
//! opens a new connection, with its own SQLite worker thread, whenever the last one has not
//! come back yet; a run that reads the history after each step paid both. Concurrent
//! operations (a server's sessions) take connections from the pool as before.

use sqlx::Pool;
use sqlx::pool::PoolConnection;
use tokio::sync::{Mutex, MutexGuard};

use crate::backend::Backend;
use crate::error::{StoreError, StoreResult};

/// The slot of the kept connection.
pub(super) struct KeptConnection<DB: Backend> {
    slot: Mutex<Option<PoolConnection<DB>>>,
}

impl<DB: Backend> Default for KeptConnection<DB> {
    fn default() -> Self {
        Self { slot: Mutex::new(None) }
    }
}

impl<DB: Backend> KeptConnection<DB> {
    /// The kept connection when it is free (taken from `pool` the first time), else one of
    /// `pool`'s.
    pub(super) async fn take<'a>(&'a self, pool: &Pool<DB>) -> StoreResult<Conn<'a, DB>> {
        let Ok(mut slot) = self.slot.try_lock() else {
            return Ok(Conn { slot: None, pooled: Some(acquire(pool).await?), settled: false });
        };
        if slot.is_none() {
            *slot = Some(acquire(pool).await?);
        }
        Ok(Conn { slot: Some(slot), pooled: None, settled: false })
    }

    /// Gives the kept connection back to the pool (before the pool closes).
    pub(super) async fn release(&self) {
        self.slot.lock().await.take();
    }
}

async fn acquire<DB: Backend>(pool: &Pool<DB>) -> StoreResult<PoolConnection<DB>> {
    pool.acquire().await.map_err(StoreError::from_db)
}

/// A connection for one operation: the engine's kept one, or one of the pool's.
///
/// An operation that fails, or is dropped before it ends, gives the kept connection back to
/// the pool: it may be what failed, or hold a transaction whose rollback sqlx only queues.
/// The pool tests a connection it gets back with a round trip, which sends that rollback
/// (SQLite's `BEGIN IMMEDIATE` would otherwise keep the write lock), and closes one that no
/// longer answers; the next operation keeps a fresh one.
pub(super) struct Conn<'a, DB: Backend> {
    slot: Option<MutexGuard<'a, Option<PoolConnection<DB>>>>,
    pooled: Option<PoolConnection<DB>>,
    /// The operation ended well: the kept connection stays kept.
    settled: bool,
}

impl<DB: Backend> Conn<'_, DB> {
    /// The connection to run statements on.
    pub(super) fn get(&mut self) -> StoreResult<&mut DB::Connection> {
        let connection = match &mut self.slot {
            Some(slot) => slot.as_mut(),
            None => self.pooled.as_mut(),
        };
        connection.map(|connection| &mut **connection).ok_or(StoreError::Closed)
    }

    /// Passes the operation's `result` on; a success keeps the kept connection kept.
    pub(super) fn check<T>(mut self, result: StoreResult<T>) -> StoreResult<T> {
        self.settled = result.is_ok();
        result
    }
}

impl<DB: Backend> Drop for Conn<'_, DB> {
    fn drop(&mut self) {
        if !self.settled
            && let Some(slot) = &mut self.slot
        {
            // Back to the pool, which tests it (see above).
            slot.take();
        }
    }
}
