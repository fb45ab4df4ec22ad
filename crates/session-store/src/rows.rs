//! Rows as stored: messages and parts as whole JSON documents beside the columns that queries
//! and exact money need, and the pure rules that close what a crash left open.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde_json::Value;
use session_core::{Message, MessageError, MessageId, Part, PartId, PartKind, SessionId};

use crate::error::{EntityKind, StoreError, StoreResult};
use crate::model::{RawPart, SkippedRow, Usage};

/// The part `type`s this version reads; any other is kept raw.
pub(crate) const KNOWN_PART_TYPES: &[&str] = &[
    "text",
    "reasoning",
    "file",
    "tool",
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "agent",
    "subtask",
    "retry",
    "compaction",
];

/// A part as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PartRow {
    pub id: String,
    pub session_id: String,
    pub message_id: String,
    pub kind: String,
    pub open: bool,
    pub cost: Option<String>,
    pub data: String,
    /// A step-finish part's usage, which its write adds to its session's totals.
    pub usage: Option<Usage>,
}

/// A message as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MessageRow {
    pub id: String,
    pub session_id: String,
    pub role: &'static str,
    pub open: bool,
    pub cost: Option<String>,
    pub data: String,
}

/// A row to write.
#[derive(Debug, Clone)]
pub(crate) enum RowWrite {
    /// A message, and the time its session was touched.
    Message(MessageRow, u64),
    /// A part.
    Part(PartRow),
}

/// True while a part is unfinished: a pending or running tool, a text or reasoning part
/// without its end time.
pub(crate) fn part_is_open(part: &Part) -> bool {
    match &part.kind {
        PartKind::Tool(tool) => tool.state.is_open(),
        PartKind::Text(text) => text.time.is_some_and(|t| t.end.is_none()),
        PartKind::Reasoning(reasoning) => reasoning.time.end.is_none(),
        _ => false,
    }
}

/// True for an assistant message without its completion time.
pub(crate) fn message_is_open(message: &Message) -> bool {
    matches!(message, Message::Assistant(m) if m.time.completed.is_none())
}

pub(crate) fn encode_part(part: &Part) -> StoreResult<PartRow> {
    let data = serde_json::to_string(part).map_err(|source| StoreError::Encode {
        kind: EntityKind::Part,
        id: part.id.to_string(),
        source,
    })?;
    let cost = match &part.kind {
        PartKind::StepFinish(step) => Some(step.cost.to_string()),
        _ => None,
    };
    Ok(PartRow {
        id: part.id.to_string(),
        session_id: part.session_id.to_string(),
        message_id: part.message_id.to_string(),
        kind: part.kind.type_name().to_owned(),
        open: part_is_open(part),
        cost,
        data,
        usage: Usage::of_part(part),
    })
}

pub(crate) fn encode_raw_part(raw: &RawPart) -> StoreResult<PartRow> {
    let data = serde_json::to_string(&raw.json).map_err(|source| StoreError::Encode {
        kind: EntityKind::Part,
        id: raw.id.to_string(),
        source,
    })?;
    Ok(PartRow {
        id: raw.id.to_string(),
        session_id: raw.session_id.to_string(),
        message_id: raw.message_id.to_string(),
        kind: raw.part_type.clone(),
        open: false,
        cost: None,
        data,
        usage: None,
    })
}

pub(crate) fn encode_message(message: &Message) -> StoreResult<MessageRow> {
    let data = serde_json::to_string(message).map_err(|source| StoreError::Encode {
        kind: EntityKind::Message,
        id: message.id().to_string(),
        source,
    })?;
    let (role, cost) = match message {
        Message::User(_) => ("user", None),
        Message::Assistant(m) => ("assistant", Some(m.cost.to_string())),
    };
    Ok(MessageRow {
        id: message.id().to_string(),
        session_id: message.session_id().to_string(),
        role,
        open: message_is_open(message),
        cost,
        data,
    })
}

/// A part row read back.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "nearly every row is a known part: boxing would allocate per part"
)]
pub(crate) enum DecodedPart {
    Known(Part),
    Unknown(RawPart),
    Bad(SkippedRow),
}

/// The columns of a part row, borrowed from the row as read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredPartRow<'a> {
    pub id: &'a str,
    pub session_id: &'a str,
    pub message_id: &'a str,
    pub kind: &'a str,
    pub cost: Option<&'a str>,
    pub data: &'a str,
}

fn parse_cost(text: &str) -> Result<Decimal, String> {
    Decimal::from_str(text.trim()).map_err(|e| format!("cost {text:?}: {e}"))
}

/// Replaces a parsed id by the column's when they differ (the columns are the truth).
macro_rules! align_id {
    ($field:expr, $column:expr, $ty:ty) => {
        if $field.as_str() != $column {
            $field = <$ty>::new_unchecked($column);
        }
    };
}

