//! The operations of the routes OpenCode 1.18's terminal UI and v2 client read besides the v1
//! ones: providers, agents, commands, the project, files, features this server lacks (answered
//! empty), the v2 `/api/*` reads, and the session routes beyond the v1 set.

use serde_json::{Value, json};

use super::{Operation, errors, ok, path_param, reference};

/// The routes described here, in the order the document lists them.
pub(super) const ROUTES: &[(&str, &str)] = &[
    ("get", "/config/providers"),
    ("get", "/provider"),
    ("get", "/provider/auth"),
    ("get", "/agent"),
    ("get", "/command"),
    ("get", "/skill"),
    ("get", "/project"),
    ("get", "/project/current"),
    ("get", "/project/{projectID}/directories"),
    ("get", "/vcs"),
    ("get", "/lsp"),
    ("get", "/formatter"),
    ("get", "/question"),
    ("post", "/question/{requestID}/reply"),
    ("post", "/question/{requestID}/reject"),
    ("get", "/experimental/capabilities"),
    ("get", "/experimental/console"),
    ("get", "/experimental/resource"),
    ("get", "/experimental/workspace"),
    ("get", "/experimental/workspace/status"),
    ("get", "/file"),
    ("get", "/file/content"),
    ("get", "/file/status"),
    ("get", "/find"),
    ("get", "/find/file"),
    ("get", "/find/symbol"),
    ("get", "/api/location"),
    ("get", "/api/agent"),
    ("get", "/api/command"),
    ("get", "/api/skill"),
    ("get", "/api/provider"),
    ("get", "/api/model"),
    ("get", "/api/integration"),
    ("get", "/api/reference"),
    ("patch", "/session/{id}"),
    ("get", "/session/{id}/message/{messageID}"),
    ("delete", "/session/{id}/message/{messageID}"),
    ("delete", "/session/{id}/message/{messageID}/part/{partID}"),
    ("patch", "/session/{id}/message/{messageID}/part/{partID}"),
    ("get", "/session/{id}/todo"),
    ("get", "/session/{id}/diff"),
    ("post", "/session/{id}/fork"),
    ("post", "/session/{id}/share"),
    ("delete", "/session/{id}/share"),
    ("post", "/session/{id}/summarize"),
    ("post", "/session/{id}/init"),
    ("post", "/session/{id}/shell"),
    ("post", "/session/{id}/unrevert"),
];

fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

fn query(name: &str, required: bool, schema: Value) -> Value {
    json!({"in": "query", "name": name, "required": required, "schema": schema})
}

fn string() -> Value {
    json!({"type": "string"})
}

/// A v2 answer: `{location, data}`.
fn located(data: Value) -> Value {
    json!({"type": "object", "required": ["location", "data"], "properties": {
        "location": reference("LocationInfo"), "data": data}})
}

fn unsupported() -> (&'static str, Value) {
    ("501", ok("Not supported by this server; the message says what to do instead", reference("Error")))
}

