//! Stored history to provider-neutral model messages (SPEC 9, `toModelMessages`).
//!
//! The result is what every provider adapter translates into its wire request, so its shape is
//! the AI SDK's model message shape (and its JSON is exactly that of `to_model_messages.json`):
//! user messages with text and file items, assistant messages with text, reasoning and tool-call
//! items, and tool messages with one result for every call. Stored history may hold calls that
//! never finished; they still get a result, so no provider ever sees a dangling tool call.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::js_json::JsonObject;
use crate::message::{
    AssistantMessage, FilePart, Message, MessageError, MessageWithParts, Part, PartKind, ReasoningPart,
    TextPart, ToolPart, ToolState,
};
use crate::token::{estimate, truncate_tool_output};

/// The text a user message's `compaction` part becomes.
pub const COMPACTION_QUESTION: &str = "What did we do so far?";
/// The text a user message's `subtask` part becomes.
pub const SUBTASK_TEXT: &str = "The following tool was executed by the user";
/// The tool result sent in place of an output that prune cleared.
pub const CLEARED_TOOL_OUTPUT: &str = "[Old tool result content cleared]";
/// The error result sent for a tool call that never settled (pending or running).
pub const INTERRUPTED_TOOL_RESULT: &str = "[Tool execution was interrupted]";
/// The first text of the user message that carries media moved out of tool results.
pub const TOOL_MEDIA_INTRO: &str = "Attached media from tool result:";
/// The tool output limit of the compaction request, in UTF-16 code units.
pub const COMPACTION_TOOL_OUTPUT_MAX_CHARS: usize = 2000;

/// The model the history is being sent to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelTarget {
    /// Provider id (`providerID`).
    pub provider_id: String,
    /// Model id as the runtime names it (`model.id`).
    pub model_id: String,
    /// Model id as the provider's API names it (`model.api.id`).
    pub api_id: String,
    /// The provider package (`model.api.npm`, for example `@ai-sdk/anthropic`).
    pub npm: String,
}

impl ModelTarget {
    /// A target from its provider id, model id, API model id and provider package.
    pub fn new(
        provider_id: impl Into<String>,
        model_id: impl Into<String>,
        api_id: impl Into<String>,
        npm: impl Into<String>,
    ) -> Self {
        Self {
            provider_id: provider_id.into(),
            model_id: model_id.into(),
            api_id: api_id.into(),
            npm: npm.into(),
        }
    }

    /// Whether a message produced by `provider_id`/`model_id` came from this very model.
    pub fn is_same_model(&self, provider_id: &str, model_id: &str) -> bool {
        self.provider_id == provider_id && self.model_id == model_id
    }

    /// Whether a media attachment of type `mime` may stay inside a tool result for this model.
    pub fn keeps_tool_result_media(&self, mime: &str) -> bool {
        match self.npm.as_str() {
            "@ai-sdk/anthropic" | "@ai-sdk/openai" | "@ai-sdk/google-vertex/anthropic" => true,
            // These APIs accept images in tool results but not documents.
            "@ai-sdk/amazon-bedrock" | "@ai-sdk/xai" => mime.starts_with("image/"),
            "@ai-sdk/google" => self.api_id.to_lowercase().contains("gemini-3"),
            _ => false,
        }
    }
}

/// Options of the conversion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToModelOptions {
    /// Replace media files (images, PDFs) by a text marker and drop media from tool results.
    pub strip_media: bool,
    /// Cut completed tool outputs to this many UTF-16 code units (`None` or 0: no limit).
    pub tool_output_max_chars: Option<usize>,
}

impl ToModelOptions {
    /// The options of the compaction summary request (SPEC 9: strip media, 2000 units per output).
    pub const COMPACTION: Self =
        Self { strip_media: true, tool_output_max_chars: Some(COMPACTION_TOOL_OUTPUT_MAX_CHARS) };
}

/// A provider-neutral message sent to a model, tagged by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ModelMessage {
    /// What the user said.
    User {
        /// Text and file items, in order.
        content: Vec<UserContent>,
    },
    /// What the model said in one step.
    Assistant {
        /// Text, reasoning and tool-call items, in order.
        content: Vec<AssistantContent>,
    },
    /// The results of the tool calls of the assistant message just before.
    Tool {
        /// One result per call, in call order.
        content: Vec<ToolResult>,
    },
}

