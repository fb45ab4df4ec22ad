//! Compaction as pure rules and plans (SPEC 10): prune selection, turns and the kept tail, the
//! summary request and the messages that follow a summary.
//!
//! Nothing here runs a model or writes a message. The runtime asks these functions what to do
//! (which outputs to clear, which messages to summarize, what to send, what to write next) and
//! carries it out.

use std::collections::HashSet;

use serde_json::Value;

use crate::config::CompactionConfig;
use crate::history::{ModelMessage, ModelTarget, ToModelOptions, UserContent, is_media, media_placeholder};
use crate::id::{MessageId, PartId, SessionId};
use crate::js_json::JsonObject;
use crate::message::{
    AssistantMessage, AssistantTime, CreatedTime, Message, MessageError, MessagePath, MessageWithParts,
    ModelRef, Part, PartKind, TextPart, ToolState, UserMessage,
};
use crate::usage::TokenUsage;

/// Prune marks outputs only when the candidates total more than this many tokens.
pub const PRUNE_MINIMUM: u64 = 20_000;
/// Prune keeps this many tokens of the newest tool outputs untouched.
pub const PRUNE_PROTECT: u64 = 40_000;
/// Tools whose outputs prune never clears.
pub const PRUNE_PROTECTED_TOOLS: &[&str] = &["skill"];
/// How many recent turns compaction may keep verbatim when the config says nothing.
pub const DEFAULT_TAIL_TURNS: i64 = 2;
/// The smallest default budget of the kept tail, in tokens.
pub const MIN_PRESERVE_RECENT_TOKENS: u64 = 2_000;
/// The largest default budget of the kept tail, in tokens.
pub const MAX_PRESERVE_RECENT_TOKENS: u64 = 8_000;
/// The agent (and mode) name of summary messages.
pub const COMPACTION_AGENT: &str = "compaction";

/// What prune found, and what it marks (SPEC 10.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrunePlan {
    /// Whether pruning is switched on (`compaction.prune`).
    pub enabled: bool,
    /// Parts whose output gets `time.compacted`, newest first (empty unless `pruned > PRUNE_MINIMUM`).
    pub pruned_part_ids: Vec<PartId>,
    /// Parts beyond the protected window, newest first.
    pub candidates: Vec<PartId>,
    /// Estimated tokens of every output counted.
    pub total: u64,
    /// Estimated tokens of the candidates.
    pub pruned: u64,
}

/// Whether prune runs at all: only when `compaction.prune` is set to true (opt-in).
pub fn prune_enabled(cfg: &CompactionConfig) -> bool {
    cfg.prune == Some(true)
}

/// Decides which completed tool outputs prune clears (SPEC 10.1), without changing anything.
pub fn plan_prune(cfg: &CompactionConfig, messages: &[MessageWithParts]) -> PrunePlan {
    select_prune(cfg, messages).0
}

/// Runs prune over `messages`: marks the chosen outputs compacted at `now` and returns the plan.
pub fn apply_prune(cfg: &CompactionConfig, messages: &mut [MessageWithParts], now: u64) -> PrunePlan {
    let (plan, positions) = select_prune(cfg, messages);
    if !plan.pruned_part_ids.is_empty() {
        for (message, part) in positions {
            if let Some(PartKind::Tool(tool)) =
                messages.get_mut(message).and_then(|m| m.parts.get_mut(part)).map(|p| &mut p.kind)
            {
                // Every candidate is a completed call, the one state this transition accepts.
                let _ = tool.state.mark_compacted(now);
            }
        }
    }
    plan
}

fn select_prune(cfg: &CompactionConfig, messages: &[MessageWithParts]) -> (PrunePlan, Vec<(usize, usize)>) {
    let mut plan = PrunePlan { enabled: prune_enabled(cfg), ..PrunePlan::default() };
    if !plan.enabled {
        return (plan, Vec::new());
    }
    let mut positions = Vec::new();
    let mut turns = 0;
    'messages: for (message_index, message) in messages.iter().enumerate().rev() {
        if matches!(message.info, Message::User(_)) {
            turns += 1;
        }
        // The newest two user turns are never touched.
        if turns < 2 {
            continue;
        }
        // Everything before a summary is already summarized, so walking on is pointless.
        if let Message::Assistant(info) = &message.info
            && info.is_summary()
        {
            break;
        }
        for (part_index, part) in message.parts.iter().enumerate().rev() {
            let PartKind::Tool(tool) = &part.kind else { continue };
            let ToolState::Completed { output, time, .. } = &tool.state else { continue };
            if PRUNE_PROTECTED_TOOLS.contains(&tool.tool.as_str()) {
                continue;
            }
            // An output already cleared means an earlier prune went this far back.
            if time.compacted.is_some() {
                break 'messages;
            }
            let estimate = crate::token::estimate(output);
            plan.total = plan.total.saturating_add(estimate);
            if plan.total > PRUNE_PROTECT {
                plan.pruned = plan.pruned.saturating_add(estimate);
                plan.candidates.push(part.id.clone());
                positions.push((message_index, part_index));
            }
        }
    }
    if plan.pruned > PRUNE_MINIMUM {
        plan.pruned_part_ids = plan.candidates.clone();
    } else {
        positions.clear();
    }
    (plan, positions)
}

