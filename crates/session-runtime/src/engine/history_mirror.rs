//! A run's history in memory, so that no step reads the whole session again: the loop reads the session once per run, then after
//! each step only the messages from the newest one it holds on, with the count of all, in one
//! snapshot. Only the newest messages change while a run holds the session (its own step, a
//! compaction, a prompt that joined); a count that does not add up (a message written by
//! another process with an older id, a deleted one) reads the whole history again. The store
//! stays the log, and the source after a restart.

use std::borrow::Cow;
use std::sync::Arc;

use session_core::{Message, MessageId, MessageWithParts, SessionId, compaction::filter_compacted};
use session_store::{EntityKind, HistoryTail, SessionHistory, Store, StoreError};

/// The session's messages as the run last read them.
#[derive(Debug, Default)]
pub(super) struct HistoryMirror {
    /// Shared with the summary work of the step that ended last (see [`HistoryMirror::shared`]);
    /// changed in place once that let it go.
    messages: Arc<Vec<MessageWithParts>>,
    /// Ids of message rows that do not decode: they count in the store's total.
    unreadable: Vec<String>,
}

impl HistoryMirror {
    /// Brings the mirror up to the store: the whole history the first time, the tail after.
    pub(super) async fn refresh(
        &mut self,
        store: &dyn Store,
        session_id: &SessionId,
    ) -> Result<(), StoreError> {
        // Nothing held yet (a run's first pass): the whole history.
        match self.messages.last().map(|message| message.info.id().clone()) {
            Some(newest) => {
                let tail = store.load_history_tail(session_id, &newest).await?;
                if !self.merge(&newest, tail) {
                    tracing::debug!(%session_id, "the history changed behind the run: read again whole");
                    self.replace(store.load_history(session_id).await?);
                }
            }
            None => self.replace(store.load_history(session_id).await?),
        }
        Ok(())
    }

    /// The messages, oldest first (by id, as the store orders them).
    pub(super) fn messages(&self) -> &[MessageWithParts] {
        &self.messages
    }

    /// The messages the model sees (SPEC 10.2 `filterCompacted`): borrowed when that is all
    /// of them in their order, as before a session's first compaction, so that a step does not
    /// copy the whole history; copied otherwise.
    pub(super) fn compacted(&self) -> Cow<'_, [MessageWithParts]> {
        let kept = filter_compacted(&self.messages);
        let unchanged = kept.len() == self.messages.len()
            && kept.iter().zip(self.messages.iter()).all(|(kept, held)| std::ptr::eq(*kept, held));
        match unchanged {
            true => Cow::Borrowed(&self.messages),
            false => Cow::Owned(kept.into_iter().cloned().collect()),
        }
    }

    /// The messages, to read while the mirror moves on.
    pub(super) fn shared(&self) -> Arc<Vec<MessageWithParts>> {
        Arc::clone(&self.messages)
    }

    /// Puts `info` in place of the held message with its id (a write the holder made itself,
    /// to a message older than the newest, which the next tail would not bring).
    pub(super) fn update_info(&mut self, info: Message) {
        if let Ok(index) = self.messages.binary_search_by(|held| held.info.id().cmp(info.id())) {
            Arc::make_mut(&mut self.messages)[index].info = info;
        }
    }

    fn replace(&mut self, history: SessionHistory) {
        self.unreadable = unreadable_messages(&history);
        self.messages = Arc::new(history.messages);
    }

    /// Puts `tail` (the messages from `from` on) in place of what the mirror held from `from`
    /// on; false when the result does not account for every message the store has.
    fn merge(&mut self, from: &MessageId, tail: HistoryTail) -> bool {
        let kept = self.messages.partition_point(|message| message.info.id() < from);
        let messages = Arc::make_mut(&mut self.messages);
        messages.truncate(kept);
        self.unreadable.retain(|id| id.as_str() < from.as_str());
        self.unreadable.extend(unreadable_messages(&tail.history));
        messages.extend(tail.history.messages);
        let held = u64::try_from(self.messages.len() + self.unreadable.len()).unwrap_or(u64::MAX);
        held == tail.total_messages
    }
}

fn unreadable_messages(history: &SessionHistory) -> Vec<String> {
    history.skipped.iter().filter(|row| row.kind == EntityKind::Message).map(|row| row.id.clone()).collect()
}

#[cfg(test)]
mod tests {
    use session_core::UserMessage;

    use super::*;

