//! The provider-neutral stream events (SPEC 1.1) that adapters produce and the processor reads.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Provider-specific metadata carried on events and parts, keyed by provider.
pub type ProviderMetadata = Map<String, Value>;

/// Why a step or a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The output token limit cut the answer.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// A provider content filter stopped the answer.
    ContentFilter,
    /// The step ended in an error.
    Error,
    /// Any other reason a provider gave.
    #[serde(other)]
    Unknown,
}

impl FinishReason {
    /// The kebab-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool-calls",
            Self::ContentFilter => "content-filter",
            Self::Error => "error",
            Self::Unknown => "unknown",
        }
    }
}

/// Token usage as the adapters report it, before `get_usage` (SPEC 5).
///
/// `input_tokens` includes cache reads and writes; `output_tokens` includes reasoning.
/// Values are signed because providers have been seen sending negatives, which `get_usage`
/// clamps to 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens, cache included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<i64>,
    /// Completion tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<i64>,
    /// The step's total as the AI SDK gives it: input plus output (SPEC 1.1), not the
    /// provider's own figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<i64>,
    /// Reasoning tokens inside the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<i64>,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<i64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<i64>,
}

impl Usage {
    /// True when no field is set (such a usage counts as absent).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The kind of a tool result value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolResultKind {
    /// A JSON value.
    Json,
    /// A plain text value.
    Text,
}

/// The result of a tool call as the stream reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultValue {
    /// Whether `value` is JSON or text.
    #[serde(rename = "type")]
    pub kind: ToolResultKind,
    /// The result itself.
    pub value: Value,
}

/// One normalized LLM stream event (SPEC 1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum LlmEvent {
    /// A model step began.
    StepStart {
        /// Step counter within the response.
        index: u32,
    },
    /// A text block opened.
    TextStart {
        /// Block id.
        id: String,
        /// Provider metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// Text was appended to an open block.
    TextDelta {
        /// Block id.
        id: String,
        /// The appended text.
        text: String,
        /// Provider metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// A text block closed.
    TextEnd {
        /// Block id.
        id: String,
        /// Provider metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// A reasoning block opened.
    ReasoningStart {
        /// Block id.
        id: String,
        /// Provider metadata (for example a signature).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// Reasoning text was appended.
    ReasoningDelta {
        /// Block id.
        id: String,
        /// The appended text.
        text: String,
        /// Provider metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// A reasoning block closed.
    ReasoningEnd {
        /// Block id.
        id: String,
        /// Provider metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// The model began writing a tool call's input.
    ToolInputStart {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether the provider runs this tool itself.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        provider_executed: bool,
    },
    /// A fragment of a tool call's input.
    ToolInputDelta {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// The input fragment.
        text: String,
    },
    /// A tool call's input is complete.
    ToolInputEnd {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A complete tool call.
    ToolCall {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// The parsed input.
        input: Value,
        /// Whether the provider runs this tool itself.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        provider_executed: bool,
        /// Provider metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// A tool call's result.
    ToolResult {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// The result.
        result: ToolResultValue,
        /// Whether the provider ran this tool itself.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        provider_executed: bool,
    },
    /// A tool call failed.
    ToolError {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// What went wrong.
        message: String,
        /// How the failure came about, when the failure is a typed one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolFailure>,
    },
    /// A model step ended.
    StepFinish {
        /// Step counter within the response.
        index: u32,
        /// Why the step ended.
        reason: FinishReason,
        /// Token usage of the step.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Provider metadata (cache writes and the like).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// The response ended.
    Finish {
        /// Why the response ended.
        reason: FinishReason,
        /// Token usage of the whole response.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The provider reported an error inside the stream.
    ProviderError {
        /// The provider's message.
        message: String,
        /// The provider's own retryable flag, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retryable: Option<bool>,
    },
}

/// A typed tool failure that changes how the processor settles the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolFailure {
    /// The user rejected a permission ask (blocks the loop unless configured otherwise).
    PermissionRejected,
    /// The user dismissed a question (blocks like a rejection).
    QuestionRejected,
    /// Any other failure.
    Other,
}
