//! The Chat Completions request builder (`POST /chat/completions`).
//!
//! The body is a tree of borrowed, typed values serialised straight into the request's bytes:
//! no `serde_json::Value` is built, copied and dropped for the history at every
//! step. Field order is the order of the structs, which the request snapshots pin.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};
use session_core::{history::AssistantContent, history::ModelMessage, history::UserContent};

use crate::error::LlmError;
use crate::request::{BuiltRequest, LlmRequest, ToolChoice, data_url, output_text, unsupported_file};

/// Builds the streaming Chat Completions request for `request`.
pub fn build_request(request: &LlmRequest) -> Result<BuiltRequest, LlmError> {
    let body = serde_json::to_value(body(request)?)
        .map_err(|err| LlmError::InvalidRequest(format!("cannot serialise the request: {err}")))?;
    Ok(BuiltRequest { path: PATH.into(), headers: headers(), body })
}

/// The request path under the base URL.
pub(crate) const PATH: &str = "/chat/completions";

/// The headers the format needs.
pub(crate) fn headers() -> Vec<(String, String)> {
    vec![("accept".into(), "text/event-stream".into())]
}

/// The body of the streaming request, borrowing from `request`.
pub(crate) fn body(request: &LlmRequest) -> Result<Body<'_>, LlmError> {
    let mut messages: Vec<ChatMessage<'_>> = request
        .system
        .iter()
        .filter(|text| !text.is_empty())
        .map(|text| ChatMessage::System { content: text })
        .collect();
    for message in &request.messages {
        match message {
            ModelMessage::User { content } => {
                messages.push(ChatMessage::User { content: user_content(content)? })
            }
            ModelMessage::Assistant { content } => {
                messages.extend(assistant_message(content, request.options.reasoning_field));
            }
            ModelMessage::Tool { content } => messages.extend(content.iter().map(|result| {
                ChatMessage::Tool { tool_call_id: &result.tool_call_id, content: output_text(&result.output) }
            })),
        }
    }
    let options = &request.options;
    let tools: Vec<ChatTool<'_>> = request
        .tools
        .iter()
        .map(|tool| ChatTool {
            kind: "function",
            function: ChatFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: tool.input_schema.as_ref(),
            },
        })
        .collect();
    // With tools, the choice is always stated (`auto` unless the caller asks otherwise), as
    // OpenCode's requests state it.
    let tool_choice =
        if tools.is_empty() { None } else { Some(options.tool_choice.unwrap_or(ToolChoice::Auto).openai()) };
    // Reasoning models refuse `max_tokens`; older compatible servers know only it.
    let (max_tokens, max_completion_tokens) = match request.max_output_tokens {
        Some(max) if options.reasoning_effort.is_some() => (None, Some(max)),
        max => (max, None),
    };
    Ok(Body {
        model: &request.model,
        messages,
        tools,
        tool_choice,
        max_tokens,
        max_completion_tokens,
        reasoning_effort: options.reasoning_effort.as_deref(),
        temperature: options.temperature,
        top_p: options.top_p,
        stream: true,
        // Without this OpenAI sends no usage at all in a stream.
        stream_options: StreamOptions { include_usage: true },
    })
}

/// A Chat Completions request body.
#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// One message of the conversation, tagged by its role.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserBody<'a>,
    },
    Assistant {
        /// The turn's text, `""` when it is only tool calls (as the AI SDK's Chat packages
        /// send it).
        content: String,
        /// The turn's reasoning, under the field the provider's package names.
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        reasoning: Option<Reasoning>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

/// A user turn: a plain string when it is one text, else a list of typed parts.
#[derive(Serialize)]
#[serde(untagged)]
enum UserBody<'a> {
    Text(&'a str),
    Parts(Vec<UserPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UserPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
    File { file: FileData<'a> },
    InputAudio { input_audio: InputAudio<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: &'a str,
}

#[derive(Serialize)]
struct FileData<'a> {
    filename: Cow<'a, str>,
    file_data: &'a str,
}

#[derive(Serialize)]
struct InputAudio<'a> {
    data: &'a str,
    format: &'static str,
}

#[derive(Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatCall<'a>,
}

#[derive(Serialize)]
struct ChatCall<'a> {
    name: &'a str,
    /// The input as a JSON string, as the format wants it.
    arguments: String,
}

