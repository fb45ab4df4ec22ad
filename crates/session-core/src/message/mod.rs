//! The message model (SPEC 2): messages, parts and tool states, with OpenCode's JSON shapes.
//!
//! Serde shapes are stable: the store and the HTTP API carry exactly these. The submodules are
//! private; every type is reached as `session_core::message::Name`.
//!
//! - `info`: user and assistant messages and their errors;
//! - `diff`: per-file change counts between two snapshots (summary diffs);
//! - `patch`: unified diff text in OpenCode's form;
//! - `part`: the content of each part kind;
//! - `tool_state`: a tool call part and its state machine;
//! - here: [`Part`], the union [`PartKind`] and [`MessageWithParts`].

mod diff;
mod info;
mod part;
mod patch;
mod tool_state;

use serde::{Deserialize, Serialize};

use crate::id::{MessageId, PartId, SessionId};

pub use diff::{FileDiff, FileStatus, diff_totals};
pub use info::{
    AssistantMessage, AssistantTime, CreatedTime, Message, MessageError, MessagePath, ModelRef, OutputFormat,
    UserMessage, UserSummary,
};
pub use part::{
    AgentPart, CompactionPart, FilePart, PartTime, PatchPart, ReasoningPart, RetryPart, SnapshotPart,
    StepFinishPart, StepStartPart, SubtaskPart, TextPart,
};
pub use patch::two_files_patch;
pub(crate) use tool_state::with_provider_executed;
pub use tool_state::{
    CompletedTime, ErrorTime, RunningTime, TOOL_ABORTED_TEXT, ToolOutput, ToolPart, ToolState, ToolStatus,
    TransitionError, normalize_tool_input,
};

/// The kind-specific content of a part, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum PartKind {
    /// Text.
    Text(TextPart),
    /// Reasoning.
    Reasoning(ReasoningPart),
    /// A file.
    File(FilePart),
    /// A tool call.
    Tool(ToolPart),
    /// Step start.
    StepStart(StepStartPart),
    /// Step finish.
    StepFinish(StepFinishPart),
    /// Snapshot.
    Snapshot(SnapshotPart),
    /// Patch.
    Patch(PatchPart),
    /// Agent mention.
    Agent(AgentPart),
    /// Subtask.
    Subtask(SubtaskPart),
    /// Retry record.
    Retry(RetryPart),
    /// Compaction marker.
    Compaction(CompactionPart),
}

impl PartKind {
    /// The `type` string of this kind.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Reasoning(_) => "reasoning",
            Self::File(_) => "file",
            Self::Tool(_) => "tool",
            Self::StepStart(_) => "step-start",
            Self::StepFinish(_) => "step-finish",
            Self::Snapshot(_) => "snapshot",
            Self::Patch(_) => "patch",
            Self::Agent(_) => "agent",
            Self::Subtask(_) => "subtask",
            Self::Retry(_) => "retry",
            Self::Compaction(_) => "compaction",
        }
    }
}

/// A stored message part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// Part id; parts are ordered by it.
    pub id: PartId,
    /// Owning session.
    #[serde(rename = "sessionID")]
    pub session_id: SessionId,
    /// Owning message.
    #[serde(rename = "messageID")]
    pub message_id: MessageId,
    /// The content.
    #[serde(flatten)]
    pub kind: PartKind,
}

impl Part {
    /// The tool part inside, if this is one.
    pub fn as_tool(&self) -> Option<&ToolPart> {
        match &self.kind {
            PartKind::Tool(tool) => Some(tool),
            _ => None,
        }
    }
}

/// A message together with its parts in id order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageWithParts {
    /// The message.
    pub info: Message,
    /// Its parts, ordered by id.
    pub parts: Vec<Part>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::FinishReason;
    use crate::usage::TokenUsage;
    use rust_decimal::Decimal;
    use serde_json::json;

    #[test]
    fn part_json_is_flat_with_type() {
        let part = Part {
            id: PartId::new_unchecked("prt_1"),
            session_id: SessionId::new_unchecked("ses_1"),
            message_id: MessageId::new_unchecked("msg_1"),
            kind: PartKind::StepFinish(StepFinishPart {
                reason: FinishReason::ToolCalls,
                snapshot: None,
                cost: Decimal::new(105, 4),
                tokens: TokenUsage::default(),
            }),
        };
        let json = serde_json::to_value(&part).unwrap_or_default();
        assert_eq!(
            json,
            json!({"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "step-finish",
                   "reason": "tool-calls", "cost": 0.0105,
                   "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}})
        );
        let back: Part = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, part);
    }

    #[test]
    fn unknown_finish_reasons_read_as_unknown() {
        let reason: FinishReason = serde_json::from_value(json!("other")).unwrap_or(FinishReason::Stop);
        assert_eq!(reason, FinishReason::Unknown);
    }
}
