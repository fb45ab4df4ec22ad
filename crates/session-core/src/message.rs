//! Messages, parts and tool states (SPEC 2), with OpenCode's JSON shapes.
//!
//! Serde shapes are stable: the store and the HTTP API carry exactly these.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::{FinishReason, ProviderMetadata};
use crate::id::{MessageId, PartId, SessionId};

/// A JSON object, as tool inputs and metadata are.
pub type JsonObject = Map<String, Value>;

/// Cache token counts of a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheTokens {
    /// Tokens read from the cache.
    pub read: u64,
    /// Tokens written to the cache.
    pub write: u64,
}

/// Token counts of a step after `get_usage` (SPEC 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// The provider's total, unclamped; absent when the provider gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// Prompt tokens net of cache reads and writes.
    pub input: u64,
    /// Output tokens net of reasoning.
    pub output: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Cache reads and writes.
    pub cache: CacheTokens,
}

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

/// Times of a running tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningTime {
    /// When execution started.
    pub start: u64,
}

/// Times of a completed tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedTime {
    /// When execution started.
    pub start: u64,
    /// When it ended.
    pub end: u64,
    /// When prune cleared the output from the model's view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted: Option<u64>,
}

/// Times of a failed tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorTime {
    /// When execution started.
    pub start: u64,
    /// When it failed.
    pub end: u64,
}

/// The status of a tool call, without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// Input is being written.
    Pending,
    /// The tool is executing.
    Running,
    /// The tool finished.
    Completed,
    /// The tool failed or was aborted.
    Error,
}

impl ToolStatus {
    /// The lower-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Error => "error",
        }
    }
}

/// A tool state change that SPEC 2's transition table does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal tool state transition from {from:?} to {to:?}")]
pub struct TransitionError {
    /// The current status.
    pub from: ToolStatus,
    /// The refused target status.
    pub to: ToolStatus,
}

/// The text a tool call gets when cleanup finds it unsettled (SPEC 8).
pub const TOOL_ABORTED_TEXT: &str = "Tool execution aborted";

/// The state of a tool call (SPEC 2), discriminated by `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ToolState {
    /// The model is writing the input.
    Pending {
        /// Always `{}` while pending.
        input: JsonObject,
        /// Raw input text (not accumulated; kept for shape).
        raw: String,
    },
    /// The tool is executing.
    Running {
        /// The normalized input.
        input: JsonObject,
        /// A title the tool set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Metadata the tool set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<JsonObject>,
        /// Start time.
        time: RunningTime,
    },
    /// The tool finished.
    Completed {
        /// The normalized input.
        input: JsonObject,
        /// The tool's output text.
        output: String,
        /// The title.
        title: String,
        /// Metadata.
        metadata: JsonObject,
        /// Times.
        time: CompletedTime,
        /// Files the tool returned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attachments: Option<Vec<FilePart>>,
    },
    /// The tool failed or was aborted.
    Error {
        /// The input as it was.
        input: JsonObject,
        /// What went wrong.
        error: String,
        /// Metadata (`interrupted: true` after cleanup).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<JsonObject>,
        /// Times.
        time: ErrorTime,
        /// Raw input text kept from a pending state that cleanup aborted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<String>,
        /// Title kept from a running state that cleanup aborted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
}

/// What a completed tool call produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// The title.
    pub title: String,
    /// The output text.
    pub output: String,
    /// Metadata.
    pub metadata: JsonObject,
    /// Returned files.
    pub attachments: Option<Vec<FilePart>>,
}

impl ToolState {
    /// A fresh pending state (`input: {}`, `raw: ""`).
    pub fn pending() -> Self {
        Self::Pending { input: JsonObject::new(), raw: String::new() }
    }

    /// The status without data.
    pub fn status(&self) -> ToolStatus {
        match self {
            Self::Pending { .. } => ToolStatus::Pending,
            Self::Running { .. } => ToolStatus::Running,
            Self::Completed { .. } => ToolStatus::Completed,
            Self::Error { .. } => ToolStatus::Error,
        }
    }

    /// The input in whichever state.
    pub fn input(&self) -> &JsonObject {
        match self {
            Self::Pending { input, .. }
            | Self::Running { input, .. }
            | Self::Completed { input, .. }
            | Self::Error { input, .. } => input,
        }
    }

    /// True when the call is pending or running.
    pub fn is_open(&self) -> bool {
        matches!(self, Self::Pending { .. } | Self::Running { .. })
    }

