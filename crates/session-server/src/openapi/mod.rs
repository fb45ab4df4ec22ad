//! The OpenAPI document served at `GET /doc`.
//!
//! It is built by hand: the shapes it describes are session-core's and session-store's serde
//! types (OpenCode's JSON), which do not derive schema traits, and the operation ids follow
//! the names OpenCode's generated SDK uses. Each operation is a function in the submodule of
//! its resource; the route table (`crate::routes`) pairs it with its method, path and handler.

use serde_json::{Value, json};

pub(crate) mod agent;
pub(crate) mod command;
pub(crate) mod config;
pub(crate) mod event;
pub(crate) mod file;
pub(crate) mod mcp;
pub(crate) mod message;
pub(crate) mod permission;
pub(crate) mod project;
pub(crate) mod provider;
pub(crate) mod question;
pub(crate) mod session;
pub(crate) mod skill;
pub(crate) mod unsupported;

pub(super) fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub(super) fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

pub(super) fn ok(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": json_content(schema)})
}

pub(super) fn errors(not_found: bool) -> Vec<(&'static str, Value)> {
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

pub(super) fn directory() -> Value {
    json!({"in": "query", "name": "directory", "required": false, "schema": {"type": "string"}})
}

pub(super) fn path_param(name: &str) -> Value {
    json!({"in": "path", "name": name, "required": true, "schema": {"type": "string"}})
}

/// One operation of the document.
pub(crate) struct Operation {
    id: &'static str,
    summary: &'static str,
    params: Vec<Value>,
    body: Option<Value>,
    responses: Vec<(&'static str, Value)>,
}

impl Operation {
    /// The operation as the document lists it.
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

pub(super) fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

pub(super) fn query(name: &str, required: bool, schema: Value) -> Value {
    json!({"in": "query", "name": name, "required": required, "schema": schema})
}

pub(super) fn string() -> Value {
    json!({"type": "string"})
}

/// A v2 answer: `{location, data}`.
pub(super) fn located(data: Value) -> Value {
    json!({"type": "object", "required": ["location", "data"], "properties": {
        "location": reference("LocationInfo"), "data": data}})
}

pub(super) fn unsupported() -> (&'static str, Value) {
    ("501", ok("Not supported by this server; the message says what to do instead", reference("Error")))
}

/// A read: `GET` with `params`, answering `schema`.
pub(super) fn read(
    id: &'static str,
    summary: &'static str,
    params: Vec<Value>,
    schema: Value,
    not_found: bool,
) -> Operation {
    let mut responses = vec![("200", ok(summary, schema))];
    responses.extend(errors(not_found));
    Operation { id, summary, params, body: None, responses }
}

/// A change with `body`, answering `schema`.
pub(super) fn change(
    id: &'static str,
    summary: &'static str,
    params: Vec<Value>,
    body: Value,
    schema: Value,
) -> Operation {
    let mut responses = vec![("200", ok(summary, schema))];
    responses.extend(errors(true));
    Operation { id, summary, params, body: Some(body), responses }
}

/// A route this server answers with 501 `UnsupportedError` only.
pub(super) fn refused(id: &'static str, summary: &'static str, params: Vec<Value>) -> Operation {
    let mut responses = vec![unsupported()];
    responses.extend(errors(false));
    Operation { id, summary, params, body: None, responses }
}

/// The `id` path parameter.
pub(super) fn id() -> Value {
    path_param("id")
}

/// The `messageID` path parameter.
pub(super) fn message() -> Value {
    path_param("messageID")
}

/// The `location[...]` query parameters of the v2 routes.
pub(super) fn location() -> Vec<Value> {
    vec![query("location[directory]", false, string()), query("location[workspace]", false, string())]
}

/// `list` and the refusals that apply (404 when `not_found`).
pub(super) fn with(mut list: Vec<(&'static str, Value)>, not_found: bool) -> Vec<(&'static str, Value)> {
    list.extend(errors(not_found));
    list
}

/// The body of a prompt.
pub(super) fn prompt_body() -> Value {
    json!({
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
    })
}

/// A message with its parts.
pub(super) fn message_with_parts() -> Value {
    json!({"type": "object", "required": ["info", "parts"], "properties": {
    "info": reference("Message"), "parts": {"type": "array", "items": reference("Part")}}})
}

/// The providers with their default models.
pub(super) fn providers() -> Value {
    json!({"type": "object", "required": ["providers", "default"], "properties": {
    "providers": array(reference("Provider")),
    "default": {"type": "object", "additionalProperties": string()}}})
}

/// The model body of `summarize` and `init`.
pub(super) fn model_body() -> Value {
    json!({"type": "object", "properties": {
    "providerID": string(), "modelID": string(), "auto": {"type": "boolean"}, "messageID": string()}})
}

/// `GET /doc`.
pub(crate) fn doc() -> Operation {
    Operation {
        id: "doc",
        summary: "This OpenAPI document",
        params: vec![],
        body: None,
        responses: vec![("200", ok("The document", json!({"type": "object"})))],
    }
}

/// The whole document, listing `operations` (method, path, operation) in their order.
pub(crate) fn document(
    operations: impl IntoIterator<Item = (&'static str, &'static str, Operation)>,
) -> Value {
    let mut paths = serde_json::Map::new();
    for (method, path, operation) in operations {
        let entry = paths.entry(path.to_owned()).or_insert_with(|| json!({}));
        if let Some(object) = entry.as_object_mut() {
            object.insert(method.to_owned(), operation.to_json());
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
                        "message.part.removed", "todo.updated", "permission.asked", "permission.replied",
                        "question.asked", "question.replied", "question.rejected"]},
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
        schemas.extend(more_schemas().into_iter().map(|(name, schema)| (name.to_owned(), schema)));
    }
    doc
}

/// The schemas the operations of the other resources name.
fn more_schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "Provider",
            json!({"type": "object", "required": ["id", "name", "source", "env", "options", "models"]}),
        ),
        ("Agent", json!({"type": "object", "required": ["name", "mode", "permission", "options"]})),
        ("Command", json!({"type": "object", "required": ["name", "template", "hints"]})),
        ("Project", json!({"type": "object", "required": ["id", "worktree", "time", "sandboxes"]})),
        ("FileNode", json!({"type": "object", "required": ["name", "path", "absolute", "type", "ignored"]})),
        ("FileDiff", json!({"type": "object", "required": ["additions", "deletions"]})),
        ("LocationInfo", json!({"type": "object", "required": ["directory", "project"]})),
    ]
    .into_iter()
    .chain(question::schemas())
    .collect()
}

#[cfg(test)]
mod tests {
    /// The served document, byte for byte: a change to it is reviewed in the snapshot's diff.
    #[test]
    fn the_document_is_pinned() {
        let text = serde_json::to_string_pretty(&crate::routes::document()).unwrap_or_default();
        insta::assert_snapshot!("openapi_document", text);
    }
}
