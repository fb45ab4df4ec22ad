//! The OpenAPI document served at `GET /doc`.
//!
//! It is built by hand: the shapes it describes are session-core's and session-store's serde
//! types (OpenCode's JSON), which do not derive schema traits, and the operation ids follow
//! the names OpenCode's generated SDK uses.

use serde_json::{Value, json};

mod more;

/// Every route as (method, path), the list the router and the document share (with
/// [`more::ROUTES`], which [`all_routes`] appends).
const V1_ROUTES: &[(&str, &str)] = &[
    ("get", "/doc"),
    ("get", "/event"),
    ("get", "/global/event"),
    ("get", "/path"),
    ("get", "/config"),
    ("get", "/mcp"),
    ("get", "/permission"),
    ("post", "/permission/{requestID}/reply"),
    ("get", "/session"),
    ("post", "/session"),
    ("get", "/session/status"),
    ("get", "/session/{id}"),
    ("delete", "/session/{id}"),
    ("get", "/session/{id}/message"),
    ("post", "/session/{id}/message"),
    ("post", "/session/{id}/prompt_async"),
    ("post", "/session/{id}/abort"),
    ("post", "/session/{id}/command"),
    ("get", "/session/{id}/children"),
    ("post", "/session/{id}/revert"),
    ("post", "/session/{id}/permissions/{permissionID}"),
];

/// Every route as (method, path): the v1 ones, then the others OpenCode 1.18's clients read.
pub(crate) fn all_routes() -> &'static [(&'static str, &'static str)] {
    static ALL: std::sync::OnceLock<Vec<(&str, &str)>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| V1_ROUTES.iter().chain(more::ROUTES).copied().collect())
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

fn ok(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": json_content(schema)})
}

fn errors(not_found: bool) -> Vec<(&'static str, Value)> {
    let mut list = vec![
        ("400", ok("Bad request: the message names the field", reference("BadRequestError"))),
        ("401", ok("Missing or wrong token (Bearer, or the Basic password)", reference("Error"))),
        ("403", ok("Sent by a web page whose origin is not allowed", reference("Error"))),
        ("421", ok("Without the token, Host is not the bound loopback address", reference("Error"))),
    ];
    if not_found {
        list.push(("404", ok("Not found", reference("NotFoundError"))));
    }
    list
}

fn directory() -> Value {
    json!({"in": "query", "name": "directory", "required": false, "schema": {"type": "string"}})
}

fn path_param(name: &str) -> Value {
    json!({"in": "path", "name": name, "required": true, "schema": {"type": "string"}})
}

