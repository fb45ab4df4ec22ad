//! The Anthropic Messages request builder (`POST /messages`).

use serde_json::{Map, Value, json};
use session_core::{
    history::AssistantContent, history::ModelMessage, history::ToolResultContent, history::ToolResultOutput,
    history::UserContent,
};

use crate::error::LlmError;
use crate::request::{BuiltRequest, LlmRequest, data_url, option_str, push_merged, unsupported_file};

/// The API version every request names.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` is required by the API; this is used when the request sets no limit.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Builds the streaming Messages request for `request`.
pub fn build_request(request: &LlmRequest) -> Result<BuiltRequest, LlmError> {
    let mut messages: Vec<Value> = Vec::new();
    for message in &request.messages {
        match message {
            ModelMessage::User { content } => {
                let parts = content.iter().map(user_part).collect::<Result<Vec<_>, _>>()?;
                push_merged(&mut messages, "user", "content", parts);
            }
            ModelMessage::Assistant { content } => {
                push_merged(&mut messages, "assistant", "content", assistant_parts(content));
            }
            ModelMessage::Tool { content } => {
                // Results of tools the provider ran belong to the assistant turn.
                let (server, client): (Vec<_>, Vec<_>) = content.iter().partition(|r| r.provider_executed);
                let server = server
                    .into_iter()
                    .map(|result| {
                        let value = match &result.output {
                            ToolResultOutput::Json(value) => value.clone(),
                            other => json!(crate::request::output_text(other)),
                        };
                        json!({
                            "type": format!("{}_tool_result", result.tool_name),
                            "tool_use_id": result.tool_call_id,
                            "content": value,
                        })
                    })
                    .collect();
                push_merged(&mut messages, "assistant", "content", server);
                let client = client
                    .into_iter()
                    .map(|result| tool_result(&result.tool_call_id, &result.output))
                    .collect::<Result<Vec<_>, _>>()?;
                push_merged(&mut messages, "user", "content", client);
            }
        }
    }
    let options = &request.options;
    if options.cache_control {
        mark_cache(&mut messages);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    let max_output = request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    match options.thinking_budget {
        Some(budget) => {
            // The budget counts inside max_tokens, so it is added to keep the visible limit.
            body.insert("max_tokens".into(), json!(u64::from(max_output) + u64::from(budget)));
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        None => {
            body.insert("max_tokens".into(), json!(max_output));
        }
    }
    let system: Vec<Value> = request
        .system
        .iter()
        .filter(|text| !text.is_empty())
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    if !system.is_empty() {
        let mut system = system;
        if options.cache_control
            && let Some(Value::Object(last)) = system.last_mut()
        {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        body.insert("system".into(), Value::Array(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = options.tool_choice {
            let kind = match choice {
                crate::ToolChoice::Auto => "auto",
                crate::ToolChoice::Required => "any",
                crate::ToolChoice::None => "none",
            };
            body.insert("tool_choice".into(), json!({"type": kind}));
        }
    }
    // Anthropic refuses sampling parameters while thinking.
    if options.thinking_budget.is_none() {
        if let Some(temperature) = options.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if let Some(top_p) = options.top_p {
            body.insert("top_p".into(), json!(top_p));
        }
    }
    body.insert("stream".into(), json!(true));
    Ok(BuiltRequest {
        path: "/messages".into(),
        headers: vec![
            ("anthropic-version".into(), ANTHROPIC_VERSION.into()),
            ("accept".into(), "text/event-stream".into()),
        ],
        body: Value::Object(body),
    })
}

/// An image or document source: base64 for `data:` URLs, a URL otherwise.
fn source(url: &str) -> Value {
    match data_url(url) {
        Some(data) => json!({"type": "base64", "media_type": data.media_type, "data": data.base64}),
        None => json!({"type": "url", "url": url}),
    }
}

fn user_part(item: &UserContent) -> Result<Value, LlmError> {
    Ok(match item {
        UserContent::Text { text } => json!({"type": "text", "text": text}),
        UserContent::File(file) if file.media_type.starts_with("image/") => {
            json!({"type": "image", "source": source(&file.data)})
        }
        UserContent::File(file) if file.media_type == "application/pdf" => {
            json!({"type": "document", "source": source(&file.data)})
        }
        UserContent::File(file) => return Err(unsupported_file("Anthropic Messages", &file.media_type)),
    })
}

fn assistant_parts(content: &[AssistantContent]) -> Vec<Value> {
    let mut parts = Vec::new();
    for item in content {
        match item {
            // The API refuses empty text blocks.
            AssistantContent::Text { text, .. } if text.is_empty() => {}
            AssistantContent::Text { text, .. } => parts.push(json!({"type": "text", "text": text})),
            AssistantContent::Reasoning { text, provider_options } => {
                let options = provider_options.as_ref();
                if let Some(signature) = option_str(options, "anthropic", "signature") {
                    parts.push(json!({"type": "thinking", "thinking": text, "signature": signature}));
                } else if let Some(data) = option_str(options, "anthropic", "redactedData") {
                    parts.push(json!({"type": "redacted_thinking", "data": data}));
                }
                // Unsigned thinking would be refused; it is dropped.
            }
            AssistantContent::ToolCall(call) => parts.push(json!({
                "type": if call.provider_executed { "server_tool_use" } else { "tool_use" },
                "id": call.tool_call_id,
                "name": call.tool_name,
                "input": call.input,
            })),
        }
    }
    parts
}

fn tool_result(id: &str, output: &ToolResultOutput) -> Result<Value, LlmError> {
    let (content, is_error) = match output {
        ToolResultOutput::Text(text) => (json!(text), false),
        ToolResultOutput::ErrorText(text) => (json!(text), true),
        ToolResultOutput::Json(value) => (json!(value.to_string()), false),
        ToolResultOutput::Content(items) => {
            let blocks = items
                .iter()
                .map(|item| match item {
                    ToolResultContent::Text { text } => Ok(json!({"type": "text", "text": text})),
                    ToolResultContent::Media { media_type, data } if media_type.starts_with("image/") => {
                        Ok(json!({
                            "type": "image",
                            "source": {"type": "base64", "media_type": media_type, "data": data},
                        }))
                    }
                    ToolResultContent::Media { media_type, data } if media_type == "application/pdf" => {
                        Ok(json!({
                            "type": "document",
                            "source": {"type": "base64", "media_type": media_type, "data": data},
                        }))
                    }
                    ToolResultContent::Media { media_type, .. } => {
                        Err(unsupported_file("Anthropic tool results", media_type))
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            (Value::Array(blocks), false)
        }
    };
    let mut result = Map::new();
    result.insert("type".into(), json!("tool_result"));
    result.insert("tool_use_id".into(), json!(id));
    result.insert("content".into(), content);
    if is_error {
        result.insert("is_error".into(), json!(true));
    }
    Ok(Value::Object(result))
}

/// Marks the last block of each of the last two messages as a cache breakpoint; with the
/// system prompt that is three of the four breakpoints the API allows.
fn mark_cache(messages: &mut [Value]) {
    for message in messages.iter_mut().rev().take(2) {
        let Some(Value::Array(parts)) = message.get_mut("content") else {
            continue;
        };
        // Thinking blocks cannot carry a breakpoint; the last other block takes it.
        let last = parts.iter_mut().rev().find(|part| {
            !matches!(part.get("type").and_then(Value::as_str), Some("thinking" | "redacted_thinking"))
        });
        if let Some(Value::Object(last)) = last {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
    }
}
