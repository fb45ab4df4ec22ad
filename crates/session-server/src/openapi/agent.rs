//! The operations of the agents.

use serde_json::json;

use super::*;

/// `GET /agent`.
pub(crate) fn list() -> Operation {
    read("app.agents", "The agents, the default one first", vec![], array(reference("Agent")), false)
}

/// `GET /api/agent`.
pub(crate) fn list_v2() -> Operation {
    read(
        "v2.agent.list",
        "The agents, v2 shape",
        location(),
        located(array(json!({"type": "object"}))),
        false,
    )
}