struct Operation {
    id: &'static str,
    summary: &'static str,
    params: Vec<Value>,
    body: Option<Value>,
    responses: Vec<(&'static str, Value)>,
}

impl Operation {
    fn to_json(&self) -> Value {
        let mut params = self.params.clone();
        params.push(directory());
        let responses: serde_json::Map<String, Value> =
            self.responses.iter().map(|(code, value)| ((*code).to_owned(), value.clone())).collect();
        let mut operation = json!({
            "operationId": self.id,
            "summary": self.summary,
            "parameters": params,
            "responses": responses,
        });
        if let (Some(body), Some(object)) = (&self.body, operation.as_object_mut()) {
            object.insert(
                "requestBody".into(),
                json!({"required": true, "content": json_content(body.clone())}),
            );
            if let Some(responses) = object.get_mut("responses").and_then(Value::as_object_mut) {
                responses.insert(
                    "415".into(),
                    ok("The body is not declared application/json", reference("Error")),
                );
            }
        }
        operation
    }
}

fn operation(method: &str, path: &str) -> Option<Operation> {
    let id = path_param("id");
    let with = |mut list: Vec<(&'static str, Value)>, not_found: bool| {
        list.extend(errors(not_found));
        list
    };
    let prompt_body = json!({
        "type": "object",
        "required": ["parts"],
        "properties": {
            "messageID": {"type": "string"},
            "model": {"type": "object", "required": ["providerID", "modelID"], "properties": {
                "providerID": {"type": "string"}, "modelID": {"type": "string"}}},
            "agent": {"type": "string"},
            "system": {"type": "string"},
            "tools": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "parts": {"type": "array", "items": {"type": "object", "required": ["type", "text"], "properties": {
                "type": {"const": "text"}, "text": {"type": "string"}}}}
        }
    });
    let message_with_parts = json!({"type": "object", "required": ["info", "parts"], "properties": {
        "info": reference("Message"), "parts": {"type": "array", "items": reference("Part")}}});
    let op = match (method, path) {
        ("get", "/doc") => Operation {
            id: "doc",
            summary: "This OpenAPI document",
            params: vec![],
            body: None,
            responses: vec![("200", ok("The document", json!({"type": "object"})))],
        },
        ("get", "/event") => Operation {
            id: "event.subscribe",
            summary: "Server-sent events, `data: {id, type, properties}`, beginning with server.connected",
            params: vec![],
            body: None,
            responses: vec![(
                "200",
                json!({"description": "Event stream", "content": {"text/event-stream": {"schema": reference("Event")}}}),
            )],
        },
        ("get", "/global/event") => Operation {
            id: "global.event",
            summary: "The same events, each as `data: {directory, payload: {id, type, properties}}`",
            params: vec![],
            body: None,
            responses: vec![(
                "200",
                json!({"description": "Event stream", "content": {"text/event-stream": {"schema": {
                    "type": "object", "required": ["directory", "payload"], "properties": {
                        "directory": {"type": "string"}, "payload": reference("Event")}}}}}),
            )],
        },
        ("get", "/path") => Operation {
            id: "path.get",
            summary: "The user's home, the server's state and config folders, and the project folder",
            params: vec![],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Folders",
                        json!({"type": "object",
                    "required": ["home", "state", "config", "worktree", "directory"],
                    "properties": {"home": {"type": "string"}, "state": {"type": "string"},
                        "config": {"type": "string"}, "worktree": {"type": "string"},
                        "directory": {"type": "string"}}}),
                    ),
                )],
                false,
            ),
        },
        ("get", "/config") => Operation {
            id: "config.get",
            summary: "The configuration as clients see it: the default model; sharing is always disabled",
            params: vec![],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Configuration",
                        json!({"type": "object", "properties": {
                    "model": {"type": "string"}, "share": {"const": "disabled"},
                    "autoupdate": {"type": "boolean"}}}),
                    ),
                )],
                false,
            ),
        },
        ("get", "/permission") => Operation {
            id: "permission.list",
            summary: "The permission asks waiting for an answer in this instance",
            params: vec![],
            body: None,
            responses: with(
                vec![("200", ok("Asks", json!({"type": "array", "items": reference("PermissionRequest")})))],
                false,
            ),
        },
        ("post", "/permission/{requestID}/reply") => Operation {
            id: "permission.reply",
            summary: "Answer a permission ask by its id (`message` with a rejection is told to the model)",
            params: vec![path_param("requestID")],
            body: Some(json!({"type": "object", "required": ["reply"], "properties": {
                "reply": {"enum": ["once", "always", "reject"]}, "message": {"type": "string"}}})),
            responses: with(vec![("200", ok("Answered", json!({"type": "boolean"})))], true),
        },
        ("get", "/session/status") => Operation {
            id: "session.status",
            summary: "The sessions that are busy or waiting to retry, by id",
            params: vec![],
            body: None,
            responses: with(
                vec![(
                    "200",
                    ok(
                        "Statuses",
                        json!({"type": "object", "additionalProperties": reference("SessionStatus")}),
                    ),
                )],
                false,
            ),
        },
        ("get", "/mcp") => Operation {
            id: "mcp.status",
            summary: "Each configured MCP server's status: connected, failed (with its error) or disabled",
            params: vec![],
            body: None,
            responses: vec![(
                "200",
                ok(
                    "MCP server status",
                    json!({"type": "object", "additionalProperties": reference("MCPStatus")}),
                ),
            )],
        },
        ("get", "/session") => Operation {
            id: "session.list",
            summary: "List sessions, most recently updated first",
            params: vec![],
            body: None,
            responses: with(
                vec![("200", ok("Sessions", json!({"type": "array", "items": reference("Session")})))],
                false,
            ),
        },
        ("post", "/session") => Operation {
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
        },
        ("get", "/session/{id}") => Operation {
            id: "session.get",
            summary: "Get a session",
            params: vec![id],
            body: None,
            responses: with(vec![("200", ok("The session", reference("Session")))], true),
        },
        ("delete", "/session/{id}") => Operation {
            id: "session.delete",
            summary: "Delete a session with its messages and children",
            params: vec![id],
            body: None,
            responses: with(vec![("200", ok("Deleted", json!({"type": "boolean"})))], true),
        },
        ("get", "/session/{id}/message") => Operation {
            id: "session.messages",
            summary: "A session's messages with their parts",
            params: vec![
                id,
                json!({"in": "query", "name": "limit", "required": false, "schema": {"type": "integer"}}),
            ],
            body: None,
            responses: with(
                vec![("200", ok("Messages", json!({"type": "array", "items": message_with_parts})))],
                true,
            ),
        },
        ("post", "/session/{id}/message") => Operation {
            id: "session.prompt",
            summary: "Send a prompt and wait for the run to end",
            params: vec![id],
            body: Some(prompt_body),
            responses: with(
                vec![
                    ("200", ok("The last assistant message and its parts", message_with_parts)),
                    ("409", ok("The session runs in another instance", reference("Error"))),
                ],
                true,
            ),
        },
        ("post", "/session/{id}/prompt_async") => Operation {
            id: "session.promptAsync",
            summary: "Start a prompt and return at once",
            params: vec![id],
            body: Some(prompt_body),
            responses: with(
                vec![
                    ("204", json!({"description": "Prompt accepted"})),
                    ("409", ok("The session runs in another instance", reference("Error"))),
                ],
                true,
            ),
        },
        ("post", "/session/{id}/abort") => Operation {
            id: "session.abort",
            summary: "Abort the session's run",
            params: vec![id],
            body: None,
            responses: with(vec![("200", ok("Aborted", json!({"type": "boolean"})))], true),
        },
        ("post", "/session/{id}/command") => Operation {
            id: "session.command",
            summary: "Run a command (a prompt template) with arguments and wait for the run to end",
            params: vec![id.clone()],
            body: Some(json!({"type": "object", "required": ["command"], "properties": {
                "command": {"type": "string"}, "arguments": {"type": "string"}, "agent": {"type": "string"},
                "model": {"type": "string", "description": "provider/model"}, "messageID": {"type": "string"}}})),
            responses: with(
                vec![("200", ok("The last assistant message and its parts", message_with_parts.clone()))],
                true,
            ),
        },
        ("get", "/session/{id}/children") => Operation {
            id: "session.children",
            summary: "The session's child sessions (subagent tasks), newest first",
            params: vec![id.clone()],
            body: None,
            responses: with(
                vec![("200", ok("Sessions", json!({"type": "array", "items": reference("Session")})))],
                true,
            ),
        },
        ("post", "/session/{id}/revert") => Operation {
            id: "session.revert",
            summary: "Revert the files changed after a message or part",
            params: vec![id],
            body: Some(json!({"type": "object", "required": ["messageID"], "properties": {
                "messageID": {"type": "string"}, "partID": {"type": "string"}}})),
            responses: with(vec![("200", ok("The updated session", reference("Session")))], true),
        },
        ("post", "/session/{id}/permissions/{permissionID}") => Operation {
            id: "postSessionIdPermissionsPermissionId",
            summary: "Answer a permission ask",
            params: vec![id, path_param("permissionID")],
            body: Some(json!({"type": "object", "required": ["response"], "properties": {
                "response": {"enum": ["once", "always", "reject"]}}})),
            responses: with(vec![("200", ok("Answered", json!({"type": "boolean"})))], true),
        },
        _ => return more::operation(method, path),
    };
    Some(op)
}

