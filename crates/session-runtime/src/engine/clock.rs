//! Sleeping and seeding, injected so tests run backoff without waiting. The clock trait is
//! session-core's and the system clock session-store's: one of each in the workspace.

use std::hash::{BuildHasher as _, Hasher as _};
use std::time::Duration;

use async_trait::async_trait;
pub use session_core::{Clock, SplitMix};
pub use session_store::SystemClock;

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

/// A generator seeded from the standard library's randomly keyed hasher and `salt` (the
/// time, say): enough for id suffixes and retry jitter, with no extra crate.
pub fn random_entropy(salt: u64) -> SplitMix {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(salt);
    hasher.write_u32(std::process::id());
    SplitMix::new(hasher.finish())
}
