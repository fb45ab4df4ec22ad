//! The Chat Completions request builder (`POST /chat/completions`).

use serde_json::{Map, Value, json};
use session_core::{history::AssistantContent, history::ModelMessage, history::UserContent};

use crate::error::LlmError;
use crate::request::{BuiltRequest, LlmRequest, data_url, output_text, unsupported_file};

/// Builds the streaming Chat Completions request for `request`.
pub fn build_request(request: &LlmRequest) -> Result<BuiltRequest, LlmError> {
    let mut messages: Vec<Value> = request
        .system
        .iter()
        .filter(|text| !text.is_empty())
        .map(|text| json!({"role": "system", "content": text}))
        .collect();
    for message in &request.messages {
        match message {
            ModelMessage::User { content } => messages.push(user_message(content)?),
            ModelMessage::Assistant { content } => {
                if let Some(message) = assistant_message(content) {
                    messages.push(message);
                }
            }
            ModelMessage::Tool { content } => {
                for result in content {
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": result.tool_call_id,
                        "content": output_text(&result.output),
                    }));
                }
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = request.options.tool_choice {
            body.insert("tool_choice".into(), json!(choice.openai()));
        }
    }
    let options = &request.options;
    if let Some(max) = request.max_output_tokens {
        // Reasoning models refuse `max_tokens`; older compatible servers know only it.
        let field = if options.reasoning_effort.is_some() { "max_completion_tokens" } else { "max_tokens" };
        body.insert(field.into(), json!(max));
    }
    if let Some(effort) = &options.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = options.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    body.insert("stream".into(), json!(true));
    // Without this OpenAI sends no usage at all in a stream.
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Ok(BuiltRequest {
        path: "/chat/completions".into(),
        headers: vec![("accept".into(), "text/event-stream".into())],
        body: Value::Object(body),
    })
}

fn user_message(content: &[UserContent]) -> Result<Value, LlmError> {
    if let [UserContent::Text { text }] = content {
        return Ok(json!({"role": "user", "content": text}));
    }
    let mut parts = Vec::new();
    for item in content {
        parts.push(match item {
            UserContent::Text { text } => json!({"type": "text", "text": text}),
            UserContent::File(file) if file.media_type.starts_with("image/") => {
                json!({"type": "image_url", "image_url": {"url": file.data}})
            }
            UserContent::File(file) if file.media_type == "application/pdf" => {
                let name = file.filename.clone().unwrap_or_else(|| "document.pdf".into());
                json!({"type": "file", "file": {"filename": name, "file_data": file.data}})
            }
            UserContent::File(file) => {
                let format = match file.media_type.as_str() {
                    "audio/wav" | "audio/x-wav" => "wav",
                    "audio/mpeg" | "audio/mp3" => "mp3",
                    other => return Err(unsupported_file("OpenAI Chat Completions", other)),
                };
                let Some(data) = data_url(&file.data) else {
                    return Err(unsupported_file("OpenAI Chat Completions (audio by URL)", &file.media_type));
                };
                json!({"type": "input_audio", "input_audio": {"data": data.base64, "format": format}})
            }
        });
    }
    Ok(json!({"role": "user", "content": parts}))
}

/// The assistant turn; reasoning is not sent back (the format has no field for it).
fn assistant_message(content: &[AssistantContent]) -> Option<Value> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for item in content {
        match item {
            AssistantContent::Text { text: part, .. } => text.push_str(part),
            AssistantContent::Reasoning { .. } => {}
            AssistantContent::ToolCall(call) if call.provider_executed => {}
            AssistantContent::ToolCall(call) => tool_calls.push(json!({
                "id": call.tool_call_id,
                "type": "function",
                "function": {
                    "name": call.tool_name,
                    "arguments": Value::Object(call.input.clone()).to_string(),
                },
            })),
        }
    }
    if text.is_empty() && tool_calls.is_empty() {
        return None;
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
    if !tool_calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(tool_calls));
    }
    Some(Value::Object(message))
}