/// An item of a user message, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum UserContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An attached file.
    File(FileContent),
}

/// A file sent to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileContent {
    /// Media type.
    #[serde(rename = "mediaType")]
    pub media_type: String,
    /// File name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The stored URL (a `data:` URL or another URL), unchanged.
    pub data: String,
}

/// An item of an assistant message, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum AssistantContent {
    /// Visible text.
    Text {
        /// The text.
        text: String,
        /// Provider metadata to send back (same model only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_options: Option<JsonObject>,
    },
    /// Reasoning the same model produced.
    Reasoning {
        /// The reasoning text.
        text: String,
        /// Provider metadata to send back, such as a signature.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_options: Option<JsonObject>,
    },
    /// A tool call.
    ToolCall(ToolCall),
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// The input as stored.
    pub input: JsonObject,
    /// Provider metadata to send back (same model only, without `providerExecuted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<JsonObject>,
    /// True when the provider itself ran the tool (a server-side tool).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_executed: bool,
}

/// The result of one tool call (`type: "tool-result"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "tool-result", rename_all = "camelCase")]
pub struct ToolResult {
    /// The provider's call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// What the tool returned.
    pub output: ToolResultOutput,
    /// Provider metadata to send back (same model only, without `providerExecuted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<JsonObject>,
    /// True when the provider itself ran the tool (a server-side tool).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_executed: bool,
}

/// A tool result's output, tagged by `type` with the payload in `value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "kebab-case")]
pub enum ToolResultOutput {
    /// A successful text output.
    Text(String),
    /// A failure, as text.
    ErrorText(String),
    /// A structured output (not produced by the conversion today; part of the shape).
    Json(Value),
    /// A text output with media attachments.
    Content(Vec<ToolResultContent>),
}

/// An item of a `content` tool output, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum ToolResultContent {
    /// The output text.
    Text {
        /// The text.
        text: String,
    },
    /// An attachment.
    Media {
        /// Media type.
        media_type: String,
        /// The base64 payload (the part of the data URL after its comma).
        data: String,
    },
}

/// Whether a media type is "media" for SPEC 9: an image or a PDF.
pub fn is_media(mime: &str) -> bool {
    mime.starts_with("image/") || mime == "application/pdf"
}

/// The text that stands in for a stripped media file: `[Attached <mime>: <filename|file>]`.
pub fn media_placeholder(mime: &str, filename: Option<&str>) -> String {
    format!("[Attached {mime}: {}]", filename.unwrap_or("file"))
}

/// Converts stored history into the model messages sent to `target` (SPEC 9).
pub fn to_model_messages(
    messages: &[MessageWithParts],
    target: &ModelTarget,
    options: &ToModelOptions,
) -> Vec<ModelMessage> {
    let mut out = Vec::new();
    for message in messages {
        if message.parts.is_empty() {
            continue;
        }
        match &message.info {
            Message::User(_) => {
                let content = user_content(&message.parts, options);
                if !content.is_empty() {
                    out.push(ModelMessage::User { content });
                }
            }
            Message::Assistant(info) => {
                if is_sendable(info, &message.parts) {
                    push_assistant(&mut out, info, &message.parts, target, options);
                }
            }
        }
    }
    out
}

/// The token estimate of model messages: `estimate` of their JSON text.
///
/// This is the size the runtime gives compaction's tail selection for a range of messages.
pub fn estimate_model_messages(messages: &[ModelMessage]) -> u64 {
    // JavaScript's JSON text (number formatting included) so the count matches OpenCode's.
    // Serializing these types cannot fail (string keys only); a failure would count as 0.
    serde_json::to_value(messages).map(|json| estimate(&crate::js_json::stringify(&json))).unwrap_or(0)
}