fn user_content(content: &[UserContent]) -> Result<UserBody<'_>, LlmError> {
    if let [UserContent::Text { text }] = content {
        return Ok(UserBody::Text(text));
    }
    let mut parts = Vec::with_capacity(content.len());
    for item in content {
        parts.push(match item {
            UserContent::Text { text } => UserPart::Text { text },
            UserContent::File(file) if file.media_type.starts_with("image/") => {
                UserPart::ImageUrl { image_url: ImageUrl { url: &file.data } }
            }
            UserContent::File(file) if file.media_type == "application/pdf" => UserPart::File {
                file: FileData {
                    filename: file.filename.as_deref().map_or(Cow::Borrowed("document.pdf"), Cow::Borrowed),
                    file_data: &file.data,
                },
            },
            UserContent::File(file) => {
                let format = match file.media_type.as_str() {
                    "audio/wav" | "audio/x-wav" => "wav",
                    "audio/mpeg" | "audio/mp3" => "mp3",
                    other => return Err(unsupported_file("OpenAI Chat Completions", other)),
                };
                let Some(data) = data_url(&file.data) else {
                    return Err(unsupported_file("OpenAI Chat Completions (audio by URL)", &file.media_type));
                };
                UserPart::InputAudio { input_audio: InputAudio { data: data.base64, format } }
            }
        });
    }
    Ok(UserBody::Parts(parts))
}

/// A turn's reasoning under the field `field` names: one map entry, flattened into the
/// message.
struct Reasoning {
    field: &'static str,
    text: String,
}

impl Serialize for Reasoning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.field, &self.text)?;
        map.end()
    }
}

/// The assistant-message field in which the AI SDK package `npm` sends a turn's reasoning
/// back to a Chat Completions provider, as OpenCode 1.18.34 sends it:
/// `reasoning_content` for `@ai-sdk/openai-compatible` (DeepSeek's, Moonshot's and the other
/// thinking models that reject a tool-call turn without it), `reasoning` for `@ai-sdk/groq`;
/// `None` for the packages that send none back (`@ai-sdk/xai`; `@openrouter/ai-sdk-provider`
/// sends reasoning only with the `reasoning_details` this runtime does not keep).
pub fn chat_reasoning_field(npm: &str) -> Option<&'static str> {
    match npm {
        "@ai-sdk/openai-compatible" => Some("reasoning_content"),
        "@ai-sdk/groq" => Some("reasoning"),
        _ => None,
    }
}

/// The assistant turn: its text (`""` when there is none), its tool calls and, under
/// `reasoning_field`, its reasoning when there is any (the texts of its reasoning items joined,
/// as the AI SDK joins them). A turn with nothing to send is left out.
fn assistant_message<'a>(
    content: &'a [AssistantContent],
    reasoning_field: Option<&'static str>,
) -> Option<ChatMessage<'a>> {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    for item in content {
        match item {
            AssistantContent::Text { text: part, .. } => text.push_str(part),
            AssistantContent::Reasoning { text: part, .. } => reasoning.push_str(part),
            AssistantContent::ToolCall(call) if call.provider_executed => {}
            AssistantContent::ToolCall(call) => tool_calls.push(ChatToolCall {
                id: &call.tool_call_id,
                kind: "function",
                function: ChatCall { name: &call.tool_name, arguments: arguments(&call.input) },
            }),
        }
    }
    let reasoning =
        reasoning_field.filter(|_| !reasoning.is_empty()).map(|field| Reasoning { field, text: reasoning });
    if text.is_empty() && tool_calls.is_empty() && reasoning.is_none() {
        return None;
    }
    Some(ChatMessage::Assistant { content: text, reasoning, tool_calls })
}

/// A call's input as compact JSON text.
fn arguments(input: &Map<String, Value>) -> String {
    // A map of JSON values always serialises; the fallback is never taken.
    serde_json::to_string(input).unwrap_or_else(|_| "{}".to_owned())
}
