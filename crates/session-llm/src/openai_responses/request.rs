//! The OpenAI Responses request builder (`POST /responses`).
//!
//! Requests are stateless (`store: false`), so reasoning is sent back whole: the item id, its
//! summaries and the encrypted content the stream gave (`include: reasoning.encrypted_content`).

use serde_json::{Map, Value, json};
use session_core::{
    history::AssistantContent, history::ModelMessage, history::ToolResultContent, history::ToolResultOutput,
    history::UserContent,
};

use crate::error::LlmError;
use crate::request::{BuiltRequest, LlmRequest, option_str, output_text, unsupported_file};

/// Builds the streaming Responses request for `request`.
pub fn build_request(request: &LlmRequest) -> Result<BuiltRequest, LlmError> {
    let mut input: Vec<Value> = request
        .system
        .iter()
        .filter(|text| !text.is_empty())
        .map(|text| json!({"role": "system", "content": text}))
        .collect();
    for message in &request.messages {
        match message {
            ModelMessage::User { content } => input.push(user_message(content)?),
            ModelMessage::Assistant { content } => assistant_items(content, &mut input),
            ModelMessage::Tool { content } => {
                for result in content.iter().filter(|r| !r.provider_executed) {
                    input.push(json!({
                        "type": "function_call_output",
                        "call_id": result.tool_call_id,
                        "output": tool_output(&result.output),
                    }));
                }
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("input".into(), Value::Array(input));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                    "strict": false,
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
        body.insert("max_output_tokens".into(), json!(max));
    }
    if options.reasoning_effort.is_some() || options.reasoning_summary.is_some() {
        let mut reasoning = Map::new();
        if let Some(effort) = &options.reasoning_effort {
            reasoning.insert("effort".into(), json!(effort));
        }
        if let Some(summary) = &options.reasoning_summary {
            reasoning.insert("summary".into(), json!(summary));
        }
        body.insert("reasoning".into(), Value::Object(reasoning));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = options.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    body.insert("store".into(), json!(false));
    body.insert("stream".into(), json!(true));
    Ok(BuiltRequest {
        path: "/responses".into(),
        headers: vec![("accept".into(), "text/event-stream".into())],
        body: Value::Object(body),
    })
}

fn user_message(content: &[UserContent]) -> Result<Value, LlmError> {
    let mut parts = Vec::new();
    for item in content {
        parts.push(match item {
            UserContent::Text { text } => json!({"type": "input_text", "text": text}),
            UserContent::File(file) if file.media_type.starts_with("image/") => {
                json!({"type": "input_image", "image_url": file.data})
            }
            UserContent::File(file) if file.media_type == "application/pdf" => {
                let name = file.filename.clone().unwrap_or_else(|| "document.pdf".into());
                json!({"type": "input_file", "filename": name, "file_data": file.data})
            }
            UserContent::File(file) => return Err(unsupported_file("OpenAI Responses", &file.media_type)),
        });
    }
    Ok(json!({"role": "user", "content": parts}))
}

fn assistant_items(content: &[AssistantContent], input: &mut Vec<Value>) {
    for item in content {
        match item {
            AssistantContent::Text { text, .. } => {
                if text.is_empty() {
                    continue;
                }
                input.push(json!({
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }));
            }
            AssistantContent::Reasoning { text, provider_options } => {
                let options = provider_options.as_ref();
                // Reasoning without its item id cannot be referred to; it was only ever shown.
                let Some(item_id) = option_str(options, "openai", "itemId") else {
                    continue;
                };
                let summary = if text.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "summary_text", "text": text})]
                };
                // Summary parts of one item arrive as separate reasoning parts: merge them.
                if let Some(last) = input.last_mut()
                    && last.get("type").and_then(Value::as_str) == Some("reasoning")
                    && last.get("id").and_then(Value::as_str) == Some(item_id)
                    && let Some(Value::Array(existing)) = last.get_mut("summary")
                {
                    existing.extend(summary);
                    continue;
                }
                let mut reasoning = Map::new();
                reasoning.insert("type".into(), json!("reasoning"));
                reasoning.insert("id".into(), json!(item_id));
                if let Some(encrypted) = option_str(options, "openai", "reasoningEncryptedContent") {
                    reasoning.insert("encrypted_content".into(), json!(encrypted));
                }
                reasoning.insert("summary".into(), Value::Array(summary));
                input.push(Value::Object(reasoning));
            }
            AssistantContent::ToolCall(call) if call.provider_executed => {}
            AssistantContent::ToolCall(call) => input.push(json!({
                "type": "function_call",
                "call_id": call.tool_call_id,
                "name": call.tool_name,
                "arguments": Value::Object(call.input.clone()).to_string(),
            })),
        }
    }
}

/// A function call's output: text, or text and images for outputs with media.
fn tool_output(output: &ToolResultOutput) -> Value {
    let ToolResultOutput::Content(items) = output else {
        return json!(output_text(output));
    };
    let parts = items
        .iter()
        .map(|item| match item {
            ToolResultContent::Text { text } => json!({"type": "input_text", "text": text}),
            ToolResultContent::Media { media_type, data } if media_type.starts_with("image/") => {
                json!({"type": "input_image", "image_url": format!("data:{media_type};base64,{data}")})
            }
            ToolResultContent::Media { media_type, data } => json!({
                "type": "input_file",
                "filename": "file",
                "file_data": format!("data:{media_type};base64,{data}"),
            }),
        })
        .collect();
    Value::Array(parts)
}
