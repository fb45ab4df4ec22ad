//! One bus event of every kind, for the tests that pin the JSON each is shown as.

use serde_json::{Value, json};
use session_runtime::BusEvent;
use session_runtime::sessions::SessionStatus;

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

/// Every kind of bus event, each with its optional fields filled.
pub(crate) fn every_bus_event() -> Vec<BusEvent> {
    let session: session_runtime::sessions::Session = from(json!({
        "id": "ses_01ABCdef", "slug": "calm-otter", "projectID": "p", "directory": "/w", "path": "",
        "parentID": "ses_01ABCdee", "cost": 0.0105,
        "tokens": {"input": 7, "output": 1, "reasoning": 0, "cache": {"read": 2, "write": 3}},
        "title": "T", "agent": "build", "model": {"id": "m", "providerID": "p", "variant": "default"},
        "version": "0.1.0", "time": {"created": 1, "updated": 2},
        "permission": [{"permission": "read", "pattern": "*.env", "action": "deny"}],
        "someExtra": {"kept": true}}));
    let user: session_core::Message = from(json!({
        "role": "user", "id": "msg_1", "sessionID": "ses_01ABCdef", "time": {"created": 3},
        "agent": "build", "model": {"providerID": "p", "modelID": "m"}}));
    let part: session_core::Part = from(json!({
        "id": "prt_1", "sessionID": "ses_01ABCdef", "messageID": "msg_1", "type": "text", "text": "Hel",
        "time": {"start": 4}}));
    let ask: session_core::permission::PermissionAsk = from(json!({
        "id": "per_1", "sessionID": "ses_01ABCdef", "permission": "bash", "patterns": ["ls"],
        "always": ["ls *"], "metadata": {"command": "ls"}, "tool": {"messageID": "msg_1", "callID": "call_1"}}));
    let id = || from::<session_core::SessionId>(json!("ses_01ABCdef"));
    vec![
        BusEvent::SessionCreated { info: Box::new(session.clone()) },
        BusEvent::SessionUpdated { info: Box::new(session) },
        BusEvent::SessionDiff {
            session_id: id(),
            diff: from(json!([{"file": "src/a.rs", "additions": 2, "deletions": 1, "status": "modified"}])),
        },
        BusEvent::SessionStatus { session_id: id(), status: SessionStatus::Busy },
        BusEvent::SessionStatus {
            session_id: id(),
            status: SessionStatus::Retry { attempt: 2, message: "overloaded".into(), next: 9 },
        },
        BusEvent::SessionIdle { session_id: id() },
        BusEvent::SessionError {
            session_id: id(),
            error: session_core::MessageError::UnknownError { message: "boom".into() },
        },
        BusEvent::SessionCompacted { session_id: id() },
        BusEvent::MessageUpdated { info: Box::new(user) },
        BusEvent::MessageRemoved { session_id: id(), message_id: from(json!("msg_1")) },
        BusEvent::PartRemoved {
            session_id: id(),
            message_id: from(json!("msg_1")),
            part_id: from(json!("prt_1")),
        },
        BusEvent::PartUpdated { part: Box::new(part) },
        BusEvent::PartDelta {
            session_id: id(),
            message_id: from(json!("msg_1")),
            part_id: from(json!("prt_1")),
            field: "text".into(),
            delta: "lo".into(),
        },
        BusEvent::TodoUpdated {
            session_id: id(),
            todos: from(json!([{"content": "c", "status": "pending", "priority": "high"}])),
        },
        BusEvent::PermissionAsked(Box::new(ask)),
        BusEvent::PermissionReplied {
            session_id: id(),
            permission_id: from(json!("per_1")),
            response: session_core::permission::Reply::Always,
        },
        BusEvent::QuestionAsked(Box::new(from(json!({
            "id": "que_1", "sessionID": "ses_01ABCdef",
            "questions": [{"question": "Which?", "header": "Pick", "multiple": true,
                "options": [{"label": "A", "description": "first"}]}],
            "tool": {"messageID": "msg_1", "callID": "call_1"}})))),
        BusEvent::QuestionReplied {
            session_id: id(),
            request_id: from(json!("que_1")),
            answers: vec![vec!["A".into(), "my own".into()]],
        },
        BusEvent::QuestionRejected { session_id: id(), request_id: from(json!("que_1")) },
    ]
}
