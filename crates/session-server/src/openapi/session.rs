//! The operations of sessions: create, list, read, change, delete, and what runs on one.

use serde_json::json;

use super::*;

/// `GET /session`.
pub(crate) fn list() -> Operation {
    Operation {
        id: "session.list",
        summary: "List sessions, most recently updated first",
        params: vec![],
        body: None,
        responses: with(
            vec![("200", ok("Sessions", json!({"type": "array", "items": reference("Session")})))],
            false,
        ),
    }
}

/// `POST /session`.
pub(crate) fn create() -> Operation {
    Operation {
        id: "session.create",
        summary: "Create a session",
        params: vec![],
        body: Some(json!({"type": "object", "properties": {
            "parentID": {"type": "string"}, "title": {"type": "string"},
            "agent": {"type": "string", "description": "checked: it must name an agent"},
            "model": {"type": "object", "required": ["providerID", "id"], "properties": {
                "providerID": {"type": "string"}, "id": {"type": "string"}, "variant": {"type": "string"}}},
            "permission": {"type": "array", "items": reference("PermissionRule"),
                "description": "the session's own rules, evaluated after its agent's"},
            "metadata": {"type": "object", "description": "accepted, not kept"},
            "workspaceID": {"type": "string", "description": "refused: this server has no workspaces"}}})),
        responses: with(vec![("200", ok("The new session", reference("Session")))], false),
    }
}

/// `GET /session/status`.
pub(crate) fn status() -> Operation {
    Operation {
        id: "session.status",
        summary: "The sessions that are busy or waiting to retry, by id",
        params: vec![],
        body: None,
        responses: with(
            vec![(
                "200",
                ok("Statuses", json!({"type": "object", "additionalProperties": reference("SessionStatus")})),
            )],
            false,
        ),
    }
}

/// `GET /session/{id}`.
pub(crate) fn get() -> Operation {
    Operation {
        id: "session.get",
        summary: "Get a session",
        params: vec![id()],
        body: None,
        responses: with(vec![("200", ok("The session", reference("Session")))], true),
    }
}

/// `DELETE /session/{id}`.
pub(crate) fn delete() -> Operation {
    Operation {
        id: "session.delete",
        summary: "Delete a session with its messages and children",
        params: vec![id()],
        body: None,
        responses: with(vec![("200", ok("Deleted", json!({"type": "boolean"})))], true),
    }
}

/// `POST /session/{id}/abort`.
pub(crate) fn abort() -> Operation {
    Operation {
        id: "session.abort",
        summary: "Abort the session's run",
        params: vec![id()],
        body: None,
        responses: with(vec![("200", ok("Aborted", json!({"type": "boolean"})))], true),
    }
}

/// `GET /session/{id}/children`.
pub(crate) fn children() -> Operation {
    Operation {
        id: "session.children",
        summary: "The session's child sessions (subagent tasks), newest first",
        params: vec![id()],
        body: None,
        responses: with(
            vec![("200", ok("Sessions", json!({"type": "array", "items": reference("Session")})))],
            true,
        ),
    }
}

/// `POST /session/{id}/revert`.
pub(crate) fn revert() -> Operation {
    Operation {
        id: "session.revert",
        summary: "Revert the files changed after a message or part",
        params: vec![id()],
        body: Some(json!({"type": "object", "required": ["messageID"], "properties": {
            "messageID": {"type": "string"}, "partID": {"type": "string"}}})),
        responses: with(vec![("200", ok("The updated session", reference("Session")))], true),
    }
}

/// `PATCH /session/{id}`.
pub(crate) fn update() -> Operation {
    change(
        "session.update",
        "Rename or archive a session",
        vec![id()],
        json!({"type": "object", "properties": {
        "title": string(), "time": {"type": "object", "properties": {"archived": {"type": "integer"}}},
        "permission": {"description": "refused: rules are set when a session is made"},
        "metadata": {"description": "refused"}}}),
        reference("Session"),
    )
}

/// `GET /session/{id}/todo`.
pub(crate) fn todo() -> Operation {
    read(
        "session.todo",
        "The session's todo list",
        vec![id()],
        array(json!({"type": "object", "required": ["content", "status", "priority"]})),
        true,
    )
}

/// `GET /session/{id}/diff`.
pub(crate) fn diff() -> Operation {
    read(
        "session.diff",
        "The files the session (or `messageID`'s turn) changed",
        vec![id(), query("messageID", false, string())],
        array(reference("FileDiff")),
        true,
    )
}

/// `POST /session/{id}/fork`.
pub(crate) fn fork() -> Operation {
    change(
        "session.fork",
        "Copy the session (up to `messageID`, left out)",
        vec![id()],
        json!({"type": "object", "properties": {"messageID": string()}}),
        reference("Session"),
    )
}

/// `POST /session/{id}/summarize`.
pub(crate) fn summarize() -> Operation {
    change(
        "session.summarize",
        "Compact the session now; answers when the summary is written",
        vec![id()],
        model_body(),
        json!({"type": "boolean"}),
    )
}

/// `POST /session/{id}/init`.
pub(crate) fn init() -> Operation {
    change(
        "session.init",
        "Ask the model to write the project's AGENTS.md",
        vec![id()],
        model_body(),
        json!({"type": "boolean"}),
    )
}

/// `POST /session/{id}/unrevert`.
pub(crate) fn unrevert() -> Operation {
    read(
        "session.unrevert",
        "Bring back what the pending revert removed",
        vec![id()],
        reference("Session"),
        true,
    )
}
