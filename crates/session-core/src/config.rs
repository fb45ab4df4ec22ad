//! The slices of configuration that the pure rules read.

use serde::{Deserialize, Serialize};

/// `compaction` settings (OpenCode's keys), as far as the pure rules need them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionConfig {
    /// `false` disables automatic compaction; unset means on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<bool>,
    /// `true` enables pruning of old tool outputs after a run (opt-in, SPEC 10.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Tokens reserved below the input limit; unset means `min(20000, max output)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved: Option<u64>,
    /// How many recent user turns compaction may keep verbatim (default 2, 0 disables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_turns: Option<i64>,
    /// Token budget of the kept tail; unset means a quarter of usable, within 2000..=8000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_recent_tokens: Option<u64>,
}

impl CompactionConfig {
    /// Whether automatic compaction is on (anything but an explicit `false`).
    pub fn auto_enabled(&self) -> bool {
        self.auto != Some(false)
    }
}