/// A read: `GET` with `params`, answering `schema`.
fn read(
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
fn change(
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
fn refused(id: &'static str, summary: &'static str, params: Vec<Value>) -> Operation {
    let mut responses = vec![unsupported()];
    responses.extend(errors(false));
    Operation { id, summary, params, body: None, responses }
}

/// The operation of `method path`, when it is one of [`ROUTES`].
pub(super) fn operation(method: &str, path: &str) -> Option<Operation> {
    let id = || path_param("id");
    let message = || path_param("messageID");
    let location =
        || vec![query("location[directory]", false, string()), query("location[workspace]", false, string())];
    let providers = json!({"type": "object", "required": ["providers", "default"], "properties": {
        "providers": array(reference("Provider")),
        "default": {"type": "object", "additionalProperties": string()}}});
    let model_body = json!({"type": "object", "properties": {
        "providerID": string(), "modelID": string(), "auto": {"type": "boolean"}, "messageID": string()}});
    let op = match (method, path) {
        ("get", "/config/providers") => read(
            "config.providers",
            "The providers this server can call, with their models and default model",
            vec![],
            providers,
            false,
        ),
        ("get", "/provider") => read(
            "provider.list",
            "The same providers (every one is connected) and their default models",
            vec![],
            json!({"type": "object", "required": ["all", "default", "connected"], "properties": {
            "all": array(reference("Provider")), "default": {"type": "object"}, "connected": array(string())}}),
            false,
        ),
        ("get", "/provider/auth") => read(
            "provider.auth",
            "Sign-in methods: none (keys come from the environment and the configuration)",
            vec![],
            json!({"type": "object"}),
            false,
        ),
        ("get", "/agent") => {
            read("app.agents", "The agents, the default one first", vec![], array(reference("Agent")), false)
        }
        ("get", "/command") => read(
            "command.list",
            "The configured commands with their placeholders, then the skills marked as commands",
            vec![],
            array(reference("Command")),
            false,
        ),
        ("get", "/skill") => read(
            "app.skills",
            "The skills the runtime loaded, by name",
            vec![],
            array(json!({"type": "object", "properties": {
                "name": string(), "description": string(), "location": string(), "content": string()},
                "required": ["name", "location", "content"]})),
            false,
        ),
        ("get", "/project") => read(
            "project.list",
            "The one project this server serves",
            vec![],
            array(reference("Project")),
            false,
        ),
        ("get", "/project/current") => {
            read("project.current", "The project this server serves", vec![], reference("Project"), false)
        }
        ("get", "/project/{projectID}/directories") => read(
            "project.directories",
            "The project's folder",
            vec![path_param("projectID")],
            array(json!({"type": "object", "required": ["directory"]})),
            true,
        ),
        ("get", "/vcs") => read(
            "vcs.get",
            "The branch HEAD names",
            vec![],
            json!({"type": "object", "properties": {"branch": string()}}),
            false,
        ),
        ("get", "/lsp") => read(
            "lsp.status",
            "Language servers: none run here",
            vec![],
            array(json!({"type": "object"})),
            false,
        ),
        ("get", "/formatter") => read(
            "formatter.status",
            "Formatters: none run here",
            vec![],
            array(json!({"type": "object"})),
            false,
        ),
        ("get", "/question") => read(
            "question.list",
            "Questions waiting: none (no tool here asks)",
            vec![],
            array(json!({"type": "object"})),
            false,
        ),
        ("post", "/question/{requestID}/reply") => read(
            "question.reply",
            "Always 404: no question waits here",
            vec![path_param("requestID")],
            json!({"type": "boolean"}),
            true,
        ),
        ("post", "/question/{requestID}/reject") => read(
            "question.reject",
            "Always 404: no question waits here",
            vec![path_param("requestID")],
            json!({"type": "boolean"}),
            true,
        ),
        ("get", "/experimental/capabilities") => read(
            "experimental.capabilities.get",
            "What this server can do: no background subagents",
            vec![],
            json!({"type": "object", "required": ["backgroundSubagents"]}),
            false,
        ),
        ("get", "/experimental/console") => read(
            "experimental.console.get",
            "No console organisation",
            vec![],
            json!({"type": "object", "required": ["consoleManagedProviders", "switchableOrgCount"]}),
            false,
        ),
        ("get", "/experimental/resource") => read(
            "experimental.resource.list",
            "MCP resources offered to clients: none",
            vec![],
            json!({"type": "object"}),
            false,
        ),
        ("get", "/experimental/workspace") => read(
            "experimental.workspace.list",
            "Workspaces: none",
            vec![],
            array(json!({"type": "object"})),
            false,
        ),
        ("get", "/experimental/workspace/status") => read(
            "experimental.workspace.status",
            "Workspace connections: none",
            vec![],
            array(json!({"type": "object"})),
            false,
        ),
        ("get", "/file") => read(
            "file.list",
            "A project folder's entries (outside the project: 403)",
            vec![query("path", true, string())],
            array(reference("FileNode")),
            true,
        ),
        ("get", "/file/content") => read(
            "file.read",
            "A project file: text, or base64 (outside the project: 403)",
            vec![query("path", true, string())],
            json!({"type": "object", "required": ["type", "content"]}),
            true,
        ),
        ("get", "/file/status") => read(
            "file.status",
            "The files git sees changed against HEAD",
            vec![],
            array(json!({"type": "object", "required": ["path", "added", "removed", "status"]})),
            false,
        ),
        ("get", "/find") => read(
            "find.text",
            "Lines matching a regular expression (at most 200)",
            vec![query("pattern", true, string())],
            array(json!({"type": "object"})),
            false,
        ),
        ("get", "/find/file") => read(
            "find.files",
            "Paths whose letters contain the query in order, shortest first",
            vec![
                query("query", true, string()),
                query("dirs", false, json!({"enum": ["true", "false"]})),
                query("type", false, json!({"enum": ["file", "directory"]})),
                query("limit", false, json!({"type": "integer"})),
            ],
            array(string()),
            false,
        ),
        ("get", "/find/symbol") => read(
            "find.symbols",
            "Symbols: none (no language server here)",
            vec![query("query", true, string())],
            array(json!({"type": "object"})),
            false,
        ),
        ("get", "/api/location") => {
            read("v2.location.get", "Where this server works", location(), reference("LocationInfo"), false)
        }
        ("get", "/api/agent") => read(
            "v2.agent.list",
            "The agents, v2 shape",
            location(),
            located(array(json!({"type": "object"}))),
            false,
        ),
        ("get", "/api/command") => read(
            "v2.command.list",
            "The commands, v2 shape",
            location(),
            located(array(json!({"type": "object"}))),
            false,
        ),
        ("get", "/api/skill") => read(
            "v2.skill.list",
            "The skills, v2 shape",
            location(),
            located(array(json!({"type": "object"}))),
            false,
        ),
        ("get", "/api/provider") => read(
            "v2.provider.list",
            "The providers, v2 shape",
            location(),
            located(array(json!({"type": "object"}))),
            false,
        ),
        ("get", "/api/model") => read(
            "v2.model.list",
            "The models, v2 shape",
            location(),
            located(array(json!({"type": "object"}))),
            false,
        ),
        ("get", "/api/integration") => read(
            "v2.integration.list",
            "Integrations: none",
            location(),
            located(array(json!({"type": "object"}))),
            false,
        ),
        ("get", "/api/reference") => read(
            "v2.reference.list",
            "References: none",
            location(),
            located(array(json!({"type": "object"}))),
            false,
        ),
        ("patch", "/session/{id}") => change(
            "session.update",
            "Rename or archive a session",
            vec![id()],
            json!({"type": "object", "properties": {
            "title": string(), "time": {"type": "object", "properties": {"archived": {"type": "integer"}}},
            "permission": {"description": "refused: rules are set when a session is made"},
            "metadata": {"description": "refused"}}}),
            reference("Session"),
        ),
        ("get", "/session/{id}/message/{messageID}") => read(
            "session.message",
            "One message with its parts",
            vec![id(), message()],
            json!({"type": "object", "required": ["info", "parts"]}),
            true,
        ),
        ("delete", "/session/{id}/message/{messageID}") => refused(
            "session.deleteMessage",
            "Not supported: revert to a message instead",
            vec![id(), message()],
        ),
        ("delete", "/session/{id}/message/{messageID}/part/{partID}") => refused(
            "part.delete",
            "Not supported: revert instead",
            vec![id(), message(), path_param("partID")],
        ),
        ("patch", "/session/{id}/message/{messageID}/part/{partID}") => refused(
            "part.update",
            "Not supported: revert instead",
            vec![id(), message(), path_param("partID")],
        ),
        ("get", "/session/{id}/todo") => read(
            "session.todo",
            "The session's todo list",
            vec![id()],
            array(json!({"type": "object", "required": ["content", "status", "priority"]})),
            true,
        ),
        ("get", "/session/{id}/diff") => read(
            "session.diff",
            "The files the session (or `messageID`'s turn) changed",
            vec![id(), query("messageID", false, string())],
            array(reference("FileDiff")),
            true,
        ),
        ("post", "/session/{id}/fork") => change(
            "session.fork",
            "Copy the session (up to `messageID`, left out)",
            vec![id()],
            json!({"type": "object", "properties": {"messageID": string()}}),
            reference("Session"),
        ),
        ("post", "/session/{id}/share") => {
            refused("session.share", "Not supported: sharing is disabled", vec![id()])
        }
        ("delete", "/session/{id}/share") => {
            refused("session.unshare", "Not supported: sharing is disabled", vec![id()])
        }
        ("post", "/session/{id}/summarize") => change(
            "session.summarize",
            "Compact the session now; answers when the summary is written",
            vec![id()],
            model_body.clone(),
            json!({"type": "boolean"}),
        ),
        ("post", "/session/{id}/init") => change(
            "session.init",
            "Ask the model to write the project's AGENTS.md",
            vec![id()],
            model_body,
            json!({"type": "boolean"}),
        ),
        ("post", "/session/{id}/shell") => {
            refused("session.shell", "Not supported: ask the agent to run the command", vec![id()])
        }
        ("post", "/session/{id}/unrevert") => read(
            "session.unrevert",
            "Bring back what the pending revert removed",
            vec![id()],
            reference("Session"),
            true,
        ),
        _ => return None,
    };
    Some(op)
}

/// The schemas the operations here name.
pub(super) fn schemas() -> Vec<(&'static str, Value)> {
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
}
