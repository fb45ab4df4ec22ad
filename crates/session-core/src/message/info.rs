//! User and assistant messages (the `info` of a [`MessageWithParts`](super::MessageWithParts)) and
//! the errors a message records.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diff::FileDiff;
use crate::event::FinishReason;
use crate::id::{MessageId, SessionId};
use crate::usage::TokenUsage;

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
    /// The provider's content filter blocked the answer (a `content-filter` finish).
    ContentFilterError {
        /// What happened.
        message: String,
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
            Self::ContentFilterError { .. } => "ContentFilterError",
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
            | Self::ContentFilterError { message }
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

/// The summary on a user message: what its turn changed (SPEC 13 summary diffs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UserSummary {
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The files the turn changed, from its first step's snapshot to its last one.
    #[serde(default)]
    pub diffs: Vec<FileDiff>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