    /// The tool-call event: pending becomes running; a repeated call on a running state
    /// replaces only the input.
    pub fn start(&mut self, input: JsonObject, now: u64) -> Result<(), TransitionError> {
        match self {
            Self::Pending { .. } => {
                *self =
                    Self::Running { input, title: None, metadata: None, time: RunningTime { start: now } };
                Ok(())
            }
            Self::Running { input: current, .. } => {
                *current = input;
                Ok(())
            }
            other => Err(TransitionError { from: other.status(), to: ToolStatus::Running }),
        }
    }

    /// The tool's `ctx.metadata(...)`: updates title and metadata and resets the start time.
    pub fn update_progress(
        &mut self,
        title: Option<String>,
        metadata: Option<JsonObject>,
        now: u64,
    ) -> Result<(), TransitionError> {
        match self {
            Self::Running { title: t, metadata: m, time, .. } => {
                if title.is_some() {
                    *t = title;
                }
                if metadata.is_some() {
                    *m = metadata;
                }
                time.start = now;
                Ok(())
            }
            other => Err(TransitionError { from: other.status(), to: ToolStatus::Running }),
        }
    }

    /// A tool result: only a running call completes.
    pub fn complete(&mut self, output: ToolOutput, now: u64) -> Result<(), TransitionError> {
        match self {
            Self::Running { input, time, .. } => {
                *self = Self::Completed {
                    input: std::mem::take(input),
                    output: output.output,
                    title: output.title,
                    metadata: output.metadata,
                    time: CompletedTime { start: time.start, end: now, compacted: None },
                    attachments: output.attachments,
                };
                Ok(())
            }
            other => Err(TransitionError { from: other.status(), to: ToolStatus::Completed }),
        }
    }

    /// A tool error: only a running call fails.
    pub fn fail(&mut self, error: String, now: u64) -> Result<(), TransitionError> {
        match self {
            Self::Running { input, time, metadata, .. } => {
                *self = Self::Error {
                    input: std::mem::take(input),
                    error,
                    metadata: metadata.take(),
                    time: ErrorTime { start: time.start, end: now },
                    raw: None,
                    title: None,
                };
                Ok(())
            }
            other => Err(TransitionError { from: other.status(), to: ToolStatus::Error }),
        }
    }

    /// Cleanup of an unsettled call (SPEC 8 step 5e): pending or running becomes an error
    /// "Tool execution aborted" marked `interrupted`, keeping input, raw and title.
    pub fn abort(&mut self, now: u64) -> Result<(), TransitionError> {
        let (input, raw, title, metadata, start) = match self {
            Self::Pending { input, raw } => {
                (std::mem::take(input), Some(std::mem::take(raw)), None, None, now)
            }
            Self::Running { input, title, metadata, time } => {
                (std::mem::take(input), None, title.take(), metadata.take(), time.start)
            }
            other => return Err(TransitionError { from: other.status(), to: ToolStatus::Error }),
        };
        let mut metadata = metadata.unwrap_or_default();
        metadata.insert("interrupted".to_owned(), Value::Bool(true));
        *self = Self::Error {
            input,
            error: TOOL_ABORTED_TEXT.to_owned(),
            metadata: Some(metadata),
            time: ErrorTime { start, end: now },
            raw,
            title,
        };
        Ok(())
    }

    /// Prune: marks a completed output as cleared from the model's view.
    pub fn mark_compacted(&mut self, now: u64) -> Result<(), TransitionError> {
        match self {
            Self::Completed { time, .. } => {
                time.compacted = Some(now);
                Ok(())
            }
            other => Err(TransitionError { from: other.status(), to: ToolStatus::Completed }),
        }
    }

    /// True for an error left by cleanup (`metadata.interrupted == true`).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Self::Error { metadata: Some(m), .. } if m.get("interrupted") == Some(&Value::Bool(true)))
    }
}

/// A tool call part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPart {
    /// The provider's call id.
    #[serde(rename = "callID")]
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Lifecycle state.
    pub state: ToolState,
    /// Provider metadata, plus `providerExecuted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
}

impl ToolPart {
    /// True when the provider itself runs this tool.
    pub fn provider_executed(&self) -> bool {
        self.metadata.as_ref().and_then(|m| m.get("providerExecuted")) == Some(&Value::Bool(true))
    }
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

/// A creation time (epoch ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedTime {
    /// When it was created.
    pub created: u64,
}

/// Creation and completion times of an assistant message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantTime {
    /// When it was created.
    pub created: u64,
    /// When processing finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
}