/// Whether a message is a compaction request: a user message with a `compaction` part.
pub fn is_compaction_message(message: &MessageWithParts) -> bool {
    matches!(message.info, Message::User(_))
        && message.parts.iter().any(|part| matches!(part.kind, PartKind::Compaction(_)))
}

/// A user turn: a real user message and everything up to the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Index of the user message.
    pub start: usize,
    /// Index just past the turn's last message.
    pub end: usize,
    /// Id of the user message.
    pub id: MessageId,
}

/// The turns of `messages`; compaction requests and messages before the first user message
/// start none.
pub fn turns(messages: &[MessageWithParts]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if matches!(message.info, Message::User(_)) && !is_compaction_message(message) {
            if let Some(last) = turns.last_mut() {
                last.end = index;
            }
            turns.push(Turn { start: index, end: messages.len(), id: message.info.id().clone() });
        }
    }
    turns
}

/// Where the kept tail starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailStart {
    /// Index of the first kept message.
    pub start: usize,
    /// Its id.
    pub id: MessageId,
}

/// The longest suffix of `turn` that fits `budget` tokens, never including the turn's own user
/// message; `estimate` gives the size of a range of messages.
pub fn split_turn<F>(
    messages: &[MessageWithParts],
    turn: &Turn,
    budget: u64,
    mut estimate: F,
) -> Option<TailStart>
where
    F: FnMut(&[MessageWithParts]) -> u64,
{
    let end = turn.end.min(messages.len());
    if budget == 0 || end <= turn.start.saturating_add(1) {
        return None;
    }
    (turn.start + 1..end).find_map(|start| {
        let range = messages.get(start..end)?;
        let first = range.first()?;
        (estimate(range) <= budget).then(|| TailStart { start, id: first.info.id().clone() })
    })
}

/// Which messages compaction summarizes (`head`) and which it keeps verbatim (the tail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailSelection {
    /// The head is `messages[..head_end]`; the tail, if any, is the rest.
    pub head_end: usize,
    /// The first kept message, or `None` when everything is summarized.
    pub tail_start_id: Option<MessageId>,
}

impl TailSelection {
    /// The messages to summarize.
    pub fn head<'a>(&self, messages: &'a [MessageWithParts]) -> &'a [MessageWithParts] {
        messages.get(..self.head_end).unwrap_or(messages)
    }

    /// The messages kept verbatim after the summary.
    pub fn tail<'a>(&self, messages: &'a [MessageWithParts]) -> &'a [MessageWithParts] {
        messages.get(self.head_end..).unwrap_or(&[])
    }
}

/// The number of recent turns compaction may keep (`compaction.tail_turns`, default 2).
pub fn tail_turns(cfg: &CompactionConfig) -> i64 {
    cfg.tail_turns.unwrap_or(DEFAULT_TAIL_TURNS)
}

/// The token budget of the kept tail for a model with `usable` input tokens.
pub fn preserve_budget(cfg: &CompactionConfig, usable: u64) -> u64 {
    cfg.preserve_recent_tokens
        .unwrap_or_else(|| (usable / 4).clamp(MIN_PRESERVE_RECENT_TOKENS, MAX_PRESERVE_RECENT_TOKENS))
}

