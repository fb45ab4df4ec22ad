//! The operations of the server's folders, the client's view of the configuration, and the capability flags.

use serde_json::json;

use super::*;

/// `GET /path`.
pub(crate) fn path() -> Operation {
    Operation {
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
    }
}

/// `GET /config`.
pub(crate) fn client_config() -> Operation {
    Operation {
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
    }
}

/// `GET /experimental/capabilities`.
pub(crate) fn capabilities() -> Operation {
    read(
        "experimental.capabilities.get",
        "What this server can do: no background subagents",
        vec![],
        json!({"type": "object", "required": ["backgroundSubagents"]}),
        false,
    )
}

/// `GET /experimental/console`.
pub(crate) fn console() -> Operation {
    read(
        "experimental.console.get",
        "No console organisation",
        vec![],
        json!({"type": "object", "required": ["consoleManagedProviders", "switchableOrgCount"]}),
        false,
    )
}
