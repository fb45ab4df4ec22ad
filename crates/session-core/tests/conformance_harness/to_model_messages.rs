//! Cases of `to_model_messages.json`.
//!
//! The vectors carry simplified message JSON (no session ids, no times on most messages, no part
//! ids). The harness fills the missing required fields with neutral values and reads the result
//! through the real serde shapes, so a field the vector does give is read exactly as stored.

use serde_json::{Map, Value, json};
use session_core::{
    MessageWithParts, history::ModelTarget, history::ToModelOptions, history::to_model_messages,
};

use crate::{Report, case_name, cases};

/// Runs every case of the file.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        let name = case_name(case);
        if let Some(kind) = case.get("kind") {
            report.record(&name, Err(format!("unknown kind {kind}")));
            continue;
        }
        match actual(case) {
            Ok(actual) => {
                let expected = case.get("expected").cloned().unwrap_or(Value::Null);
                report.compare(&name, &expected, &actual);
            }
            Err(error) => report.record(&name, Err(format!("unmappable case: {error}"))),
        }
    }
}

fn actual(case: &Value) -> Result<Value, String> {
    let input = case.get("input").ok_or("no input")?;
    let target = target(input.get("model").ok_or("no model")?)?;
    let options = options(input.get("options"))?;
    let messages = input
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("no messages")?
        .iter()
        .enumerate()
        .map(|(index, message)| message_with_parts(index, message))
        .collect::<Result<Vec<_>, _>>()?;
    let result = to_model_messages(&messages, &target, &options);
    serde_json::to_value(result).map_err(|e| e.to_string())
}

fn target(model: &Value) -> Result<ModelTarget, String> {
    let text = |value: Option<&Value>, what: &str| {
        value.and_then(Value::as_str).map(str::to_owned).ok_or_else(|| format!("model without {what}"))
    };
    let api = model.get("api");
    Ok(ModelTarget::new(
        text(model.get("providerID"), "providerID")?,
        text(model.get("id"), "id")?,
        text(api.and_then(|a| a.get("id")).or(model.get("id")), "api.id")?,
        text(api.and_then(|a| a.get("npm")), "api.npm")?,
    ))
}

fn options(options: Option<&Value>) -> Result<ToModelOptions, String> {
    let Some(options) = options else { return Ok(ToModelOptions::default()) };
    let object = options.as_object().ok_or("options is not an object")?;
    for key in object.keys() {
        if key != "stripMedia" && key != "toolOutputMaxChars" {
            return Err(format!("unknown option {key}"));
        }
    }
    let strip_media = match object.get("stripMedia") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(other) => return Err(format!("stripMedia {other}")),
    };
    let tool_output_max_chars = match object.get("toolOutputMaxChars") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("toolOutputMaxChars {value}"))?,
        ),
    };
    Ok(ToModelOptions { strip_media, tool_output_max_chars })
}

/// Fills `key` with `value` when the vector left it out.
fn fill(object: &mut Map<String, Value>, key: &str, value: Value) {
    object.entry(key.to_owned()).or_insert(value);
}

fn message_with_parts(index: usize, message: &Value) -> Result<MessageWithParts, String> {
    let mut info = message.get("info").and_then(Value::as_object).cloned().ok_or("message without info")?;
    let id =
        info.get("id").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| format!("msg_{index}"));
    fill(&mut info, "id", json!(id));
    fill(&mut info, "sessionID", json!("ses_conformance"));
    match info.get("role").and_then(Value::as_str) {
        Some("user") => {
            fill(&mut info, "time", json!({"created": 0}));
            fill(&mut info, "agent", json!("build"));
            fill(&mut info, "model", json!({"providerID": "test", "modelID": "test-model"}));
        }
        Some("assistant") => {
            fill(&mut info, "time", json!({"created": 0}));
            fill(&mut info, "parentID", json!("msg_parent"));
            fill(&mut info, "providerID", json!("test"));
            fill(&mut info, "modelID", json!("test-model"));
            fill(&mut info, "mode", json!("build"));
            fill(&mut info, "agent", json!("build"));
            fill(&mut info, "path", json!({"cwd": "/", "root": "/"}));
            fill(&mut info, "cost", json!(0));
            fill(
                &mut info,
                "tokens",
                json!({"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}),
            );
        }
        other => return Err(format!("message {id} has role {other:?}")),
    }
    let parts = message
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("message {id} without parts"))?
        .iter()
        .enumerate()
        .map(|(part_index, part)| {
            let mut part = part.as_object().cloned().ok_or("part is not an object")?;
            fill(&mut part, "id", json!(format!("prt_{index:03}_{part_index:03}")));
            fill(&mut part, "sessionID", json!("ses_conformance"));
            fill(&mut part, "messageID", json!(id));
            Ok(Value::Object(part))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let value = json!({"info": Value::Object(info), "parts": parts});
    serde_json::from_value(value).map_err(|e| format!("message {id}: {e}"))
}
