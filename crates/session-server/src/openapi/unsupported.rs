//! The operations of features this server lacks, answered empty or refused.

use serde_json::json;

use super::*;

/// `GET /lsp`.
pub(crate) fn lsp() -> Operation {
    read("lsp.status", "Language servers: none run here", vec![], array(json!({"type": "object"})), false)
}

/// `GET /formatter`.
pub(crate) fn formatter() -> Operation {
    read("formatter.status", "Formatters: none run here", vec![], array(json!({"type": "object"})), false)
}

/// `GET /experimental/workspace`.
pub(crate) fn workspaces() -> Operation {
    read("experimental.workspace.list", "Workspaces: none", vec![], array(json!({"type": "object"})), false)
}

/// `GET /experimental/workspace/status`.
pub(crate) fn workspace_status() -> Operation {
    read(
        "experimental.workspace.status",
        "Workspace connections: none",
        vec![],
        array(json!({"type": "object"})),
        false,
    )
}

/// `GET /api/integration`.
pub(crate) fn integrations() -> Operation {
    read(
        "v2.integration.list",
        "Integrations: none",
        location(),
        located(array(json!({"type": "object"}))),
        false,
    )
}

/// `GET /api/reference`.
pub(crate) fn references() -> Operation {
    read(
        "v2.reference.list",
        "References: none",
        location(),
        located(array(json!({"type": "object"}))),
        false,
    )
}

/// `DELETE /session/{id}/message/{messageID}`.
pub(crate) fn delete_message() -> Operation {
    refused("session.deleteMessage", "Not supported: revert to a message instead", vec![id(), message()])
}

/// `DELETE /session/{id}/message/{messageID}/part/{partID}`.
pub(crate) fn delete_part() -> Operation {
    refused("part.delete", "Not supported: revert instead", vec![id(), message(), path_param("partID")])
}

/// `PATCH /session/{id}/message/{messageID}/part/{partID}`.
pub(crate) fn update_part() -> Operation {
    refused("part.update", "Not supported: revert instead", vec![id(), message(), path_param("partID")])
}

/// `POST /session/{id}/share`.
pub(crate) fn share() -> Operation {
    refused("session.share", "Not supported: sharing is disabled", vec![id()])
}

/// `DELETE /session/{id}/share`.
pub(crate) fn unshare() -> Operation {
    refused("session.unshare", "Not supported: sharing is disabled", vec![id()])
}

/// `POST /session/{id}/shell`.
pub(crate) fn shell() -> Operation {
    refused("session.shell", "Not supported: ask the agent to run the command", vec![id()])
}
