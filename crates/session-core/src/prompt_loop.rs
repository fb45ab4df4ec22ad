//! The prompt loop's decisions (SPEC 12), by value: what the next task is, whether the last
//! answer ends the run, the overflow pre-check, when the loop stops after a step, which user
//! texts get the reminder wrap and whether tool work is pending.
//!
//! The runtime loads the history, asks [`next_task`] what to do, carries it out and reports the
//! step back through [`after_step`]; every branch of SPEC 12 is decided here, and the runtime
//! only does the IO around it.

use std::borrow::Cow;

use crate::{
    AssistantMessage, CompactionPart, FinishReason, Message, MessageError, MessageId, MessageWithParts,
    PartId, PartKind, TextPart, UserMessage, config::CompactionConfig, history::AssistantContent,
    history::ModelMessage, overflow::ModelLimit, overflow::is_overflow, processor::Outcome,
};

/// What the loop knows after reading the history (SPEC 12 step 1).
#[derive(Debug, Clone, Copy)]
pub struct LoopView<'a> {
    /// The newest user message: it decides the agent, the model and the format (step 3).
    pub last_user: &'a UserMessage,
    /// The newest assistant message that finished, if any.
    pub last_finished: Option<&'a AssistantMessage>,
}

/// The next thing the loop does.
#[derive(Debug, Clone, PartialEq)]
pub enum NextTask<'a> {
    /// The newest assistant message answered the newest user message: the run ends with it
    /// (step 2).
    Done(&'a AssistantMessage),
    /// A compaction request newer than the last finished answer is carried out first (step 5).
    Compact(CompactionTask<'a>),
    /// Another model step for the newest user message.
    Step,
}

/// A compaction request found in the history.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionTask<'a> {
    /// The user message holding the request.
    pub parent_id: &'a MessageId,
    /// The compaction part.
    pub part_id: &'a PartId,
    /// What the request asks for.
    pub compaction: &'a CompactionPart,
}

/// The history holds no user message, so there is nothing to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the session has no user message to answer")]
pub struct NoUserMessage;

/// Reads the (compaction-filtered) history and decides the next task (SPEC 12 steps 1, 2, 5).
///
/// The newest messages are the ones with the highest id (OpenCode's `MessageV2.latest`), not the
/// last by position: after a compaction that kept a tail, the history reads [request, summary,
/// kept tail, newer], so the tail's messages come after the summary but are older than it.
pub fn next_task(messages: &[MessageWithParts]) -> Result<(LoopView<'_>, NextTask<'_>), NoUserMessage> {
    let last_user = messages
        .iter()
        .filter_map(|m| match &m.info {
            Message::User(user) => Some(user),
            Message::Assistant(_) => None,
        })
        .max_by(|a, b| a.id.cmp(&b.id))
        .ok_or(NoUserMessage)?;
    // Assistant messages with their parts (the exit check reads the parts), newest by id.
    let assistants = messages.iter().filter_map(|m| match &m.info {
        Message::Assistant(info) => Some((info, m)),
        Message::User(_) => None,
    });
    let last_finished =
        assistants.clone().filter(|(a, _)| a.finish.is_some()).map(|(a, _)| a).max_by(|a, b| a.id.cmp(&b.id));
    let view = LoopView { last_user, last_finished };
    // An unknown finish goes on too, as OpenCode 1.18.34's loop does.
    if let Some((info, assistant)) = assistants.max_by(|(a, _), (b, _)| a.id.cmp(&b.id))
        && info.finish.is_some_and(|f| f != FinishReason::ToolCalls && f != FinishReason::Unknown)
        && !has_pending_tool_work(assistant)
        && last_user.id < info.id
    {
        return Ok((view, NextTask::Done(info)));
    }
    // The newest task wins (`tasks.pop()`), newest by id like everything above.
    let task = messages
        .iter()
        .filter(|m| last_finished.is_none_or(|f| m.info.id() > &f.id))
        .filter_map(|m| {
            m.parts.iter().find_map(|p| match &p.kind {
                PartKind::Compaction(compaction) => {
                    Some(CompactionTask { parent_id: m.info.id(), part_id: &p.id, compaction })
                }
                _ => None,
            })
        })
        .max_by(|a, b| a.parent_id.cmp(b.parent_id));
    Ok((view, task.map_or(NextTask::Step, NextTask::Compact)))
}

