//! A tool call part and the state machine of its [`ToolState`] (SPEC 2's transition table).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::part::FilePart;
use crate::event::ProviderMetadata;
use crate::js_json::JsonObject;

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

    /// A tool error: only a running call fails, to exactly `{input, error, time}` (SPEC 1.2
    /// `failToolCall`): the running title and metadata are not carried over.
    pub fn fail(&mut self, error: String, now: u64) -> Result<(), TransitionError> {
        match self {
            Self::Running { input, time, .. } => {
                *self = Self::Error {
                    input: std::mem::take(input),
                    error,
                    metadata: None,
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
    fn spec_1_2_a_failed_call_keeps_exactly_input_error_and_time() {
        let mut state = running();
        let mut progress = JsonObject::new();
        progress.insert("output".to_owned(), json!("partial"));
        assert!(state.update_progress(Some("Running".into()), Some(progress), 15).is_ok());
        assert!(state.fail("boom".into(), 30).is_ok());
        let json = serde_json::to_value(&state).unwrap_or_default();
        assert_eq!(
            json,
            json!({"status": "error", "input": {"a": 1}, "error": "boom", "time": {"start": 15, "end": 30}})
        );
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
}
