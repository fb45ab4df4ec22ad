//! Time and sleeping, injected so tests run backoff without waiting (and seeding, session-store's
//! `random_entropy`). The clock trait is
//! session-core's and the system clock session-store's: one of each in the workspace.

use std::time::Duration;

use async_trait::async_trait;
pub use session_core::{Clock, SplitMix};
pub use session_store::{SystemClock, random_entropy};

/// Waits.
#[async_trait]
pub trait Sleeper: Send + Sync {
    /// Returns after `duration`.
    async fn sleep(&self, duration: Duration);
}

/// Sleeps on tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

#[async_trait]
impl Sleeper for TokioSleeper {
    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}