/// True when an assistant message still has tool work: a tool part that is not provider
/// executed and not an interrupted orphan (SPEC 12 step 2).
pub fn has_pending_tool_work(message: &MessageWithParts) -> bool {
    message.parts.iter().any(|part| match &part.kind {
        PartKind::Tool(tool) => !tool.provider_executed() && !tool.state.is_interrupted(),
        _ => false,
    })
}

/// SPEC 12 step 6: before a step, a finished answer (not a summary) whose tokens overflow the
/// model's context asks for a compaction first.
pub fn needs_overflow_compaction(
    last_finished: Option<&AssistantMessage>,
    config: &CompactionConfig,
    limit: &ModelLimit,
    output_token_max: u64,
) -> bool {
    last_finished.is_some_and(|finished| {
        !finished.is_summary() && is_overflow(config, &finished.tokens, limit, output_token_max)
    })
}

/// True when `step` (counted from 1) is the agent's last allowed step (`steps`), which gets the
/// max-steps text as a final assistant message (SPEC 12 step 7).
pub fn is_last_step(max_steps: Option<u32>, step: u32) -> bool {
    max_steps.is_some_and(|max| step >= max)
}

/// The guard against compacting without progress: two compactions with no finished step
/// between them mean compaction cannot free the context (SPEC 10.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionGuard {
    without_step: u32,
}

impl CompactionGuard {
    /// Counts a compaction; false when it is the second without a finished step between.
    pub fn allow_compaction(&mut self) -> bool {
        self.without_step += 1;
        self.without_step <= 1
    }

    /// Counts a step that continued the loop; a finished one clears the count.
    pub fn step_continued(&mut self, finished: bool) {
        if finished {
            self.without_step = 0;
        }
    }
}

/// What the loop does after a model step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStep {
    /// The run ends with this step's message.
    Stop,
    /// A compaction request is written (`overflow` when the step did not finish), then the loop
    /// goes on.
    Compact {
        /// The step overflowed before it finished, so the compaction is an overflow one.
        overflow: bool,
    },
    /// The loop goes on with the next step.
    Continue,
}

/// SPEC 12 steps 9 and 12: the processor's outcome and the step's message decide what follows.
pub fn after_step(outcome: Outcome, message: &AssistantMessage) -> AfterStep {
    match outcome {
        Outcome::Stop => AfterStep::Stop,
        Outcome::Compact => AfterStep::Compact { overflow: message.finish.is_none() },
        Outcome::Continue => AfterStep::Continue,
    }
}

/// The message of the error a step that ended on the provider's content filter gets.
pub const CONTENT_FILTER_MESSAGE: &str = "The response was blocked by the provider's content filter";

/// SPEC 12 step 10: the error a finished step gives its message. A `content-filter` finish
/// on a message without an error is a ContentFilterError, and the run ends with it, as
/// OpenCode 1.18.34's loop does. A structured answer the step captured comes first.
pub fn finish_error(message: &AssistantMessage) -> Option<MessageError> {
    (message.error.is_none() && message.finish == Some(FinishReason::ContentFilter))
        .then(|| MessageError::ContentFilterError { message: CONTENT_FILTER_MESSAGE.to_owned() })
}

/// How a step of a structured-output run settles (SPEC 12 step 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructuredSettlement {
    /// The model called the output tool with a valid answer: the run ends with it.
    Captured,
    /// The model finished a reply without the tool: the run fails.
    Missing,
    /// Neither yet (tool calls, an error, an unknown finish): the loop decides as usual.
    Pending,
}

/// Decides SPEC 12 step 10 for a step whose user asked for a schema.
pub fn structured_settlement(captured: bool, message: &AssistantMessage) -> StructuredSettlement {
    if captured {
        return StructuredSettlement::Captured;
    }
    let finished_without = message.error.is_none()
        && message.finish.is_some_and(|f| f != FinishReason::ToolCalls && f != FinishReason::Unknown);
    if finished_without { StructuredSettlement::Missing } else { StructuredSettlement::Pending }
}

/// True for a user text part the reminder wrap applies to: not synthetic, not ignored, not blank.
fn is_remindable(part: &TextPart) -> bool {
    part.synthetic != Some(true) && part.ignored != Some(true) && !part.text.trim().is_empty()
}

