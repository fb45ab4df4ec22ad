//! The content of each part kind except tool calls (those are in `tool_state`).

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::info::{CreatedTime, MessageError, ModelRef};
use crate::event::FinishReason;
use crate::id::MessageId;
use crate::js_json::JsonObject;
use crate::usage::TokenUsage;

/// Start and optional end of a text or reasoning part (epoch ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartTime {
    /// When the part started.
    pub start: u64,
    /// When the part ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
}

/// A text part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Made by the runtime rather than typed by the user or the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<bool>,
    /// Kept in history but never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<bool>,
    /// Start and end times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<PartTime>,
    /// Provider metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

/// A reasoning part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningPart {
    /// The reasoning text.
    pub text: String,
    /// Provider metadata (for example a signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Start and end times.
    pub time: PartTime,
}

/// A file attached to a message or a tool result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FilePart {
    /// Media type.
    pub mime: String,
    /// File name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// A data or file URL.
    pub url: String,
    /// Where the file came from (file, symbol or resource with a text span).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}
/// Marks the start of a model step.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStartPart {
    /// Working tree snapshot hash at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

/// Settlement of a model step (SPEC 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFinishPart {
    /// Why the step ended.
    pub reason: FinishReason,
    /// Working tree snapshot hash at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// Cost of this step in US dollars.
    #[serde(with = "crate::usage::price")]
    pub cost: Decimal,
    /// Tokens of this step.
    pub tokens: TokenUsage,
}

/// A standalone snapshot marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotPart {
    /// Snapshot hash.
    pub snapshot: String,
}

/// Files a step changed, against the snapshot taken before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchPart {
    /// Snapshot hash before the step.
    pub hash: String,
    /// Absolute forward-slash paths of changed files.
    pub files: Vec<String>,
}

/// An agent mention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentPart {
    /// Agent name.
    pub name: String,
    /// Where in the text the mention was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

/// A subtask handed to another agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubtaskPart {
    /// The prompt for the subagent.
    pub prompt: String,
    /// Short description.
    pub description: String,
    /// Agent name.
    pub agent: String,
    /// Model override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// The command that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// A retry record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPart {
    /// Attempt number, 1 for the first retry.
    pub attempt: u32,
    /// The error that caused it.
    pub error: MessageError,
    /// When it was recorded.
    pub time: CreatedTime,
}

/// Marks a compaction request in a user message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionPart {
    /// Started automatically rather than by the user.
    pub auto: bool,
    /// Started because the provider rejected an oversize request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<bool>,
    /// First message kept verbatim after the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_start_id: Option<MessageId>,
}
