//! The operations of the `question` tool's requests, as OpenCode 1.18 names them.

use serde_json::json;

use super::*;

fn request_id() -> Value {
    json!({"in": "path", "name": "requestID", "required": true, "schema": {"type": "string", "pattern": "^que"}})
}

/// `GET /question`.
pub(crate) fn list() -> Operation {
    read(
        "question.list",
        "List pending questions (every session's, in this instance)",
        vec![],
        array(reference("QuestionRequest")),
        false,
    )
}

/// `POST /question/{requestID}/reply`.
pub(crate) fn reply() -> Operation {
    change(
        "question.reply",
        "Reply to question request",
        vec![request_id()],
        json!({"type": "object", "required": ["answers"], "additionalProperties": false, "properties": {
            "answers": {"type": "array", "items": reference("QuestionAnswer"),
                "description": "User answers in order of questions (each answer is an array of selected labels)"}}}),
        json!({"type": "boolean"}),
    )
}

/// `POST /question/{requestID}/reject`.
pub(crate) fn reject() -> Operation {
    read("question.reject", "Reject question request", vec![request_id()], json!({"type": "boolean"}), true)
}

/// The schemas the operations and `question.asked` name.
pub(crate) fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "QuestionRequest",
            json!({"type": "object", "required": ["id", "sessionID", "questions"], "properties": {
                "id": {"type": "string", "pattern": "^que"}, "sessionID": {"type": "string", "pattern": "^ses"},
                "questions": {"type": "array", "items": reference("QuestionInfo"), "description": "Questions to ask"},
                "tool": reference("QuestionTool")}}),
        ),
        (
            "QuestionInfo",
            json!({"type": "object", "required": ["question", "header", "options"], "properties": {
                "question": {"type": "string", "description": "Complete question"},
                "header": {"type": "string", "description": "Very short label (max 30 chars)"},
                "options": {"type": "array", "items": reference("QuestionOption"), "description": "Available choices"},
                "multiple": {"type": "boolean"}}}),
        ),
        (
            "QuestionOption",
            json!({"type": "object", "required": ["label", "description"], "properties": {
                "label": {"type": "string", "description": "Display text (1-5 words, concise)"},
                "description": {"type": "string", "description": "Explanation of choice"}}}),
        ),
        (
            "QuestionTool",
            json!({"type": "object", "required": ["messageID", "callID"], "properties": {
                "messageID": {"type": "string", "pattern": "^msg"}, "callID": {"type": "string"}}}),
        ),
        ("QuestionAnswer", json!({"type": "array", "items": {"type": "string"}})),
    ]
}
