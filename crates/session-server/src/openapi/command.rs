//! The operations of the commands (prompt templates).

use serde_json::json;

use super::*;

/// `GET /command`.
pub(crate) fn list() -> Operation {
    read(
        "command.list",
        "The configured commands with their placeholders, then the skills marked as commands",
        vec![],
        array(reference("Command")),
        false,
    )
}

/// `GET /api/command`.
pub(crate) fn list_v2() -> Operation {
    read(
        "v2.command.list",
        "The commands, v2 shape",
        location(),
        located(array(json!({"type": "object"}))),
        false,
    )
}