/// True for a user message sent after the last finished answer (newer by id, SPEC 12 step 8).
fn is_newer_user(message: &MessageWithParts, finished: &AssistantMessage) -> bool {
    matches!(message.info, Message::User(_)) && message.info.id() > &finished.id
}

/// The user texts sent after the last finished answer: from the second step on they are
/// wrapped in a reminder (SPEC 12 step 8). Synthetic, ignored and blank texts are not.
pub fn reminder_texts<'a>(
    messages: &'a [MessageWithParts],
    last_finished: Option<&AssistantMessage>,
) -> Vec<&'a str> {
    let Some(finished) = last_finished else { return Vec::new() };
    messages
        .iter()
        .filter(|m| is_newer_user(m, finished))
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) if is_remindable(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// The reminder a user text sent while the loop ran is wrapped in.
pub fn reminder(text: &str) -> String {
    format!(
        "<system-reminder>\nThe user sent the following message:\n{text}\n\nPlease address this message and continue with your tasks.\n</system-reminder>"
    )
}

/// The history with the [`reminder_texts`] wrapped (SPEC 12 step 8), matched by message id:
/// an older message with the same text stays as it was. Borrowed unchanged when nothing is
/// wrapped, which is every step without a joined prompt.
pub fn with_reminders<'a>(
    messages: &'a [MessageWithParts],
    last_finished: Option<&AssistantMessage>,
) -> Cow<'a, [MessageWithParts]> {
    let Some(finished) = last_finished else { return Cow::Borrowed(messages) };
    let wraps = |m: &MessageWithParts| {
        is_newer_user(m, finished)
            && m.parts.iter().any(|p| matches!(&p.kind, PartKind::Text(t) if is_remindable(t)))
    };
    if !messages.iter().any(wraps) {
        return Cow::Borrowed(messages);
    }
    let mut wrapped = messages.to_vec();
    for message in wrapped.iter_mut().filter(|m| is_newer_user(m, finished)) {
        for part in &mut message.parts {
            if let PartKind::Text(text) = &mut part.kind
                && is_remindable(text)
            {
                text.text = reminder(&text.text);
            }
        }
    }
    Cow::Owned(wrapped)
}

