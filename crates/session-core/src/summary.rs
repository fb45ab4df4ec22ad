//! Summary diffs (SPEC 13): which snapshots a turn, or a whole session, spans. The diff itself
//! is the snapshotter's; this module says between which two trees it is taken.

use crate::id::MessageId;
use crate::message::{FileDiff, Message, MessageWithParts, PartKind};

/// The most per-file entries a stored summary keeps; the totals still count every file. A
/// formatter run over a large repository must not turn one message row into megabytes.
pub const MAX_SUMMARY_FILES: usize = 1000;

/// The trees `messages` span, in history order: the snapshot of the first step-start that has
/// one, and the snapshot of the last step-finish that has one (OpenCode's `computeDiff`).
/// `None` when either is missing (snapshots off, or no step finished yet).
pub fn snapshot_span<'a, I>(messages: I) -> Option<(&'a str, &'a str)>
where
    I: IntoIterator<Item = &'a MessageWithParts>,
{
    let mut from = None;
    let mut to = None;
    for message in messages {
        for part in &message.parts {
            match &part.kind {
                PartKind::StepStart(start) if from.is_none() => from = start.snapshot.as_deref(),
                PartKind::StepFinish(finish) if finish.snapshot.is_some() => {
                    to = finish.snapshot.as_deref();
                }
                _ => {}
            }
        }
    }
    Some((from?, to?))
}

/// The turn of the user message `user`: that message and the assistant messages answering it,
/// in history order.
pub fn turn<'a>(history: &'a [MessageWithParts], user: &MessageId) -> Vec<&'a MessageWithParts> {
    history
        .iter()
        .filter(|message| match &message.info {
            Message::User(info) => &info.id == user,
            Message::Assistant(info) => &info.parent_id == user,
        })
        .collect()
}

/// `diffs` as a summary stores them: at most [`MAX_SUMMARY_FILES`] entries, in path order.
pub fn stored_diffs(mut diffs: Vec<FileDiff>) -> Vec<FileDiff> {
    diffs.truncate(MAX_SUMMARY_FILES);
    diffs
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::*;
    use crate::event::FinishReason;
    use crate::id::{PartId, SessionId};
    use crate::message::{
        AssistantMessage, AssistantTime, CreatedTime, MessagePath, ModelRef, Part, StepFinishPart,
        StepStartPart, UserMessage,
    };
    use crate::usage::TokenUsage;

    fn part(message: &str, n: usize, kind: PartKind) -> Part {
        Part {
            id: PartId::new_unchecked(format!("prt_{message}_{n}")),
            session_id: SessionId::new_unchecked("ses_1"),
            message_id: MessageId::new_unchecked(message),
            kind,
        }
    }

    fn user(id: &str) -> MessageWithParts {
        MessageWithParts {
            info: Message::User(UserMessage {
                id: MessageId::new_unchecked(id),
                session_id: SessionId::new_unchecked("ses_1"),
                time: CreatedTime { created: 1 },
                format: None,
                summary: None,
                agent: "build".into(),
                model: ModelRef::default(),
                system: None,
                tools: None,
            }),
            parts: Vec::new(),
        }
    }

    fn step(id: &str, parent: &str, start: Option<&str>, finish: Option<&str>) -> MessageWithParts {
        MessageWithParts {
            info: Message::Assistant(AssistantMessage {
                id: MessageId::new_unchecked(id),
                session_id: SessionId::new_unchecked("ses_1"),
                time: AssistantTime::default(),
                error: None,
                parent_id: MessageId::new_unchecked(parent),
                model_id: "m".into(),
                provider_id: "p".into(),
                mode: "build".into(),
                agent: "build".into(),
                path: MessagePath::default(),
                summary: None,
                cost: Decimal::ZERO,
                tokens: TokenUsage::default(),
                structured: None,
                variant: None,
                finish: None,
            }),
            parts: vec![
                part(id, 0, PartKind::StepStart(StepStartPart { snapshot: start.map(str::to_owned) })),
                part(
                    id,
                    1,
                    PartKind::StepFinish(StepFinishPart {
                        reason: FinishReason::Stop,
                        snapshot: finish.map(str::to_owned),
                        cost: Decimal::ZERO,
                        tokens: TokenUsage::default(),
                    }),
                ),
            ],
        }
    }

    #[test]
    fn spec_13_a_turn_spans_its_first_start_and_last_finish_snapshot() {
        let history = vec![
            user("msg_1"),
            step("msg_2", "msg_1", Some("a"), Some("b")),
            step("msg_3", "msg_1", Some("b"), None),
            step("msg_4", "msg_1", Some("c"), Some("d")),
            user("msg_5"),
            step("msg_6", "msg_5", None, Some("e")),
            step("msg_7", "msg_5", Some("e"), Some("f")),
        ];
        let first = turn(&history, &MessageId::new_unchecked("msg_1"));
        assert_eq!(first.len(), 4);
        assert_eq!(snapshot_span(first), Some(("a", "d")));
        // A step-start without a snapshot is skipped, not taken as the start.
        assert_eq!(snapshot_span(turn(&history, &MessageId::new_unchecked("msg_5"))), Some(("e", "f")));
        assert_eq!(snapshot_span(&history), Some(("a", "f")));
        assert_eq!(snapshot_span(&history[..1]), None);
        assert_eq!(snapshot_span(&[step("msg_8", "msg_1", Some("a"), None)]), None);
    }

    #[test]
    fn spec_13_stored_summaries_are_bounded() {
        let diffs = vec![FileDiff { additions: 1, ..FileDiff::default() }; MAX_SUMMARY_FILES + 5];
        assert_eq!(stored_diffs(diffs).len(), MAX_SUMMARY_FILES);
    }
}
