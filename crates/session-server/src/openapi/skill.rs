//! The operations of the skills.

use serde_json::json;

use super::*;

/// `GET /skill`.
pub(crate) fn list() -> Operation {
    read(
        "app.skills",
        "The skills the runtime loaded, by name",
        vec![],
        array(json!({"type": "object", "properties": {
            "name": string(), "description": string(), "location": string(), "content": string()},
            "required": ["name", "location", "content"]})),
        false,
    )
}

/// `GET /api/skill`.
pub(crate) fn list_v2() -> Operation {
    read(
        "v2.skill.list",
        "The skills, v2 shape",
        location(),
        located(array(json!({"type": "object"}))),
        false,
    )
}