/// Appends the max-steps text as a final assistant message (SPEC 12 step 7).
pub fn push_max_steps(model_messages: &mut Vec<ModelMessage>, max_steps_text: &str) {
    model_messages.push(ModelMessage::Assistant {
        content: vec![AssistantContent::Text { text: max_steps_text.to_owned(), provider_options: None }],
    });
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::*;
    use crate::{
        AssistantTime, CompletedTime, CreatedTime, JsonObject, MessagePath, ModelRef, Part, SessionId,
        TextPart, TokenUsage, ToolPart, ToolState,
    };

    fn session() -> SessionId {
        id("ses_test")
    }

    fn id<T: crate::Identifier>(text: &str) -> T {
        T::parse(text).unwrap_or_else(|_| unreachable!("a valid id"))
    }

    fn user(n: u32, texts: &[&str]) -> MessageWithParts {
        let message_id: MessageId = id(&format!("msg_{n:04}"));
        let parts = texts.iter().enumerate().map(|(i, text)| text_part(&message_id, n, i, text)).collect();
        MessageWithParts {
            info: Message::User(UserMessage {
                id: message_id,
                session_id: session(),
                time: CreatedTime { created: u64::from(n) },
                format: None,
                summary: None,
                agent: "build".to_owned(),
                model: ModelRef { provider_id: "p".to_owned(), model_id: "m".to_owned(), variant: None },
                system: None,
                tools: None,
            }),
            parts,
        }
    }

    fn text_part(message_id: &MessageId, n: u32, i: usize, text: &str) -> Part {
        Part {
            id: id(&format!("prt_{n:04}_{i}")),
            session_id: session(),
            message_id: message_id.clone(),
            kind: PartKind::Text(TextPart { text: (*text).to_owned(), ..TextPart::default() }),
        }
    }

    fn assistant_info(n: u32, finish: Option<FinishReason>) -> AssistantMessage {
        AssistantMessage {
            id: id(&format!("msg_{n:04}")),
            session_id: session(),
            time: AssistantTime { created: u64::from(n), completed: None },
            error: None,
            parent_id: id("msg_0000"),
            model_id: "m".to_owned(),
            provider_id: "p".to_owned(),
            mode: "build".to_owned(),
            agent: "build".to_owned(),
            path: MessagePath { cwd: "/w".to_owned(), root: "/w".to_owned() },
            summary: None,
            cost: Decimal::ZERO,
            tokens: TokenUsage::default(),
            structured: None,
            variant: None,
            finish,
        }
    }

    fn assistant(n: u32, finish: Option<FinishReason>) -> MessageWithParts {
        MessageWithParts { info: Message::Assistant(assistant_info(n, finish)), parts: Vec::new() }
    }

    fn with_part(mut message: MessageWithParts, kind: PartKind) -> MessageWithParts {
        let index = message.parts.len();
        let n = message.info.id().as_str().trim_start_matches("msg_").to_owned();
        message.parts.push(Part {
            id: id(&format!("prt_{n}_{index}")),
            session_id: session(),
            message_id: message.info.id().clone(),
            kind,
        });
        message
    }

    fn tool(state: ToolState, provider_executed: bool) -> PartKind {
        let metadata = provider_executed.then(|| {
            let mut map = JsonObject::new();
            map.insert("providerExecuted".to_owned(), serde_json::Value::Bool(true));
            map
        });
        PartKind::Tool(ToolPart { call_id: "c".to_owned(), tool: "read".to_owned(), state, metadata })
    }

    fn completed() -> ToolState {
        ToolState::Completed {
            input: JsonObject::new(),
            output: "ok".to_owned(),
            title: String::new(),
            metadata: JsonObject::new(),
            time: CompletedTime { start: 1, end: 2, compacted: None },
            attachments: None,
        }
    }

    fn interrupted() -> ToolState {
        let mut metadata = JsonObject::new();
        metadata.insert("interrupted".to_owned(), serde_json::Value::Bool(true));
        ToolState::Error {
            input: JsonObject::new(),
            error: "aborted".to_owned(),
            metadata: Some(metadata),
            time: crate::ErrorTime { start: 1, end: 2 },
            raw: None,
            title: None,
        }
    }

    fn compaction() -> PartKind {
        PartKind::Compaction(CompactionPart { auto: true, overflow: None, tail_start_id: None })
    }

    /// What `next_task` decided, by name, for table rows.
    fn decided(messages: &[MessageWithParts]) -> String {
        match next_task(messages) {
            Err(NoUserMessage) => "no user".to_owned(),
            Ok((_, NextTask::Done(message))) => format!("done {}", message.id.as_str()),
            Ok((_, NextTask::Compact(task))) => format!("compact {}", task.parent_id.as_str()),
            Ok((_, NextTask::Step)) => "step".to_owned(),
        }
    }

    #[test]
    fn next_task_table() {
        let rows: Vec<(&str, Vec<MessageWithParts>, &str)> = vec![
            ("empty history", vec![], "no user"),
            ("only an assistant", vec![assistant(1, Some(FinishReason::Stop))], "no user"),
            ("a new prompt", vec![user(1, &["hi"])], "step"),
            (
                "answered with stop",
                vec![user(1, &["hi"]), assistant(2, Some(FinishReason::Stop))],
                "done msg_0002",
            ),
            (
                "answered with length",
                vec![user(1, &["hi"]), assistant(2, Some(FinishReason::Length))],
                "done msg_0002",
            ),
            (
                "tool calls continue",
                vec![user(1, &["hi"]), assistant(2, Some(FinishReason::ToolCalls))],
                "step",
            ),
            ("an unfinished step continues", vec![user(1, &["hi"]), assistant(2, None)], "step"),
            (
                "pending tool work continues",
                vec![
                    user(1, &["hi"]),
                    with_part(assistant(2, Some(FinishReason::Stop)), tool(completed(), false)),
                ],
                "step",
            ),
            (
                "a provider-executed tool is no work",
                vec![
                    user(1, &["hi"]),
                    with_part(assistant(2, Some(FinishReason::Stop)), tool(completed(), true)),
                ],
                "done msg_0002",
            ),
            (
                "an interrupted orphan is no work",
                vec![
                    user(1, &["hi"]),
                    with_part(assistant(2, Some(FinishReason::Stop)), tool(interrupted(), false)),
                ],
                "done msg_0002",
            ),
            (
                "a later prompt is answered",
                vec![user(1, &["hi"]), assistant(2, Some(FinishReason::Stop)), user(3, &["more"])],
                "step",
            ),
            (
                "a compaction request is the next task",
                vec![
                    user(1, &["hi"]),
                    assistant(2, Some(FinishReason::Stop)),
                    with_part(user(3, &[]), compaction()),
                ],
                "compact msg_0003",
            ),
            (
                "a compaction older than the last finished answer is done",
                vec![
                    user(1, &["hi"]),
                    with_part(user(2, &[]), compaction()),
                    assistant(3, Some(FinishReason::ToolCalls)),
                ],
                "step",
            ),
        ];
        for (name, messages, expected) in rows {
            assert_eq!(decided(&messages), expected, "{name}");
        }
    }

    #[test]
    fn the_view_names_the_newest_user_and_finished_messages() {
        let messages = vec![
            user(1, &["a"]),
            assistant(2, Some(FinishReason::ToolCalls)),
            assistant(3, None),
            user(4, &["b"]),
        ];
        let Ok((view, _)) = next_task(&messages) else { unreachable!("there is a user message") };
        assert_eq!(view.last_user.id.as_str(), "msg_0004");
        assert_eq!(view.last_finished.map(|m| m.id.as_str()), Some("msg_0002"));
    }

    #[test]
    fn overflow_pre_check_table() {
        let config = CompactionConfig::default();
        let limit = ModelLimit { context: 100_000, input: None, output: 10_000 };
        let mut big = assistant_info(2, Some(FinishReason::Stop));
        big.tokens.input = 95_000;
        let mut summary = big.clone();
        summary.summary = Some(true);
        let small = assistant_info(2, Some(FinishReason::Stop));
        let rows = [
            ("no finished answer", None, false),
            ("a small answer", Some(&small), false),
            ("an overflowing answer", Some(&big), true),
            ("an overflowing summary", Some(&summary), false),
        ];
        for (name, finished, expected) in rows {
            assert_eq!(needs_overflow_compaction(finished, &config, &limit, 32_000), expected, "{name}");
        }
        let unlimited = ModelLimit { context: 0, input: None, output: 0 };
        assert!(!needs_overflow_compaction(Some(&big), &config, &unlimited, 32_000), "context 0 disables it");
    }

    #[test]
    fn last_step_table() {
        let rows = [
            (None, 1, false),
            (None, 1000, false),
            (Some(3), 2, false),
            (Some(3), 3, true),
            (Some(3), 4, true),
        ];
        for (max, step, expected) in rows {
            assert_eq!(is_last_step(max, step), expected, "max {max:?}, step {step}");
        }
    }

    #[test]
    fn compaction_guard_allows_one_compaction_per_finished_step() {
        let mut guard = CompactionGuard::default();
        assert!(guard.allow_compaction());
        guard.step_continued(false);
        assert!(!guard.allow_compaction(), "no finished step between two compactions");
        let mut guard = CompactionGuard::default();
        assert!(guard.allow_compaction());
        guard.step_continued(true);
        assert!(guard.allow_compaction(), "a finished step clears the count");
    }

    #[test]
    fn after_step_table() {
        let finished = assistant_info(2, Some(FinishReason::Stop));
        let unfinished = assistant_info(2, None);
        let rows = [
            (Outcome::Stop, &finished, AfterStep::Stop),
            (Outcome::Continue, &finished, AfterStep::Continue),
            (Outcome::Compact, &finished, AfterStep::Compact { overflow: false }),
            (Outcome::Compact, &unfinished, AfterStep::Compact { overflow: true }),
        ];
        for (outcome, message, expected) in rows {
            assert_eq!(after_step(outcome, message), expected, "{outcome:?}");
        }
    }

    #[test]
    fn a_content_filter_finish_is_a_content_filter_error() {
        let filtered = assistant_info(2, Some(FinishReason::ContentFilter));
        assert_eq!(
            finish_error(&filtered),
            Some(MessageError::ContentFilterError { message: CONTENT_FILTER_MESSAGE.to_owned() })
        );
        let json = serde_json::to_value(finish_error(&filtered)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"name": "ContentFilterError",
                "data": {"message": "The response was blocked by the provider's content filter"}})
        );
        let mut errored = filtered.clone();
        errored.error = Some(MessageError::UnknownError { message: "x".to_owned() });
        for finish in
            [None, Some(FinishReason::Stop), Some(FinishReason::ToolCalls), Some(FinishReason::Length)]
        {
            assert_eq!(finish_error(&assistant_info(2, finish)), None, "{finish:?}");
        }
        assert_eq!(finish_error(&errored), None, "an error already there stays");
    }

    #[test]
    fn structured_settlement_table() {
        let mut errored = assistant_info(2, Some(FinishReason::Stop));
        errored.error = Some(crate::MessageError::UnknownError { message: "x".to_owned() });
        let rows = [
            (
                "captured",
                true,
                assistant_info(2, Some(FinishReason::ToolCalls)),
                StructuredSettlement::Captured,
            ),
            (
                "stop without",
                false,
                assistant_info(2, Some(FinishReason::Stop)),
                StructuredSettlement::Missing,
            ),
            (
                "length without",
                false,
                assistant_info(2, Some(FinishReason::Length)),
                StructuredSettlement::Missing,
            ),
            (
                "tool calls",
                false,
                assistant_info(2, Some(FinishReason::ToolCalls)),
                StructuredSettlement::Pending,
            ),
            (
                "unknown finish",
                false,
                assistant_info(2, Some(FinishReason::Unknown)),
                StructuredSettlement::Pending,
            ),
            ("not finished", false, assistant_info(2, None), StructuredSettlement::Pending),
            ("errored", false, errored, StructuredSettlement::Pending),
        ];
        for (name, captured, message, expected) in rows {
            assert_eq!(structured_settlement(captured, &message), expected, "{name}");
        }
    }

    #[test]
    fn reminders_wrap_only_texts_sent_after_the_last_finished_answer() {
        let finished = assistant_info(2, Some(FinishReason::ToolCalls));
        let mut late = user(3, &["late", "  "]);
        late.parts.push(Part {
            id: id("prt_0003_9"),
            session_id: session(),
            message_id: late.info.id().clone(),
            kind: PartKind::Text(TextPart {
                text: "synthetic".to_owned(),
                synthetic: Some(true),
                ..TextPart::default()
            }),
        });
        let messages = vec![
            user(1, &["first"]),
            MessageWithParts { info: Message::Assistant(finished.clone()), parts: vec![] },
            late,
        ];
        assert_eq!(reminder_texts(&messages, Some(&finished)), vec!["late"]);
        assert!(reminder_texts(&messages, None).is_empty(), "no finished answer, nothing to remind");

        let wrapped = with_reminders(&messages, Some(&finished));
        let texts: Vec<Vec<String>> = wrapped
            .iter()
            .map(|m| {
                m.parts
                    .iter()
                    .filter_map(|p| match &p.kind {
                        PartKind::Text(t) => Some(t.text.clone()),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            texts,
            vec![
                vec!["first".to_owned()],
                vec![],
                vec![reminder("late"), "  ".to_owned(), "synthetic".to_owned()]
            ]
        );
        assert!(
            matches!(with_reminders(&messages, None), Cow::Borrowed(_)),
            "nothing to wrap, nothing copied"
        );
        assert!(
            reminder("late").starts_with("<system-reminder>\nThe user sent the following message:\nlate\n")
        );
    }

    #[test]
    fn spec_12_8_the_reminder_wraps_the_newer_message_by_id_not_an_older_one_with_its_text() {
        let finished = assistant_info(2, Some(FinishReason::ToolCalls));
        let messages = vec![
            user(1, &["run the tests"]),
            MessageWithParts { info: Message::Assistant(finished.clone()), parts: vec![] },
            user(3, &["run the tests"]),
        ];
        let wrapped = with_reminders(&messages, Some(&finished));
        let first = |m: &MessageWithParts| match m.parts.first().map(|p| &p.kind) {
            Some(PartKind::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        assert_eq!(first(&wrapped[0]), "run the tests", "the older message with the same text is left alone");
        assert_eq!(first(&wrapped[2]), reminder("run the tests"));
    }

    #[test]
    fn max_steps_text_is_a_final_assistant_message() {
        let mut model_messages = Vec::new();
        push_max_steps(&mut model_messages, "stop now");
        assert_eq!(
            model_messages,
            vec![ModelMessage::Assistant {
                content: vec![AssistantContent::Text { text: "stop now".to_owned(), provider_options: None }]
            }]
        );
    }
}
