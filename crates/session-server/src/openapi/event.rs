//! The operations of the event streams.

use serde_json::json;

use super::*;

/// `GET /event`.
pub(crate) fn stream() -> Operation {
    Operation {
        id: "event.subscribe",
        summary: "Server-sent events, `data: {id, type, properties}`, beginning with server.connected",
        params: vec![],
        body: None,
        responses: vec![(
            "200",
            json!({"description": "Event stream", "content": {"text/event-stream": {"schema": reference("Event")}}}),
        )],
    }
}

/// `GET /global/event`.
pub(crate) fn global_stream() -> Operation {
    Operation {
        id: "global.event",
        summary: "The same events, each as `data: {directory, payload: {id, type, properties}}`",
        params: vec![],
        body: None,
        responses: vec![(
            "200",
            json!({"description": "Event stream", "content": {"text/event-stream": {"schema": {
                "type": "object", "required": ["directory", "payload"], "properties": {
                    "directory": {"type": "string"}, "payload": reference("Event")}}}}}),
        )],
    }
}
