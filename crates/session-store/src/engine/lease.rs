//! Ownership of running sessions: leases taken, released and read, and the recovery of
//! sessions whose holder's lease expired or whose holder died on this machine.

use std::sync::PoisonError;

use session_core::SessionId;

use super::heartbeat::lease_ttl_ms;
use super::recovery::recover_rows;
use super::{Engine, begin_write_on};
use crate::backend::{Backend, query};
use crate::error::{EntityKind, StoreError, StoreResult};
use crate::liveness;
use crate::model::{Lease, RecoveryReport};
use crate::util::{from_db, to_db};

impl<DB: Backend> Engine<DB> {
    pub(crate) async fn acquire_lease(&self, session_id: &SessionId) -> StoreResult<Lease> {
        let mut conn = self.conn().await?;
        let result = self.acquire_lease_on(conn.get()?, session_id).await;
        conn.check(result)
    }

    async fn acquire_lease_on(
        &self,
        conn: &mut DB::Connection,
        session_id: &SessionId,
    ) -> StoreResult<Lease> {
        let now = self.now();
        let expires_at = now.saturating_add(lease_ttl_ms(&self.options));
        let mut tx = begin_write_on::<DB>(conn).await?;
        let (owner, expires) = read_lease::<DB>(&mut tx, session_id).await?;
        if let (Some(owner), Some(expires)) = (&owner, expires)
            && owner != &self.owner
            && expires >= now
            && !liveness::owner_is_dead(owner)
        {
            return Err(StoreError::Leased {
                session_id: session_id.clone(),
                owner: owner.clone(),
                expires_at: expires,
            });
        }
        query::<DB>(DB::sql().set_lease)
            .bind(session_id.as_str())
            .bind(self.owner.as_str())
            .bind(to_db(expires_at))
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from_db)?;
        // A previous run by anyone else is over: close what it left open.
        let report = if owner.as_deref() != Some(self.owner.as_str()) {
            Some(recover_rows::<DB>(&mut tx, session_id, now).await?)
        } else {
            None
        };
        tx.commit().await.map_err(StoreError::from_db)?;
        if let Some(report) = report.filter(|r| r.parts + r.messages > 0) {
            tracing::info!(session_id = %session_id, parts = report.parts, messages = report.messages,
                "closed what an earlier run left open");
        }
        self.held.lock().unwrap_or_else(PoisonError::into_inner).insert(session_id.clone());
        Ok(Lease { session_id: session_id.clone(), owner: self.owner.clone(), expires_at })
    }

    pub(crate) async fn release_lease(&self, session_id: &SessionId) -> StoreResult<()> {
        self.flush_session(Some(session_id)).await?;
        // The run is over: parts it left streaming need no buffer any more.
        self.forget(vec![session_id.clone()]).await?;
        let mut conn = self.conn().await?;
        let result = query::<DB>(DB::sql().release_lease)
            .bind(session_id.as_str())
            .bind(self.owner.as_str())
            .execute(conn.get()?)
            .await
            .map_err(StoreError::from_db);
        conn.check(result)?;
        self.held.lock().unwrap_or_else(PoisonError::into_inner).remove(session_id);
        Ok(())
    }

    pub(crate) async fn lease(&self, session_id: &SessionId) -> StoreResult<Option<Lease>> {
        let mut conn = self.conn().await?;
        let result = read_lease::<DB>(conn.get()?, session_id).await;
        let (owner, expires) = conn.check(result)?;
        Ok(match (owner, expires) {
            (Some(owner), Some(expires_at))
                if expires_at >= self.now() && !liveness::owner_is_dead(&owner) =>
            {
                Some(Lease { session_id: session_id.clone(), owner, expires_at })
            }
            _ => None,
        })
    }

    /// The rows of the leases that expired by `now`, and of those still running.
    async fn leases_to_recover(
        &self,
        conn: &mut DB::Connection,
        now: u64,
    ) -> StoreResult<(Vec<DB::Row>, Vec<DB::Row>)> {
        let expired = query::<DB>(DB::sql().expired_leases)
            .bind(to_db(now))
            .fetch_all(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
        let held = query::<DB>(DB::sql().held_leases)
            .bind(to_db(now))
            .fetch_all(conn)
            .await
            .map_err(StoreError::from_db)?;
        Ok((expired, held))
    }

    pub(crate) async fn recover_expired(&self) -> StoreResult<RecoveryReport> {
        let now = self.now();
        let mut conn = self.conn().await?;
        let result = self.leases_to_recover(conn.get()?, now).await;
        let (expired, held) = conn.check(result)?;
        let mut candidates = Vec::with_capacity(expired.len());
        for row in &expired {
            candidates.push(DB::text(row, 0)?.to_owned());
        }
        // Leases still running their time-to-live whose owner died on this machine (a run
        // killed with SIGKILL) are recovered at once rather than when they expire.
        for row in &held {
            let owner = DB::text(row, 1)?;
            if owner != self.owner && liveness::owner_is_dead(owner) {
                candidates.push(DB::text(row, 0)?.to_owned());
            }
        }
        let mut report = RecoveryReport::default();
        for id in candidates {
            let session_id = SessionId::new_unchecked(id);
            let mut tx = self.begin_write().await?;
            // Re-check under the write lock: a live process may have taken it meanwhile.
            let (owner, expires) = match read_lease::<DB>(&mut tx, &session_id).await {
                Ok(lease) => lease,
                Err(StoreError::NotFound { .. }) => continue,
                Err(error) => return Err(error),
            };
            // This store is alive: its own sessions are not recovered, even late.
            let still_expired = owner.as_deref().is_some_and(|o| {
                o != self.owner && (expires.is_some_and(|e| e < now) || liveness::owner_is_dead(o))
            });
            if !still_expired {
                continue;
            }
            query::<DB>(DB::sql().set_lease)
                .bind(session_id.as_str())
                .bind(None::<&str>)
                .bind(None::<i64>)
                .execute(&mut *tx)
                .await
                .map_err(StoreError::from_db)?;
            let mut single = recover_rows::<DB>(&mut tx, &session_id, now).await?;
            tx.commit().await.map_err(StoreError::from_db)?;
            single.sessions.push(session_id);
            report.absorb(single);
        }
        Ok(report)
    }
}

/// A session's lease columns: its owner and expiry, when leased.
async fn read_lease<DB: Backend>(
    conn: &mut DB::Connection,
    session_id: &SessionId,
) -> StoreResult<(Option<String>, Option<u64>)> {
    let row = query::<DB>(DB::sql().select_lease)
        .bind(session_id.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(StoreError::from_db)?
        .ok_or_else(|| StoreError::not_found(EntityKind::Session, session_id))?;
    let owner = DB::optional_text(&row, 0)?.map(str::to_owned);
    let expires = DB::optional_integer(&row, 1)?;
    Ok((owner, expires.map(from_db)))
}
