//! The operations of a session's messages, and the prompts and commands that add them.

use serde_json::json;

use super::*;

/// `GET /session/{id}/message`.
pub(crate) fn list() -> Operation {
    Operation {
        id: "session.messages",
        summary: "A session's messages with their parts",
        params: vec![
            id(),
            json!({"in": "query", "name": "limit", "required": false, "schema": {"type": "integer"}}),
        ],
        body: None,
        responses: with(
            vec![("200", ok("Messages", json!({"type": "array", "items": message_with_parts()})))],
            true,
        ),
    }
}

/// `POST /session/{id}/message`.
pub(crate) fn prompt() -> Operation {
    Operation {
        id: "session.prompt",
        summary: "Send a prompt and wait for the run to end",
        params: vec![id()],
        body: Some(prompt_body()),
        responses: with(
            vec![
                ("200", ok("The last assistant message and its parts", message_with_parts())),
                ("409", ok("The session runs in another instance", reference("Error"))),
            ],
            true,
        ),
    }
}

/// `POST /session/{id}/prompt_async`.
pub(crate) fn prompt_async() -> Operation {
    Operation {
        id: "session.promptAsync",
        summary: "Start a prompt and return at once",
        params: vec![id()],
        body: Some(prompt_body()),
        responses: with(
            vec![
                ("204", json!({"description": "Prompt accepted"})),
                ("409", ok("The session runs in another instance", reference("Error"))),
            ],
            true,
        ),
    }
}

/// `POST /session/{id}/command`.
pub(crate) fn command() -> Operation {
    Operation {
        id: "session.command",
        summary: "Run a command (a prompt template) with arguments and wait for the run to end",
        params: vec![id()],
        body: Some(json!({"type": "object", "required": ["command"], "properties": {
            "command": {"type": "string"}, "arguments": {"type": "string"}, "agent": {"type": "string"},
            "model": {"type": "string", "description": "provider/model"}, "messageID": {"type": "string"}}})),
        responses: with(
            vec![("200", ok("The last assistant message and its parts", message_with_parts()))],
            true,
        ),
    }
}

/// `GET /session/{id}/message/{messageID}`.
pub(crate) fn get() -> Operation {
    read(
        "session.message",
        "One message with its parts",
        vec![id(), message()],
        json!({"type": "object", "required": ["info", "parts"]}),
        true,
    )
}
