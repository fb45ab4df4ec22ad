//! Time and randomness, injected so tests run backoff without waiting.

use std::time::Duration;

use async_trait::async_trait;
use session_core::Entropy;

/// Gives the current time.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// Waits.
#[async_trait]
pub trait Sleeper: Send + Sync {
    /// Returns after `duration`.
    async fn sleep(&self, duration: Duration);
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
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

/// Random draws from the standard library's randomly seeded hasher: enough for id suffixes
/// and retry jitter, with no extra crate.
#[derive(Debug, Default)]
pub struct HashEntropy {
    state: std::collections::hash_map::RandomState,
    counter: u64,
}

impl Entropy for HashEntropy {
    fn next_u64(&mut self) -> u64 {
        use std::hash::BuildHasher as _;
        self.counter = self.counter.wrapping_add(1);
        self.state.hash_one(self.counter)
    }
}

impl HashEntropy {
    /// A draw in [0, 1), for retry jitter.
    pub fn unit(&mut self) -> f64 {
        // 53 random bits make every f64 in [0, 1) with that spacing equally likely.
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