/// Picks the tail kept verbatim: whole recent turns newest first while they fit `budget`, then
/// the longest fitting suffix of the first turn that does not (SPEC 10.2 step 5).
///
/// `estimate` gives the size of a range of messages; the runtime passes
/// `|range| estimate_history(range, target, options)`, which is not additive.
pub fn select_tail<F>(
    messages: &[MessageWithParts],
    tail_turns: i64,
    budget: u64,
    mut estimate: F,
) -> TailSelection
where
    F: FnMut(&[MessageWithParts]) -> u64,
{
    let none = TailSelection { head_end: messages.len(), tail_start_id: None };
    let Ok(limit) = usize::try_from(tail_turns) else { return none };
    if limit == 0 {
        return none;
    }
    let all = turns(messages);
    let recent = &all[all.len().saturating_sub(limit)..];
    let mut total: u64 = 0;
    let mut keep: Option<usize> = None;
    for turn in recent.iter().rev() {
        let size = messages.get(turn.start..turn.end).map_or(0, &mut estimate);
        if total.saturating_add(size) <= budget {
            total += size;
            keep = Some(turn.start);
            continue;
        }
        if let Some(split) = split_turn(messages, turn, budget - total, &mut estimate) {
            keep = Some(split.start);
        }
        break;
    }
    match keep {
        Some(start) if start > 0 => TailSelection {
            head_end: start,
            tail_start_id: messages.get(start).map(|message| message.info.id().clone()),
        },
        // Keeping everything would leave nothing to summarize.
        _ => none,
    }
}

/// Why a compaction cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactionError {
    /// The compaction request's message is missing or is not a user message.
    #[error("Compaction parent must be a user message: {0}")]
    ParentNotUser(MessageId),
}

/// The history a compaction works on (SPEC 10.2 steps 1, 2 and 4).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionHistory {
    /// The messages to summarize or keep as the tail, oldest first.
    pub messages: Vec<MessageWithParts>,
    /// The user message to send again after the summary (overflow compaction only).
    pub replay: Option<MessageWithParts>,
    /// The text of the newest earlier summary, to be updated rather than rewritten.
    pub previous_summary: Option<String>,
}

/// Prepares the history for the compaction requested by user message `parent_id`.
///
/// With `overflow`, the newest earlier real user message is held back for replay and only the
/// history before it is compacted, unless no real user message would remain. The compaction
/// request itself and completed earlier compaction pairs are left out; the newest of those
/// summaries becomes `previous_summary`.
pub fn compaction_history(
    messages: &[MessageWithParts],
    parent_id: &MessageId,
    overflow: bool,
) -> Result<CompactionHistory, CompactionError> {
    let parent = messages
        .iter()
        .rposition(|message| message.info.id() == parent_id && matches!(message.info, Message::User(_)))
        .ok_or_else(|| CompactionError::ParentNotUser(parent_id.clone()))?;
    let is_real_user = |message: &MessageWithParts| {
        matches!(message.info, Message::User(_)) && !is_compaction_message(message)
    };
    let mut base = messages;
    let mut replay = None;
    if overflow
        && let Some(index) = messages[..parent].iter().rposition(is_real_user)
        && messages[..index].iter().any(is_real_user)
    {
        replay = messages.get(index).cloned();
        base = &messages[..index];
    }
    let completed = completed_summaries(base);
    let hidden: HashSet<&MessageId> =
        completed.iter().flat_map(|summary| [&summary.id, &summary.parent_id]).collect();
    let previous_summary = base
        .iter()
        .rev()
        .find(|message| completed.iter().any(|summary| summary.id == *message.info.id()))
        .map(summary_text);
    let history = base
        .iter()
        .filter(|message| message.info.id() != parent_id && !hidden.contains(message.info.id()))
        .cloned()
        .collect();
    Ok(CompactionHistory { messages: history, replay, previous_summary })
}

/// Summaries that finished without error and answer a compaction request in `messages`.
fn completed_summaries(messages: &[MessageWithParts]) -> Vec<&AssistantMessage> {
    let requests: HashSet<&MessageId> =
        messages.iter().filter(|m| is_compaction_message(m)).map(|m| m.info.id()).collect();
    messages
        .iter()
        .filter_map(|message| match &message.info {
            Message::Assistant(info) if is_completed_summary(info) && requests.contains(&info.parent_id) => {
                Some(info)
            }
            _ => None,
        })
        .collect()
}

fn is_completed_summary(info: &AssistantMessage) -> bool {
    info.is_summary() && info.finish.is_some() && info.error.is_none()
}

/// The text of a summary message: its text parts, one per line.
pub fn summary_text(message: &MessageWithParts) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|part| match &part.kind {
            PartKind::Text(text) if text.ignored != Some(true) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n").trim().to_owned()
}

