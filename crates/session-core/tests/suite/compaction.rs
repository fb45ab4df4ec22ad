//! Compaction rules (SPEC 10): prune, turns and tails, prompts and the post-compaction view.

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use rust_decimal::Decimal;
use session_core::{
    AssistantMessage, AssistantTime, CompactionPart, CompletedTime, CreatedTime, FilePart, FinishReason,
    JsonObject, Message, MessageError, MessageId, MessagePath, MessageWithParts, ModelRef, Part, PartId,
    PartKind, SessionId, TextPart, TokenUsage, ToolPart, ToolState, UserMessage, compaction::CompactionError,
    compaction::NEW_SUMMARY_ANCHOR, compaction::PRUNE_PROTECT, compaction::SUMMARY_TEMPLATE,
    compaction::apply_prune, compaction::compaction_history, compaction::continue_part,
    compaction::continue_text, compaction::filter_compacted, compaction::plan_prune,
    compaction::preserve_budget, compaction::replay_parts, compaction::select_tail, compaction::split_turn,
    compaction::summary_prompt, compaction::too_large_error, compaction::turns, config::CompactionConfig,
};

fn user(id: &str, kinds: Vec<PartKind>) -> MessageWithParts {
    let parts = kinds
        .into_iter()
        .enumerate()
        .map(|(index, kind)| Part {
            id: PartId::new_unchecked(format!("prt_{id}_{index}")),
            session_id: SessionId::new_unchecked("ses_1"),
            message_id: MessageId::new_unchecked(id),
            kind,
        })
        .collect();
    MessageWithParts {
        info: Message::User(UserMessage {
            id: MessageId::new_unchecked(id),
            session_id: SessionId::new_unchecked("ses_1"),
            time: CreatedTime { created: 0 },
            format: None,
            summary: None,
            agent: "build".into(),
            model: ModelRef { provider_id: "p".into(), model_id: "m".into(), variant: None },
            system: Some("sys".into()),
            tools: None,
        }),
        parts,
    }
}

fn assistant(id: &str, parent: &str, kinds: Vec<PartKind>) -> MessageWithParts {
    let mut message = user(id, kinds);
    message.info = Message::Assistant(AssistantMessage {
        id: MessageId::new_unchecked(id),
        session_id: SessionId::new_unchecked("ses_1"),
        time: AssistantTime { created: 0, completed: Some(1) },
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
        finish: Some(FinishReason::Stop),
    });
    message
}

fn summary(id: &str, parent: &str, text_: &str) -> MessageWithParts {
    let mut message = assistant(id, parent, vec![text(text_)]);
    if let Message::Assistant(info) = &mut message.info {
        info.summary = Some(true);
    }
    message
}

fn text(text: &str) -> PartKind {
    PartKind::Text(TextPart { text: text.into(), ..TextPart::default() })
}

fn compaction(tail: Option<&str>) -> PartKind {
    PartKind::Compaction(CompactionPart {
        auto: true,
        overflow: None,
        tail_start_id: tail.map(MessageId::new_unchecked),
    })
}

fn tool(name: &str, units: usize) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: "c".into(),
        tool: name.into(),
        state: ToolState::Completed {
            input: JsonObject::new(),
            output: "x".repeat(units),
            title: String::new(),
            metadata: JsonObject::new(),
            time: CompletedTime { start: 0, end: 1, compacted: None },
            attachments: None,
        },
        metadata: None,
    })
}

fn ids(messages: &[&MessageWithParts]) -> Vec<String> {
    messages.iter().map(|m| m.info.id().to_string()).collect()
}

fn prune_on() -> CompactionConfig {
    CompactionConfig { prune: Some(true), ..CompactionConfig::default() }
}

#[test]
fn prune_marks_old_outputs_and_keeps_them_stored() {
    let mut messages = vec![
        user("msg_1", vec![text("a")]),
        assistant("msg_2", "msg_1", vec![tool("read", 120_000), tool("read", 120_000)]),
        user("msg_3", vec![text("b")]),
        user("msg_4", vec![text("c")]),
    ];
    let plan = apply_prune(&prune_on(), &mut messages, 77);
    assert_eq!(plan.total, 60_000);
    assert_eq!(plan.pruned, 30_000);
    assert_eq!(plan.pruned_part_ids, vec![PartId::new_unchecked("prt_msg_2_0")]);
    let PartKind::Tool(first) = &messages[1].parts[0].kind else { panic!() };
    let ToolState::Completed { output, time, .. } = &first.state else { panic!() };
    assert_eq!(time.compacted, Some(77));
    assert_eq!(output.len(), 120_000);
    // A second run stops at the marked part: nothing new.
    let again = apply_prune(&prune_on(), &mut messages, 88);
    assert!(again.pruned_part_ids.is_empty());
    // Disabled by default.
    assert!(!plan_prune(&CompactionConfig::default(), &messages).enabled);
}