pub(crate) fn decode_part(row: &StoredPartRow<'_>) -> DecodedPart {
    let skipped = |reason: String| {
        DecodedPart::Bad(SkippedRow {
            kind: EntityKind::Part,
            id: row.id.to_owned(),
            session_id: row.session_id.to_owned(),
            message_id: Some(row.message_id.to_owned()),
            reason,
        })
    };
    if !KNOWN_PART_TYPES.contains(&row.kind) {
        return match serde_json::from_str::<Value>(row.data) {
            Ok(json) => DecodedPart::Unknown(RawPart {
                id: PartId::new_unchecked(row.id),
                session_id: SessionId::new_unchecked(row.session_id),
                message_id: MessageId::new_unchecked(row.message_id),
                part_type: row.kind.to_owned(),
                json,
            }),
            Err(e) => skipped(e.to_string()),
        };
    }
    let mut part = match serde_json::from_str::<Part>(row.data) {
        Ok(part) => part,
        Err(e) => return skipped(e.to_string()),
    };
    align_id!(part.id, row.id, PartId);
    align_id!(part.session_id, row.session_id, SessionId);
    align_id!(part.message_id, row.message_id, MessageId);
    // Money is exact in its column; the JSON number is the nearest float.
    if let (PartKind::StepFinish(step), Some(cost)) = (&mut part.kind, row.cost) {
        match parse_cost(cost) {
            Ok(cost) => step.cost = cost,
            Err(reason) => return skipped(reason),
        }
    }
    DecodedPart::Known(part)
}

/// The columns of a message row, borrowed from the row as read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredMessageRow<'a> {
    pub id: &'a str,
    pub session_id: &'a str,
    pub cost: Option<&'a str>,
    pub data: &'a str,
}

pub(crate) fn decode_message(row: &StoredMessageRow<'_>) -> Result<Message, SkippedRow> {
    let skipped = |reason: String| SkippedRow {
        kind: EntityKind::Message,
        id: row.id.to_owned(),
        session_id: row.session_id.to_owned(),
        message_id: None,
        reason,
    };
    let mut message = serde_json::from_str::<Message>(row.data).map_err(|e| skipped(e.to_string()))?;
    match &mut message {
        Message::User(m) => {
            align_id!(m.id, row.id, MessageId);
            align_id!(m.session_id, row.session_id, SessionId);
        }
        Message::Assistant(m) => {
            align_id!(m.id, row.id, MessageId);
            align_id!(m.session_id, row.session_id, SessionId);
            if let Some(cost) = row.cost {
                m.cost = parse_cost(cost).map_err(skipped)?;
            }
        }
    }
    Ok(message)
}

/// Crash recovery of one part (SPEC 8 cleanup): a pending or running tool becomes an error
/// "Tool execution aborted" marked interrupted; open text and reasoning get an end time.
/// Returns whether anything changed.
pub(crate) fn close_part(part: &mut Part, now: u64) -> bool {
    match &mut part.kind {
        PartKind::Tool(tool) => tool.state.is_open() && tool.state.abort(now).is_ok(),
        PartKind::Text(text) => match &mut text.time {
            Some(time) if time.end.is_none() => {
                time.end = Some(now.max(time.start));
                true
            }
            _ => false,
        },
        PartKind::Reasoning(reasoning) if reasoning.time.end.is_none() => {
            reasoning.time.end = Some(now.max(reasoning.time.start));
            true
        }
        _ => false,
    }
}

/// Crash recovery of one message (`finalizeInterruptedAssistant`): an unfinished assistant
/// message gets its completion time and, without an error, the aborted error.
pub(crate) fn close_message(message: &mut Message, now: u64) -> bool {
    match message {
        Message::Assistant(m) if m.time.completed.is_none() => {
            m.time.completed = Some(now.max(m.time.created));
            if m.error.is_none() {
                m.error = Some(MessageError::aborted());
            }
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use session_core::{PartTime, TextPart, ToolPart, ToolState};

    fn part(kind: PartKind) -> Part {
        Part {
            id: PartId::new_unchecked("prt_1"),
            session_id: SessionId::new_unchecked("ses_1"),
            message_id: MessageId::new_unchecked("msg_1"),
            kind,
        }
    }

    #[test]
    fn open_parts_are_closed_as_spec_8_says() {
        let mut tool = part(PartKind::Tool(ToolPart {
            call_id: "c1".into(),
            tool: "bash".into(),
            state: ToolState::pending(),
            metadata: None,
        }));
        assert!(part_is_open(&tool));
        assert!(close_part(&mut tool, 50));
        assert!(!part_is_open(&tool));
        let PartKind::Tool(t) = &tool.kind else { panic!("not a tool") };
        assert!(t.state.is_interrupted());

        let mut text = part(PartKind::Text(TextPart {
            text: "hi".into(),
            time: Some(PartTime { start: 10, end: None }),
            ..TextPart::default()
        }));
        assert!(close_part(&mut text, 40));
        assert!(!close_part(&mut text, 60), "a closed part stays as it is");
        let PartKind::Text(t) = &text.kind else { panic!("not text") };
        assert_eq!(t.time, Some(PartTime { start: 10, end: Some(40) }));
    }

    #[test]
    fn unknown_kinds_are_kept_raw_and_bad_rows_reported() {
        let data = json!({"id": "prt_9", "type": "hologram", "depth": 3}).to_string();
        let raw = decode_part(&StoredPartRow {
            id: "prt_9",
            session_id: "ses_1",
            message_id: "msg_1",
            kind: "hologram",
            cost: None,
            data: &data,
        });
        assert!(
            matches!(raw, DecodedPart::Unknown(RawPart { ref part_type, .. }) if part_type == "hologram")
        );
        let bad = decode_part(&StoredPartRow {
            id: "prt_8",
            session_id: "ses_1",
            message_id: "msg_1",
            kind: "text",
            cost: None,
            data: "{\"type\": \"text\"",
        });
        assert!(matches!(bad, DecodedPart::Bad(SkippedRow { ref id, .. }) if id == "prt_8"));
    }
}
