//! The lease heartbeat: one task per store renews every lease the store holds.

use std::time::Duration;

use sqlx::Pool;
use tokio::sync::oneshot;

use crate::backend::{Backend, query};
use crate::config::StoreOptions;
use crate::util::to_db;

/// A lease's time-to-live in milliseconds.
pub(super) fn lease_ttl_ms(options: &StoreOptions) -> u64 {
    u64::try_from(options.lease_ttl.as_millis()).unwrap_or(u64::MAX)
}

/// Renews every lease this owner holds, every third of the lease time, until stopped.
pub(super) async fn renew_leases<DB: Backend>(
    pool: Pool<DB>,
    owner: String,
    options: StoreOptions,
    mut stop: oneshot::Receiver<()>,
) {
    let period = (options.lease_ttl / 3).max(Duration::from_millis(10));
    loop {
        if tokio::time::timeout(period, &mut stop).await.is_ok() {
            return;
        }
        let expires_at = options.clock.now_ms().saturating_add(lease_ttl_ms(&options));
        let result = query::<DB>(DB::sql().renew_leases)
            .bind(owner.as_str())
            .bind(to_db(expires_at))
            .execute(&pool)
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "lease heartbeat failed");
        }
    }
}
