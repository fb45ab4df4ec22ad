//! The operations of questions: no tool here asks one.

use serde_json::json;

use super::*;

/// `GET /question`.
pub(crate) fn list() -> Operation {
    read(
        "question.list",
        "Questions waiting: none (no tool here asks)",
        vec![],
        array(json!({"type": "object"})),
        false,
    )
}

/// `POST /question/{requestID}/reply`.
pub(crate) fn reply() -> Operation {
    read(
        "question.reply",
        "Always 404: no question waits here",
        vec![path_param("requestID")],
        json!({"type": "boolean"}),
        true,
    )
}

/// `POST /question/{requestID}/reject`.
pub(crate) fn reject() -> Operation {
    read(
        "question.reject",
        "Always 404: no question waits here",
        vec![path_param("requestID")],
        json!({"type": "boolean"}),
        true,
    )
}
