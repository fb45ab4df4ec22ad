//! The provider-neutral request every adapter takes, and what a request builder produces.

use std::sync::Arc;

use serde_json::Value;
use session_core::{history::ModelMessage, history::ToolResultContent, history::ToolResultOutput};
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;

/// A request to a model: the same for every provider.
#[derive(Debug, Clone, Default)]
pub struct LlmRequest {
    /// The model id as the provider's API names it.
    pub model: String,
    /// System prompt parts, in order.
    pub system: Vec<String>,
    /// The conversation (session-core's `to_model_messages`).
    pub messages: Vec<ModelMessage>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// The output token limit (session-core's `max_output_tokens`).
    pub max_output_tokens: Option<u32>,
    /// Sampling and reasoning options.
    pub options: RequestOptions,
    /// Cancels the call and its stream.
    pub cancel: CancellationToken,
    /// The session the request serves, sent as the `x-session-affinity` and `x-session-id`
    /// headers (as OpenCode 1.18.34 sends them) so that a provider or a proxy can keep a
    /// session's requests together; `None` sends neither.
    pub session_id: Option<String>,
}

impl LlmRequest {
    /// True when `other` asks the same of the same model: every field but the cancellation.
    pub fn same_call(&self, other: &Self) -> bool {
        // Destructured so that a field added later cannot be left out of the comparison.
        let Self { model, system, messages, tools, max_output_tokens, options, cancel: _, session_id } = self;
        *model == other.model
            && *session_id == other.session_id
            && *system == other.system
            && *messages == other.messages
            && *tools == other.tools
            && *max_output_tokens == other.max_output_tokens
            && *options == other.options
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON schema of its input, shared: every step's request lists the same tools.
    pub input_schema: Arc<Value>,
}

/// Options that adapters translate into each provider's fields; unset means the provider's
/// default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestOptions {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// OpenAI reasoning effort (`minimal`, `low`, `medium`, `high`, ...), sent as given.
    pub reasoning_effort: Option<String>,
    /// OpenAI Responses reasoning summary (`auto`, `concise`, `detailed`).
    pub reasoning_summary: Option<String>,
    /// Anthropic and Gemini thinking budget, in tokens.
    pub thinking_budget: Option<u32>,
    /// Anthropic prompt caching: mark the system prompt and the last two messages.
    pub cache_control: bool,
    /// Whether the model must, may or must not call a tool (sent only with tools).
    pub tool_choice: Option<ToolChoice>,
    /// Chat Completions: the assistant-message field a turn's reasoning goes back in
    /// ([`chat_reasoning_field`](crate::chat_reasoning_field) of the provider's package);
    /// `None` sends no reasoning back.
    pub reasoning_field: Option<&'static str>,
}

/// Whether the model must call a tool, as each format says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call one of the tools (structured output uses this).
    Required,
    /// The model must not call a tool.
    None,
}

impl ToolChoice {
    /// The OpenAI Chat and Responses value (`auto`, `required`, `none`).
    pub fn openai(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Required => "required",
            Self::None => "none",
        }
    }
}

/// A built request: what to POST, relative to the provider's base URL.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltRequest {
    /// Path and query after the base URL (for example `/chat/completions`).
    pub path: String,
    /// Headers the format needs (authentication is added by the caller).
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
}

/// A `data:` URL split into its media type and base64 payload.
pub(crate) struct DataUrl<'a> {
    pub(crate) media_type: &'a str,
    pub(crate) base64: &'a str,
}

/// Splits `data:<mime>;base64,<payload>`; `None` for other URLs.
pub(crate) fn data_url(url: &str) -> Option<DataUrl<'_>> {
    let rest = url.strip_prefix("data:")?;
    let (meta, payload) = rest.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?;
    Some(DataUrl { media_type, base64: payload })
}

/// A tool output as plain text (for formats whose tool results are text only).
pub(crate) fn output_text(output: &ToolResultOutput) -> String {
    match output {
        ToolResultOutput::Text(text) | ToolResultOutput::ErrorText(text) => text.clone(),
        ToolResultOutput::Json(value) => value.to_string(),
        ToolResultOutput::Content(items) => items
            .iter()
            .filter_map(|item| match item {
                ToolResultContent::Text { text } => Some(text.as_str()),
                ToolResultContent::Media { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The error for a file a format cannot carry.
pub(crate) fn unsupported_file(format: &str, media_type: &str) -> LlmError {
    LlmError::InvalidRequest(format!("{format} cannot take a file of type {media_type}"))
}

/// Appends `value` to `messages`, merging into the last message when it has the same role
/// (formats that require alternating roles).
pub(crate) fn push_merged(messages: &mut Vec<Value>, role: &str, parts_key: &str, parts: Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut()
        && last.get("role").and_then(Value::as_str) == Some(role)
        && let Some(Value::Array(existing)) = last.get_mut(parts_key)
    {
        existing.extend(parts);
        return;
    }
    messages.push(serde_json::json!({ "role": role, parts_key: parts }));
}

/// `providerOptions[provider][key]` of a model message item, as a string.
pub(crate) fn option_str<'a>(
    options: Option<&'a serde_json::Map<String, Value>>,
    provider: &str,
    key: &str,
) -> Option<&'a str> {
    options?.get(provider)?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::{LlmRequest, ToolChoice, ToolSpec};

    fn request() -> LlmRequest {
        LlmRequest {
            model: "m".into(),
            system: vec!["be brief".into()],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "reads".into(),
                input_schema: serde_json::json!({"type": "object"}).into(),
            }],
            max_output_tokens: Some(100),
            ..LlmRequest::default()
        }
    }

    #[test]
    fn the_same_call_ignores_only_the_cancellation() {
        let base = request();
        let other = request();
        other.cancel.cancel();
        assert!(base.same_call(&other), "another cancellation is the same call");
        let changes: [fn(&mut LlmRequest); 6] = [
            |r| r.model = "n".into(),
            |r| r.system.push("more".into()),
            |r| r.tools.clear(),
            |r| r.max_output_tokens = None,
            |r| r.options.tool_choice = Some(ToolChoice::Required),
            // Another session's request is another call: its headers name that session.
            |r| r.session_id = Some("ses_other".into()),
        ];
        for change in changes {
            let mut changed = request();
            change(&mut changed);
            assert!(!base.same_call(&changed), "{changed:?}");
        }
    }
}
