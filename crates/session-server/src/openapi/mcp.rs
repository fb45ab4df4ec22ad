//! The operations of the MCP servers and their resources.

use serde_json::json;

use super::*;

/// `GET /mcp`.
pub(crate) fn status() -> Operation {
    Operation {
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
    }
}

/// `GET /experimental/resource`.
pub(crate) fn resources() -> Operation {
    read(
        "experimental.resource.list",
        "MCP resources offered to clients: none",
        vec![],
        json!({"type": "object"}),
        false,
    )
}