#[test]
fn budget_defaults_to_a_clamped_quarter_of_usable() {
    let cfg = CompactionConfig::default();
    for (usable, budget) in [(0, 2000), (6144, 2000), (8007, 2001), (31_999, 7999), (1_000_000, 8000)] {
        assert_eq!(preserve_budget(&cfg, usable), budget);
    }
    let set = CompactionConfig { preserve_recent_tokens: Some(0), ..cfg };
    assert_eq!(preserve_budget(&set, 100_000), 0);
}

#[test]
fn summary_prompt_anchors_and_template() {
    let fresh = summary_prompt(None, &[]);
    assert_eq!(fresh, format!("{NEW_SUMMARY_ANCHOR}\n\n{SUMMARY_TEMPLATE}"));
    let updated = summary_prompt(Some("old"), &["extra".to_owned()]);
    assert!(updated.starts_with(
        "Update the anchored summary below using the conversation history above.\n\
         Preserve still-true details, remove stale details, and merge in the new facts.\n\
         <previous-summary>\nold\n</previous-summary>\n\n"
    ));
    assert!(updated.ends_with("\n\nextra"));
    for heading in [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
        "## Relevant Files",
    ] {
        assert!(SUMMARY_TEMPLATE.lines().any(|line| line == heading), "{heading}");
    }
    assert!(SUMMARY_TEMPLATE.contains("(none)"));
}

#[test]
fn continue_and_error_texts() {
    assert_eq!(
        continue_text(false),
        "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
    );
    assert!(continue_text(true).starts_with("The previous request exceeded the provider's size limit"));
    assert!(continue_text(true).contains("smaller or fewer files.\n\nContinue if"));
    let part = continue_part(false);
    assert_eq!(part.synthetic, Some(true));
    assert_eq!(part.metadata.unwrap()["compaction_continue"], true);
    assert_eq!(
        too_large_error(true).message(),
        "Conversation history too large to compact - exceeds model context limit"
    );
    assert!(matches!(too_large_error(false), MessageError::ContextOverflowError { .. }));
}

#[test]
fn replay_parts_drop_compaction_and_mark_media() {
    let image = FilePart { mime: "image/png".into(), filename: None, url: "data:,".into(), source: None };
    let json = FilePart { mime: "application/json".into(), filename: None, url: "x".into(), source: None };
    let message = user(
        "msg_1",
        vec![text("hi"), compaction(None), PartKind::File(image), PartKind::File(json.clone())],
    );
    let kinds = replay_parts(&message.parts);
    assert_eq!(kinds, vec![text("hi"), text("[Attached image/png: file]"), PartKind::File(json)]);
}

#[test]
fn compaction_history_hides_finished_pairs_and_holds_back_the_replay_turn() {
    let messages = vec![
        user("msg_01", vec![text("first")]),
        assistant("msg_02", "msg_01", vec![text("a")]),
        user("msg_03", vec![compaction(None)]),
        summary("msg_04", "msg_03", "old summary"),
        user("msg_05", vec![text("second")]),
        assistant("msg_06", "msg_05", vec![text("b")]),
        user("msg_07", vec![text("third")]),
        user("msg_08", vec![compaction(None)]),
    ];
    let parent = MessageId::new_unchecked("msg_08");
    let plain = compaction_history(&messages, &parent, false).unwrap();
    assert_eq!(plain.previous_summary.as_deref(), Some("old summary"));
    assert!(plain.replay.is_none());
    let kept: Vec<&MessageWithParts> = plain.messages.iter().collect();
    assert_eq!(ids(&kept), ["msg_01", "msg_02", "msg_05", "msg_06", "msg_07"]);

    let overflow = compaction_history(&messages, &parent, true).unwrap();
    assert_eq!(overflow.replay.as_ref().map(|m| m.info.id().to_string()).as_deref(), Some("msg_07"));
    let kept: Vec<&MessageWithParts> = overflow.messages.iter().collect();
    assert_eq!(ids(&kept), ["msg_01", "msg_02", "msg_05", "msg_06"]);

    // With only one real user message, replay is cancelled.
    let single = vec![user("msg_1", vec![text("only")]), user("msg_2", vec![compaction(None)])];
    let history = compaction_history(&single, &MessageId::new_unchecked("msg_2"), true).unwrap();
    assert!(history.replay.is_none());
    assert_eq!(history.messages.len(), 1);

    let wrong = compaction_history(&single, &MessageId::new_unchecked("msg_9"), false);
    assert_eq!(wrong.unwrap_err(), CompactionError::ParentNotUser(MessageId::new_unchecked("msg_9")));
    assert_eq!(
        CompactionError::ParentNotUser(MessageId::new_unchecked("msg_9")).to_string(),
        "Compaction parent must be a user message: msg_9"
    );
}

