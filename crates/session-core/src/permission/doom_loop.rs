//! The doom-loop rule (SPEC 3): a model that makes the same tool call three times in a row,
//! with nothing in between, is asked about through the `doom_loop` permission.

use std::borrow::Borrow;

use serde_json::Value;

use super::asks::PermissionRequest;
use crate::js_json::{JsonObject, stringify_object};
use crate::message::{Part, ToolStatus};

/// How many identical consecutive calls make a doom loop.
pub const DOOM_LOOP_THRESHOLD: usize = 3;

/// The permission name a doom loop is asked under.
pub const DOOM_LOOP_PERMISSION: &str = "doom_loop";

/// Checks the doom-loop rule when a tool call starts: `parts` are the current assistant
/// message's parts in id order (the call's own part already running with `normalized_input`).
/// Returns the permission to ask for when the last three parts are all calls of `call_name`,
/// none pending, whose inputs serialize exactly as `normalized_input` does.
pub fn check_doom_loop(
    parts: &[Part],
    call_name: &str,
    normalized_input: &JsonObject,
) -> Option<PermissionRequest> {
    check_doom_loop_in(parts, call_name, normalized_input)
}

/// [`check_doom_loop`] over parts held however the caller holds them (the processor shares
/// its parts with the effects that carry them).
pub(crate) fn check_doom_loop_in<P: Borrow<Part>>(
    parts: &[P],
    call_name: &str,
    normalized_input: &JsonObject,
) -> Option<PermissionRequest> {
    let start = parts.len().checked_sub(DOOM_LOOP_THRESHOLD)?;
    let last = parts.get(start..)?;
    let candidates = last.iter().all(|part| {
        part.borrow()
            .as_tool()
            .is_some_and(|tool| tool.tool == call_name && tool.state.status() != ToolStatus::Pending)
    });
    // The cheap checks first: serializing inputs is the costly part and rarely needed.
    if !candidates {
        return None;
    }
    // OpenCode compares JSON.stringify texts, so key order matters and 1.0 equals 1.
    let wanted = stringify_object(normalized_input);
    let looping = last
        .iter()
        .filter_map(|part| part.borrow().as_tool())
        .all(|tool| stringify_object(tool.state.input()) == wanted);
    looping.then(|| doom_loop_request(call_name, normalized_input))
}

/// The `doom_loop` ask for a tool and its input: `{permission: "doom_loop", patterns: [tool],
/// always: [tool], metadata: {tool, input}}`.
pub fn doom_loop_request(tool: &str, input: &JsonObject) -> PermissionRequest {
    let mut metadata = JsonObject::new();
    metadata.insert("tool".to_owned(), Value::String(tool.to_owned()));
    metadata.insert("input".to_owned(), Value::Object(input.clone()));
    PermissionRequest {
        permission: DOOM_LOOP_PERMISSION.to_owned(),
        patterns: vec![tool.to_owned()],
        always: vec![tool.to_owned()],
        metadata,
    }
}