/// Working directories of an assistant message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagePath {
    /// Current directory.
    pub cwd: String,
    /// Workspace root.
    pub root: String,
}

/// A provider and model pair.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    /// Provider id.
    #[serde(rename = "providerID")]
    pub provider_id: String,
    /// Model id.
    #[serde(rename = "modelID")]
    pub model_id: String,
    /// Model variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// A message error, serialized as `{"name", "data"}` (SPEC 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", content = "data")]
pub enum MessageError {
    /// Authentication with the provider failed.
    ProviderAuthError {
        /// Provider id.
        #[serde(rename = "providerID")]
        provider_id: String,
        /// What the provider said.
        message: String,
    },
    /// Anything not classified further.
    UnknownError {
        /// What happened.
        message: String,
    },
    /// The output token limit cut the answer.
    MessageOutputLengthError {},
    /// The user aborted.
    MessageAbortedError {
        /// "Aborted".
        message: String,
    },
    /// Structured output was requested and not produced.
    StructuredOutputError {
        /// What happened.
        message: String,
        /// Retries used.
        retries: u32,
    },
    /// The request did not fit the model's context.
    ContextOverflowError {
        /// What the provider said.
        message: String,
        /// The provider's body.
        #[serde(rename = "responseBody", default, skip_serializing_if = "Option::is_none")]
        response_body: Option<String>,
    },
    /// An HTTP error from the provider.
    #[serde(rename = "APIError", rename_all = "camelCase")]
    ApiError {
        /// The derived message.
        message: String,
        /// HTTP status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status_code: Option<u16>,
        /// The provider's retryable flag.
        is_retryable: bool,
        /// Response headers (lower-case names).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_headers: Option<std::collections::BTreeMap<String, String>>,
        /// Response body.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_body: Option<String>,
        /// Extra data such as `code`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<std::collections::BTreeMap<String, String>>,
    },
}

impl MessageError {
    /// The error's `name`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ProviderAuthError { .. } => "ProviderAuthError",
            Self::UnknownError { .. } => "UnknownError",
            Self::MessageOutputLengthError {} => "MessageOutputLengthError",
            Self::MessageAbortedError { .. } => "MessageAbortedError",
            Self::StructuredOutputError { .. } => "StructuredOutputError",
            Self::ContextOverflowError { .. } => "ContextOverflowError",
            Self::ApiError { .. } => "APIError",
        }
    }

    /// The error's message text (empty for an output-length error).
    pub fn message(&self) -> &str {
        match self {
            Self::ProviderAuthError { message, .. }
            | Self::UnknownError { message }
            | Self::MessageAbortedError { message }
            | Self::StructuredOutputError { message, .. }
            | Self::ContextOverflowError { message, .. }
            | Self::ApiError { message, .. } => message,
            Self::MessageOutputLengthError {} => "",
        }
    }

    /// The error for a user abort.
    pub fn aborted() -> Self {
        Self::MessageAbortedError { message: "Aborted".to_owned() }
    }
}

/// An assistant message (SPEC 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Message id.
    pub id: MessageId,
    /// Owning session.
    #[serde(rename = "sessionID")]
    pub session_id: SessionId,
    /// Times.
    pub time: AssistantTime,
    /// Why processing failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<MessageError>,
    /// The user message answered.
    #[serde(rename = "parentID")]
    pub parent_id: MessageId,
    /// Model id.
    #[serde(rename = "modelID")]
    pub model_id: String,
    /// Provider id.
    #[serde(rename = "providerID")]
    pub provider_id: String,
    /// Deprecated alias of `agent`.
    pub mode: String,
    /// Agent name.
    pub agent: String,
    /// Working directories.
    pub path: MessagePath,
    /// True for compaction summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<bool>,
    /// Accumulated cost of all steps in US dollars.
    #[serde(with = "crate::usage::price")]
    pub cost: Decimal,
    /// Tokens of the last step.
    pub tokens: TokenUsage,
    /// Structured output, when requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Model variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Finish reason of the last step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
}

impl AssistantMessage {
    /// True for a compaction summary.
    pub fn is_summary(&self) -> bool {
        self.summary == Some(true)
    }
}

/// A user message's requested output format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputFormat {
    /// Free text.
    Text,
    /// JSON matching a schema.
    JsonSchema {
        /// The schema.
        schema: Value,
        /// How often to retry a reply without structured output.
        #[serde(rename = "retryCount", default = "default_retry_count")]
        retry_count: u32,
    },
}

fn default_retry_count() -> u32 {
    2
}