/// The token estimate of stored messages as `target` would be sent them: the size compaction's
/// tail selection gives a range of messages in the runtime.
pub fn estimate_history(
    messages: &[MessageWithParts],
    target: &ModelTarget,
    options: &ToModelOptions,
) -> u64 {
    estimate_model_messages(&to_model_messages(messages, target, options))
}

fn user_content(parts: &[Part], options: &ToModelOptions) -> Vec<UserContent> {
    let mut content = Vec::new();
    for part in parts {
        match &part.kind {
            PartKind::Text(text) if text.ignored != Some(true) && !text.text.is_empty() => {
                content.push(UserContent::Text { text: text.text.clone() });
            }
            // text/plain files and directories were already inlined as text parts.
            PartKind::File(file) if file.mime != "text/plain" && file.mime != "application/x-directory" => {
                if options.strip_media && is_media(&file.mime) {
                    content.push(UserContent::Text {
                        text: media_placeholder(&file.mime, file.filename.as_deref()),
                    });
                } else {
                    content.push(UserContent::File(FileContent {
                        media_type: file.mime.clone(),
                        filename: file.filename.clone(),
                        data: file.url.clone(),
                    }));
                }
            }
            PartKind::Compaction(_) => {
                content.push(UserContent::Text { text: COMPACTION_QUESTION.to_owned() })
            }
            PartKind::Subtask(_) => content.push(UserContent::Text { text: SUBTASK_TEXT.to_owned() }),
            _ => {}
        }
    }
    content
}

/// An errored assistant message is left out, except an aborted one that produced something
/// beyond step markers and reasoning: the user saw that partial answer.
fn is_sendable(info: &AssistantMessage, parts: &[Part]) -> bool {
    match &info.error {
        None => true,
        Some(MessageError::MessageAbortedError { .. }) => {
            parts.iter().any(|part| !matches!(part.kind, PartKind::StepStart(_) | PartKind::Reasoning(_)))
        }
        Some(_) => false,
    }
}

/// The model messages of one step: its assistant items, then its tool results.
#[derive(Default)]
struct Block {
    content: Vec<AssistantContent>,
    results: Vec<ToolResult>,
}

impl Block {
    fn flush_into(&mut self, out: &mut Vec<ModelMessage>) {
        if !self.content.is_empty() {
            out.push(ModelMessage::Assistant { content: std::mem::take(&mut self.content) });
        }
        if !self.results.is_empty() {
            out.push(ModelMessage::Tool { content: std::mem::take(&mut self.results) });
        }
    }
}

fn push_assistant(
    out: &mut Vec<ModelMessage>,
    info: &AssistantMessage,
    parts: &[Part],
    target: &ModelTarget,
    options: &ToModelOptions,
) {
    let same_model = target.is_same_model(&info.provider_id, &info.model_id);
    // Anthropic refuses empty text blocks next to signed thinking, and signed thinking cannot
    // be dropped, so such a text becomes a single space instead.
    let signed =
        parts.iter().any(|part| matches!(&part.kind, PartKind::Reasoning(r) if has_anthropic_signature(r)));
    let mut media = Vec::new();
    let mut block = Block::default();
    let start = out.len();
    for part in parts {
        match &part.kind {
            PartKind::StepStart(_) => block.flush_into(out),
            PartKind::Text(text) => block.content.push(assistant_text(text, same_model, signed)),
            PartKind::Reasoning(reasoning) => {
                if same_model {
                    block.content.push(AssistantContent::Reasoning {
                        text: reasoning.text.clone(),
                        provider_options: reasoning.metadata.clone(),
                    });
                } else if !is_js_blank(&reasoning.text) {
                    // Another model cannot read this model's reasoning format or signatures.
                    block.content.push(AssistantContent::Text {
                        text: reasoning.text.clone(),
                        provider_options: None,
                    });
                }
            }
            PartKind::Tool(tool) => {
                let provider_options = if same_model { tool_provider_options(tool) } else { None };
                let provider_executed = tool.provider_executed();
                block.content.push(AssistantContent::ToolCall(ToolCall {
                    tool_call_id: tool.call_id.clone(),
                    tool_name: tool.tool.clone(),
                    input: tool.state.input().clone(),
                    provider_options: provider_options.clone(),
                    provider_executed,
                }));
                block.results.push(ToolResult {
                    tool_call_id: tool.call_id.clone(),
                    tool_name: tool.tool.clone(),
                    output: tool_output(&tool.state, target, options, &mut media),
                    provider_options,
                    provider_executed,
                });
            }
            _ => {}
        }
    }
    block.flush_into(out);
    if out.len() > start && !media.is_empty() {
        let mut content = vec![UserContent::Text { text: TOOL_MEDIA_INTRO.to_owned() }];
        content.extend(media.into_iter().map(|file: &FilePart| {
            UserContent::File(FileContent {
                media_type: file.mime.clone(),
                filename: None,
                data: file.url.clone(),
            })
        }));
        out.push(ModelMessage::User { content });
    }
}