#[test]
fn filter_compacted_puts_summary_first_then_tail_then_newer() {
    let messages = vec![
        user("msg_01", vec![text("old")]),
        assistant("msg_02", "msg_01", vec![text("a")]),
        user("msg_03", vec![text("kept")]),
        assistant("msg_04", "msg_03", vec![text("b")]),
        user("msg_05", vec![compaction(Some("msg_03"))]),
        summary("msg_06", "msg_05", "sum"),
        user("msg_07", vec![text("new")]),
    ];
    assert_eq!(ids(&filter_compacted(&messages)), ["msg_05", "msg_06", "msg_03", "msg_04", "msg_07"]);

    let mut no_tail = messages.clone();
    no_tail[4] = user("msg_05", vec![compaction(None)]);
    assert_eq!(ids(&filter_compacted(&no_tail)), ["msg_05", "msg_06", "msg_07"]);

    // An unfinished summary does not count: everything is sent.
    let mut unfinished = messages.clone();
    if let Message::Assistant(info) = &mut unfinished[5].info {
        info.finish = None;
    }
    assert_eq!(filter_compacted(&unfinished).len(), 7);
}

fn sized_history(sizes: &[(bool, u64)]) -> (Vec<MessageWithParts>, Vec<u64>) {
    let messages = sizes
        .iter()
        .enumerate()
        .map(|(index, (is_user, _))| {
            let id = format!("msg_{index:03}");
            if *is_user { user(&id, vec![text("u")]) } else { assistant(&id, "msg_000", vec![text("a")]) }
        })
        .collect();
    (messages, sizes.iter().map(|(_, size)| *size).collect())
}

fn history_strategy() -> impl Strategy<Value = Vec<(bool, u64)>> {
    prop::collection::vec((any::<bool>(), 0u64..3000), 0..16)
}

proptest! {
    #[test]
    fn split_never_keeps_the_turns_own_user_message(sizes in history_strategy(), budget in 0u64..10_000) {
        let (messages, tokens) = sized_history(&sizes);
        let index_of = |m: &MessageWithParts| messages.iter().position(|x| x.info.id() == m.info.id()).unwrap();
        let estimate = |range: &[MessageWithParts]| range.iter().map(|m| tokens[index_of(m)]).sum::<u64>();
        for turn in turns(&messages) {
            if let Some(tail) = split_turn(&messages, &turn, budget, estimate) {
                prop_assert!(tail.start > turn.start && tail.start < turn.end);
                prop_assert!(estimate(&messages[tail.start..turn.end]) <= budget);
                // The longest fitting suffix: one message more would not fit.
                if tail.start > turn.start + 1 {
                    prop_assert!(estimate(&messages[tail.start - 1..turn.end]) > budget);
                }
            }
        }
    }

    #[test]
    fn selected_tail_fits_and_leaves_a_head(sizes in history_strategy(), budget in 0u64..10_000, limit in -1i64..4) {
        let (messages, tokens) = sized_history(&sizes);
        let index_of = |m: &MessageWithParts| messages.iter().position(|x| x.info.id() == m.info.id()).unwrap();
        let estimate = |range: &[MessageWithParts]| range.iter().map(|m| tokens[index_of(m)]).sum::<u64>();
        let selection = select_tail(&messages, limit, budget, estimate);
        match &selection.tail_start_id {
            None => prop_assert_eq!(selection.head_end, messages.len()),
            Some(id) => {
                prop_assert!(selection.head_end > 0 && selection.head_end < messages.len());
                prop_assert_eq!(messages[selection.head_end].info.id(), id);
                prop_assert!(estimate(selection.tail(&messages)) <= budget);
                prop_assert!(limit > 0);
            }
        }
    }

    #[test]
    fn prune_marks_only_completed_unprotected_outputs_outside_two_turns(
        layout in prop::collection::vec((0u8..4, 0usize..200_000), 0..14),
    ) {
        // 0: user, 1: assistant with a read output, 2: assistant with a skill output, 3: summary.
        let mut messages = Vec::new();
        for (index, (kind, units)) in layout.iter().enumerate() {
            let id = format!("msg_{index:03}");
            messages.push(match kind {
                0 => user(&id, vec![text("u")]),
                1 => assistant(&id, "msg_000", vec![tool("read", *units)]),
                2 => assistant(&id, "msg_000", vec![tool("skill", *units)]),
                _ => summary(&id, "msg_000", "s"),
            });
        }
        let before = messages.clone();
        let plan = apply_prune(&prune_on(), &mut messages, 5);
        prop_assert!(plan.pruned <= plan.total);
        prop_assert!(plan.pruned_part_ids.is_empty() || plan.pruned > 20_000);
        prop_assert!(plan.total - plan.pruned <= PRUNE_PROTECT);
        // The last two user turns are untouched.
        let users: Vec<usize> = (0..layout.len()).filter(|i| layout[*i].0 == 0).collect();
        let protected_from = if users.len() >= 2 { users[users.len() - 2] + 1 } else { 0 };
        for index in protected_from..messages.len() {
            prop_assert_eq!(&messages[index], &before[index]);
        }
        for (index, message) in messages.iter().enumerate() {
            for (old, new) in before[index].parts.iter().zip(&message.parts) {
                if old != new {
                    prop_assert!(plan.pruned_part_ids.contains(&new.id));
                    let PartKind::Tool(tool) = &new.kind else { panic!("non-tool part changed") };
                    prop_assert_eq!(tool.tool.as_str(), "read");
                }
            }
        }
    }
}
