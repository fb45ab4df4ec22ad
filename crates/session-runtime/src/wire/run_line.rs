//! The lines of `session run --format json`: OpenCode 1.18's `opencode run --format json`
//! lines, `{type, timestamp, sessionID, part}` or `{type: "error", timestamp, sessionID,
//! error}`.

use serde::Serialize;
use session_core::{MessageError, Part, SessionId};

/// The `type` of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunLineKind {
    /// A step began (its `step-start` part).
    StepStart,
    /// A text part ended.
    Text,
    /// A reasoning part ended (with `--thinking` only).
    Reasoning,
    /// A tool call completed or failed.
    ToolUse,
    /// A step finished (its `step-finish` part: reason, tokens, cost).
    StepFinish,
    /// The session reported an error.
    Error,
}

/// One line of output, borrowed from the event it shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunLine<'a> {
    /// What the line shows.
    #[serde(rename = "type")]
    pub kind: RunLineKind,
    /// When the line was written, in milliseconds since the epoch.
    pub timestamp: u64,
    /// The run's session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The part shown (every kind but `error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<&'a Part>,
    /// The error (`error` lines only), as `{name, data}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a MessageError>,
}