    fn message(id: &str) -> MessageWithParts {
        let user: UserMessage = serde_json::from_value(serde_json::json!({
            "id": id, "sessionID": "ses_1", "role": "user", "time": {"created": 1},
            "agent": "build", "model": {"providerID": "p", "modelID": "m"}
        }))
        .expect("a user message");
        MessageWithParts { info: Message::User(user), parts: Vec::new() }
    }

    fn ids(mirror: &HistoryMirror) -> Vec<String> {
        mirror.messages().iter().map(|m| m.info.id().to_string()).collect()
    }

    fn tail(messages: &[&str], total: u64) -> HistoryTail {
        HistoryTail {
            history: SessionHistory {
                messages: messages.iter().map(|id| message(id)).collect(),
                ..Default::default()
            },
            total_messages: total,
        }
    }

    #[test]
    fn a_tail_replaces_the_newest_message_and_adds_the_new_ones() {
        let mut mirror = HistoryMirror::default();
        mirror.replace(SessionHistory {
            messages: vec![message("msg_a"), message("msg_b")],
            ..Default::default()
        });
        assert!(mirror.merge(&MessageId::new_unchecked("msg_b"), tail(&["msg_b", "msg_c", "msg_d"], 4)));
        assert_eq!(ids(&mirror), ["msg_a", "msg_b", "msg_c", "msg_d"]);
    }

    #[test]
    fn an_update_replaces_the_held_message_with_that_id_and_nothing_else() {
        let mut mirror = HistoryMirror::default();
        mirror.replace(SessionHistory {
            messages: vec![message("msg_a"), message("msg_b")],
            ..Default::default()
        });
        let Message::User(mut user) = message("msg_a").info else { unreachable!("a user message") };
        user.agent = "plan".into();
        mirror.update_info(Message::User(user));
        // An id the mirror does not hold changes nothing.
        mirror.update_info(message("msg_z").info);
        let agents: Vec<_> = mirror
            .messages()
            .iter()
            .map(|m| match &m.info {
                Message::User(user) => user.agent.clone(),
                Message::Assistant(_) => String::new(),
            })
            .collect();
        assert_eq!(agents, ["plan", "build"]);
        assert_eq!(ids(&mirror), ["msg_a", "msg_b"]);
    }

    #[test]
    fn without_a_compaction_the_model_sees_the_held_messages_themselves() {
        let mut mirror = HistoryMirror::default();
        mirror.replace(SessionHistory {
            messages: vec![message("msg_a"), message("msg_b")],
            ..Default::default()
        });
        assert!(matches!(mirror.compacted(), Cow::Borrowed(held) if std::ptr::eq(held, mirror.messages())));
    }

    #[test]
    fn after_a_compaction_the_model_sees_what_filter_compacted_keeps() {
        let request = MessageWithParts {
            parts: vec![
                serde_json::from_value(serde_json::json!({
                    "id": "prt_c", "sessionID": "ses_1", "messageID": "msg_c",
                    "type": "compaction", "auto": true
                }))
                .expect("a compaction part"),
            ],
            ..message("msg_c")
        };
        let summary: Message = serde_json::from_value(serde_json::json!({
            "id": "msg_d", "sessionID": "ses_1", "role": "assistant", "parentID": "msg_c",
            "time": {"created": 2, "completed": 3}, "modelID": "m", "providerID": "p",
            "mode": "compaction", "agent": "compaction", "path": {"cwd": "/", "root": "/"},
            "cost": 0, "summary": true, "finish": "stop",
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
        }))
        .expect("a summary message");
        let mut mirror = HistoryMirror::default();
        mirror.replace(SessionHistory {
            messages: vec![
                message("msg_a"),
                message("msg_b"),
                request,
                MessageWithParts { info: summary, parts: Vec::new() },
                message("msg_e"),
            ],
            ..Default::default()
        });
        let seen = mirror.compacted();
        assert!(matches!(seen, Cow::Owned(_)));
        let expected: Vec<&MessageId> =
            filter_compacted(mirror.messages()).iter().map(|m| m.info.id()).collect();
        assert_eq!(seen.iter().map(|m| m.info.id()).collect::<Vec<_>>(), expected);
        assert_eq!(expected.len(), 3, "the messages before the compaction are left out");
    }

    #[test]
    fn a_message_older_than_the_tail_that_the_mirror_lacks_is_caught_by_the_count() {
        let mut mirror = HistoryMirror::default();
        mirror.replace(SessionHistory {
            messages: vec![message("msg_a"), message("msg_c")],
            ..Default::default()
        });
        // Another process wrote msg_b (older than msg_c) meanwhile: the store has four.
        assert!(!mirror.merge(&MessageId::new_unchecked("msg_c"), tail(&["msg_c", "msg_d"], 4)));
    }
}
