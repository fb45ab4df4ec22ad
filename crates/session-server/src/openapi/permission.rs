//! The operations of permission asks and their answers.

use serde_json::json;

use super::*;

/// `GET /permission`.
pub(crate) fn pending() -> Operation {
    Operation {
        id: "permission.list",
        summary: "The permission asks waiting for an answer in this instance",
        params: vec![],
        body: None,
        responses: with(
            vec![("200", ok("Asks", json!({"type": "array", "items": reference("PermissionRequest")})))],
            false,
        ),
    }
}

/// `POST /permission/{requestID}/reply`.
pub(crate) fn reply() -> Operation {
    Operation {
        id: "permission.reply",
        summary: "Answer a permission ask by its id (`message` with a rejection is told to the model)",
        params: vec![path_param("requestID")],
        body: Some(json!({"type": "object", "required": ["reply"], "properties": {
            "reply": {"enum": ["once", "always", "reject"]}, "message": {"type": "string"}}})),
        responses: with(vec![("200", ok("Answered", json!({"type": "boolean"})))], true),
    }
}

/// `POST /session/{id}/permissions/{permissionID}`.
pub(crate) fn reply_in_session() -> Operation {
    Operation {
        id: "postSessionIdPermissionsPermissionId",
        summary: "Answer a permission ask",
        params: vec![id(), path_param("permissionID")],
        body: Some(json!({"type": "object", "required": ["response"], "properties": {
            "response": {"enum": ["once", "always", "reject"]}}})),
        responses: with(vec![("200", ok("Answered", json!({"type": "boolean"})))], true),
    }
}