/// The system prompt of the compaction agent.
pub const COMPACTION_SYSTEM_PROMPT: &str = "\
You are an anchored context summarization assistant. You read the conversation between a user \
and a coding agent that comes before your instructions and write a structured summary of it. \
That summary replaces the older conversation, so the agent must be able to carry on the work \
from it alone. Record only what the conversation shows: never invent facts, never call tools, \
and answer with the summary and nothing else.";

/// The anchor line of a first summary.
pub const NEW_SUMMARY_ANCHOR: &str = "Create a new anchored summary from the conversation history above.";
/// The first anchor line when an earlier summary exists.
pub const UPDATE_SUMMARY_ANCHOR: &str =
    "Update the anchored summary below using the conversation history above.";
/// The second anchor line when an earlier summary exists.
pub const UPDATE_SUMMARY_RULE: &str =
    "Preserve still-true details, remove stale details, and merge in the new facts.";

/// The required structure of a summary and the rules for writing it.
pub const SUMMARY_TEMPLATE: &str = "\
Reply with exactly the Markdown below: every heading, in this order, and nothing before or after it.

## Goal
- what the user wants to achieve

## Constraints & Preferences
- requirements, limits and preferences the user has stated

## Progress
### Done
- work that is finished
### In Progress
- work that has started and is not finished
### Blocked
- work that cannot go on, and what it waits for

## Key Decisions
- choices that were made, each with its reason

## Next Steps
- what comes next, in order

## Critical Context
- facts, results and errors the next steps depend on

## Relevant Files
- path: why it matters

Rules:
- Keep every section. Write \"(none)\" under a section that has nothing to report.
- Write short, terse bullets, not paragraphs.
- Copy file paths, commands, error messages and identifiers exactly as they appeared.
- Do not mention summarization, this summary, or that the conversation was shortened.";

/// The anchor of the summary prompt: a new summary, or an update of `previous`.
pub fn summary_anchor(previous: Option<&str>) -> String {
    match previous {
        None => NEW_SUMMARY_ANCHOR.to_owned(),
        Some(summary) => {
            [UPDATE_SUMMARY_ANCHOR, UPDATE_SUMMARY_RULE, "<previous-summary>", summary, "</previous-summary>"]
                .join("\n")
        }
    }
}

/// The summary prompt: anchor, template and each extra context string, separated by blank lines.
pub fn summary_prompt(previous: Option<&str>, context: &[String]) -> String {
    let mut sections = vec![summary_anchor(previous), SUMMARY_TEMPLATE.to_owned()];
    sections.extend(context.iter().cloned());
    sections.join("\n\n")
}

/// The messages of the summary request: the head as the model sees it in a compaction (media
/// stripped, long outputs cut), then a user message holding `prompt`.
pub fn summary_request(head: &[MessageWithParts], target: &ModelTarget, prompt: &str) -> Vec<ModelMessage> {
    let mut messages = crate::history::to_model_messages(head, target, &ToModelOptions::COMPACTION);
    messages.push(ModelMessage::User { content: vec![UserContent::Text { text: prompt.to_owned() }] });
    messages
}

/// A new, empty summary message answering compaction request `parent_id`.
pub fn summary_message(
    id: MessageId,
    session_id: SessionId,
    parent_id: MessageId,
    model: &ModelRef,
    path: MessagePath,
    now: u64,
) -> AssistantMessage {
    AssistantMessage {
        id,
        session_id,
        time: AssistantTime { created: now, completed: None },
        error: None,
        parent_id,
        model_id: model.model_id.clone(),
        provider_id: model.provider_id.clone(),
        mode: COMPACTION_AGENT.to_owned(),
        agent: COMPACTION_AGENT.to_owned(),
        path,
        summary: Some(true),
        cost: rust_decimal::Decimal::ZERO,
        tokens: TokenUsage::default(),
        structured: None,
        variant: model.variant.clone(),
        finish: None,
    }
}

/// The error text when the summary overflowed while a user turn was held back for replay.
pub const REPLAY_TOO_LARGE_TEXT: &str =
    "Conversation history too large to compact - exceeds model context limit";
/// The error text when the summary overflowed with the whole history.
pub const SESSION_TOO_LARGE_TEXT: &str =
    "Session too large to compact - context exceeds model limit even after stripping media";

/// The error recorded on a summary message whose own request overflowed.
pub fn too_large_error(replaying: bool) -> MessageError {
    let message = if replaying { REPLAY_TOO_LARGE_TEXT } else { SESSION_TOO_LARGE_TEXT };
    MessageError::ContextOverflowError { message: message.to_owned(), response_body: None }
}