/// The whole document.
pub(crate) fn document() -> Value {
    let mut paths = serde_json::Map::new();
    for (method, path) in all_routes() {
        let Some(operation) = operation(method, path) else { continue };
        let entry = paths.entry((*path).to_owned()).or_insert_with(|| json!({}));
        if let Some(object) = entry.as_object_mut() {
            object.insert((*method).to_owned(), operation.to_json());
        }
    }
    let error = |name: &str| {
        json!({"type": "object", "required": ["name", "data"], "properties": {
            "name": {"const": name},
            "data": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}}})
    };
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "session serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The agent session runtime's HTTP API, compatible with OpenCode 1.18's clients for the operations both have."
        },
        "security": [{"bearer": []}, {"basic": []}, {}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "basic": {"type": "http", "scheme": "basic", "description": "Any user name; the token is the password"}
            },
            "schemas": {
                "Session": {"type": "object", "required": ["id", "slug", "projectID", "directory", "title", "version", "time"],
                    "properties": {
                        "id": {"type": "string", "pattern": "^ses"}, "slug": {"type": "string"},
                        "projectID": {"type": "string"}, "directory": {"type": "string"},
                        "path": {"type": "string", "description": "The directory relative to its project's root"},
                        "parentID": {"type": "string", "pattern": "^ses"},
                        "cost": {"type": "number", "description": "What its steps cost so far, in US dollars"},
                        "tokens": {"type": "object", "required": ["input", "output", "reasoning", "cache"], "properties": {
                            "input": {"type": "number"}, "output": {"type": "number"}, "reasoning": {"type": "number"},
                            "cache": {"type": "object", "required": ["read", "write"], "properties": {
                                "read": {"type": "number"}, "write": {"type": "number"}}}}},
                        "title": {"type": "string"},
                        "agent": {"type": "string", "description": "The agent of its newest prompt"},
                        "model": {"type": "object", "required": ["id", "providerID"], "properties": {
                            "id": {"type": "string"}, "providerID": {"type": "string"}, "variant": {"type": "string"}}},
                        "version": {"type": "string"},
                        "time": {"type": "object", "required": ["created", "updated"]},
                        "permission": {"type": "array", "items": {"$ref": "#/components/schemas/PermissionRule"}},
                        "summary": {"type": "object"}, "revert": {"type": "object"}}},
                "SessionStatus": {"type": "object", "required": ["type"], "properties": {
                    "type": {"enum": ["idle", "busy", "retry"]}, "attempt": {"type": "integer"},
                    "message": {"type": "string"}, "next": {"type": "integer"}}},
                "PermissionRule": {"type": "object", "required": ["permission", "pattern", "action"], "properties": {
                    "permission": {"type": "string"}, "pattern": {"type": "string"},
                    "action": {"enum": ["allow", "ask", "deny"]}}},
                "PermissionRequest": {"type": "object", "required": ["id", "sessionID", "permission", "patterns", "metadata", "always"]},
                "Message": {"type": "object", "required": ["id", "sessionID", "role"]},
                "Part": {"type": "object", "required": ["id", "sessionID", "messageID", "type"]},
                "Event": {"type": "object", "required": ["id", "type", "properties"], "properties": {
                    "id": {"type": "string", "pattern": "^evt_"},
                    "type": {"enum": [
                        "server.connected", "session.created", "session.updated", "session.deleted",
                        "session.diff", "session.status", "session.idle", "session.error", "session.compacted",
                        "message.updated", "message.removed", "message.part.updated", "message.part.delta",
                        "message.part.removed", "todo.updated", "permission.asked", "permission.replied"]},
                    "properties": {"type": "object"}}},
                "MCPStatus": {"type": "object", "required": ["status"], "properties": {
                    "status": {"enum": ["connected", "failed", "disabled", "pending"]}, "error": {"type": "string"}}},
                "BadRequestError": error("BadRequest"),
                "NotFoundError": error("NotFoundError"),
                "Error": {"type": "object", "required": ["name", "data"]}
            }
        }
    });
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
        schemas.extend(more::schemas().into_iter().map(|(name, schema)| (name.to_owned(), schema)));
    }
    doc
}

#[cfg(test)]
mod tests {
    /// The served document, byte for byte: a change to it is reviewed in the snapshot's diff.
    #[test]
    fn the_document_is_pinned() {
        let text = serde_json::to_string_pretty(&super::document()).unwrap_or_default();
        insta::assert_snapshot!("openapi_document", text);
    }
}