fn assistant_text(text: &TextPart, same_model: bool, signed: bool) -> AssistantContent {
    let body = if signed && text.text.is_empty() { " ".to_owned() } else { text.text.clone() };
    AssistantContent::Text {
        text: body,
        provider_options: if same_model { text.metadata.clone() } else { None },
    }
}

fn has_anthropic_signature(reasoning: &ReasoningPart) -> bool {
    reasoning
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get("anthropic"))
        .and_then(|anthropic| anthropic.get("signature"))
        .is_some_and(is_js_truthy)
}

fn is_js_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0 && !n.is_nan()),
        Value::String(text) => !text.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Whether JavaScript's `text.trim()` would leave nothing (its whitespace set differs from
/// Rust's: it includes U+FEFF and excludes U+0085).
fn is_js_blank(text: &str) -> bool {
    text.chars().all(|ch| ch == '\u{feff}' || (ch.is_whitespace() && ch != '\u{85}'))
}

/// Part metadata minus `providerExecuted`, or nothing when nothing remains.
fn tool_provider_options(tool: &ToolPart) -> Option<JsonObject> {
    let mut metadata = tool.metadata.clone()?;
    metadata.shift_remove("providerExecuted");
    if metadata.is_empty() { None } else { Some(metadata) }
}

fn tool_output<'a>(
    state: &'a ToolState,
    target: &ModelTarget,
    options: &ToModelOptions,
    relocated: &mut Vec<&'a FilePart>,
) -> ToolResultOutput {
    match state {
        ToolState::Completed { output, time, attachments, .. } => {
            if time.compacted.is_some() {
                return ToolResultOutput::Text(CLEARED_TOOL_OUTPUT.to_owned());
            }
            let text = match options.tool_output_max_chars {
                Some(max) if max > 0 => truncate_tool_output(output, max).into_owned(),
                _ => output.clone(),
            };
            let mut inline = Vec::new();
            for file in attachments.iter().flatten() {
                if !is_media(&file.mime) {
                    inline.push(file);
                } else if options.strip_media {
                    // Stripping media is the point of the request; the marker text is enough.
                } else if target.keeps_tool_result_media(&file.mime) {
                    inline.push(file);
                } else {
                    relocated.push(file);
                }
            }
            if inline.is_empty() {
                return ToolResultOutput::Text(text);
            }
            let mut content = vec![ToolResultContent::Text { text }];
            // Only inline data can travel in a tool result; other URLs are left out.
            content.extend(inline.into_iter().filter_map(|file| {
                let rest = file.url.strip_prefix("data:")?;
                let (_, payload) = rest.split_once(',')?;
                Some(ToolResultContent::Media { media_type: file.mime.clone(), data: payload.to_owned() })
            }));
            ToolResultOutput::Content(content)
        }
        ToolState::Error { error, metadata, .. } => {
            let partial = metadata
                .as_ref()
                .filter(|_| state.is_interrupted())
                .and_then(|metadata| metadata.get("output"))
                .and_then(Value::as_str);
            match partial {
                Some(output) => ToolResultOutput::Text(output.to_owned()),
                None => ToolResultOutput::ErrorText(error.clone()),
            }
        }
        ToolState::Pending { .. } | ToolState::Running { .. } => {
            ToolResultOutput::ErrorText(INTERRUPTED_TOOL_RESULT.to_owned())
        }
    }
}