/// The request to go on after an automatic compaction without replay.
pub const CONTINUE_TEXT: &str =
    "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.";
/// What precedes [`CONTINUE_TEXT`] when the compaction was caused by an oversize request.
pub const OVERFLOW_CONTINUE_PREFIX: &str = "The previous request exceeded the provider's size limit due to large \
media attachments. The conversation was compacted and media files were removed from context. If the user was \
asking about attached images or files, explain that the attachments were too large to process and suggest they \
try again with smaller or fewer files.\n\n";

/// The text of the continue message, with the media explanation after an overflow.
pub fn continue_text(overflow: bool) -> String {
    let prefix = if overflow { OVERFLOW_CONTINUE_PREFIX } else { "" };
    format!("{prefix}{CONTINUE_TEXT}")
}

/// The synthetic text part of the continue message (`metadata.compaction_continue = true`).
pub fn continue_part(overflow: bool) -> TextPart {
    let mut metadata = JsonObject::new();
    metadata.insert("compaction_continue".to_owned(), Value::Bool(true));
    TextPart {
        text: continue_text(overflow),
        synthetic: Some(true),
        ignored: None,
        time: None,
        metadata: Some(metadata),
    }
}

/// The user message that replays `original` after the summary: same agent, model, format,
/// tools and system prompt, created at `now`.
pub fn replay_user_message(original: &UserMessage, id: MessageId, now: u64) -> UserMessage {
    UserMessage {
        id,
        session_id: original.session_id.clone(),
        time: CreatedTime { created: now },
        format: original.format.clone(),
        summary: None,
        agent: original.agent.clone(),
        model: original.model.clone(),
        system: original.system.clone(),
        tools: original.tools.clone(),
    }
}

/// The parts of the replayed message: all but compaction parts, media files as marker text.
pub fn replay_parts(parts: &[Part]) -> Vec<PartKind> {
    parts
        .iter()
        .filter_map(|part| match &part.kind {
            PartKind::Compaction(_) => None,
            PartKind::File(file) if is_media(&file.mime) => Some(PartKind::Text(TextPart {
                text: media_placeholder(&file.mime, file.filename.as_deref()),
                ..TextPart::default()
            })),
            other => Some(other.clone()),
        })
        .collect()
}

/// The messages the prompt loop sends after a compaction, oldest first: the newest completed
/// compaction request, its summary, the kept tail and everything newer (SPEC 10.2,
/// `filterCompacted`). Without a completed compaction, every message.
pub fn filter_compacted(messages: &[MessageWithParts]) -> Vec<&MessageWithParts> {
    let mut completed: HashSet<&MessageId> = HashSet::new();
    let mut retain: Option<&MessageId> = None;
    let mut request: Option<usize> = None;
    let mut stop = 0;
    for (index, message) in messages.iter().enumerate().rev() {
        if let Some(tail_start) = retain {
            if message.info.id() == tail_start {
                stop = index;
                break;
            }
            continue;
        }
        match &message.info {
            Message::User(info) if completed.contains(&info.id) && is_compaction_message(message) => {
                request = Some(index);
                let tail_start = message.parts.iter().find_map(|part| match &part.kind {
                    PartKind::Compaction(compaction) => compaction.tail_start_id.as_ref(),
                    _ => None,
                });
                match tail_start {
                    Some(tail_start) if tail_start != &info.id => retain = Some(tail_start),
                    _ => {
                        stop = index;
                        break;
                    }
                }
            }
            Message::Assistant(info) if is_completed_summary(info) => {
                completed.insert(&info.parent_id);
            }
            _ => {}
        }
    }
    let Some(request) = request else { return messages.iter().collect() };
    let Some(compaction) = messages.get(request) else { return messages.iter().collect() };
    let request_id = compaction.info.id();
    let is_summary = |message: &MessageWithParts| matches!(&message.info, Message::Assistant(info) if is_completed_summary(info) && &info.parent_id == request_id);
    let newer = messages.get(request + 1..).unwrap_or(&[]);
    let summary = newer.iter().position(is_summary);
    let mut result = vec![compaction];
    result.extend(summary.and_then(|index| newer.get(index)));
    result.extend(messages.get(stop..request).unwrap_or(&[]));
    result.extend(newer.iter().enumerate().filter(|(index, _)| Some(*index) != summary).map(|(_, m)| m));
    result
}
