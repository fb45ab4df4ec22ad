//! Session status (SPEC 11): idle, busy, or waiting to retry.

use serde::{Deserialize, Serialize};

/// What a session is doing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SessionStatus {
    /// Nothing runs.
    Idle,
    /// A prompt runs.
    Busy,
    /// Waiting before retrying a failed provider call.
    Retry {
        /// Retry number, 1 for the first.
        attempt: u32,
        /// Why the call failed.
        message: String,
        /// When the retry starts (epoch ms).
        next: u64,
    },
}