/// The diff summary on a user message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserSummary {
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// File diffs.
    #[serde(default)]
    pub diffs: Vec<Value>,
}

/// A user message (SPEC 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Message id.
    pub id: MessageId,
    /// Owning session.
    #[serde(rename = "sessionID")]
    pub session_id: SessionId,
    /// Creation time.
    pub time: CreatedTime,
    /// Requested output format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<OutputFormat>,
    /// Diff summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<UserSummary>,
    /// Agent name.
    pub agent: String,
    /// Model to use.
    pub model: ModelRef,
    /// Extra system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Tools turned on or off by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<std::collections::BTreeMap<String, bool>>,
}

/// A message, tagged by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
}

impl Message {
    /// Message id.
    pub fn id(&self) -> &MessageId {
        match self {
            Self::User(m) => &m.id,
            Self::Assistant(m) => &m.id,
        }
    }

    /// Owning session.
    pub fn session_id(&self) -> &SessionId {
        match self {
            Self::User(m) => &m.session_id,
            Self::Assistant(m) => &m.session_id,
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

/// Normalizes a tool call input: an object stays, anything else becomes `{value: input}`.
pub fn normalize_tool_input(input: Value) -> JsonObject {
    match input {
        Value::Object(object) => object,
        other => {
            let mut object = JsonObject::new();
            object.insert("value".to_owned(), other);
            object
        }
    }
}

/// Metadata with `providerExecuted: true` added.
pub(crate) fn with_provider_executed(metadata: Option<ProviderMetadata>) -> JsonObject {
    let mut metadata = metadata.unwrap_or_default();
    metadata.insert("providerExecuted".to_owned(), Value::Bool(true));
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn running() -> ToolState {
        let mut state = ToolState::pending();
        assert!(state.start(normalize_tool_input(json!({"a": 1})), 10).is_ok());
        state
    }

    #[test]
    fn pending_serializes_like_opencode() {
        let json = serde_json::to_value(ToolState::pending()).unwrap_or_default();
        assert_eq!(json, json!({"status": "pending", "input": {}, "raw": ""}));
    }

    #[test]
    fn only_running_calls_complete_or_fail() {
        let mut pending = ToolState::pending();
        assert!(pending.complete(ToolOutput::default(), 1).is_err());
        assert!(pending.fail("x".into(), 1).is_err());
        let mut state = running();
        assert!(state.complete(ToolOutput { output: "ok".into(), ..ToolOutput::default() }, 20).is_ok());
        assert_eq!(state.status(), ToolStatus::Completed);
        assert!(state.fail("late".into(), 30).is_err());
        assert!(state.start(JsonObject::new(), 30).is_err());
        assert!(state.abort(30).is_err());
        assert!(state.mark_compacted(40).is_ok());
    }

    #[test]
    fn abort_keeps_input_and_marks_interrupted() {
        let mut state = running();
        assert!(state.abort(99).is_ok());
        let json = serde_json::to_value(&state).unwrap_or_default();
        assert_eq!(
            json,
            json!({"status": "error", "input": {"a": 1}, "error": "Tool execution aborted",
                   "metadata": {"interrupted": true}, "time": {"start": 10, "end": 99}})
        );
        assert!(state.is_interrupted());
        let mut pending = ToolState::pending();
        assert!(pending.abort(5).is_ok());
        assert_eq!(
            serde_json::to_value(&pending).unwrap_or_default(),
            json!({"status": "error", "input": {}, "error": "Tool execution aborted",
                   "metadata": {"interrupted": true}, "time": {"start": 5, "end": 5}, "raw": ""})
        );
    }

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
    fn errors_serialize_as_name_and_data() {
        assert_eq!(
            serde_json::to_value(MessageError::MessageOutputLengthError {}).unwrap_or_default(),
            json!({"name": "MessageOutputLengthError", "data": {}})
        );
        assert_eq!(
            serde_json::to_value(MessageError::ApiError {
                message: "boom".into(),
                status_code: Some(500),
                is_retryable: true,
                response_headers: None,
                response_body: None,
                metadata: None,
            })
            .unwrap_or_default(),
            json!({"name": "APIError", "data": {"message": "boom", "statusCode": 500, "isRetryable": true}})
        );
    }

    #[test]
    fn unknown_finish_reasons_read_as_unknown() {
        let reason: FinishReason = serde_json::from_value(json!("other")).unwrap_or(FinishReason::Stop);
        assert_eq!(reason, FinishReason::Unknown);
    }
}
