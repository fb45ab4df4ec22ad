//! Cases of `prune.json`.
//!
//! The vectors describe tool parts by `status`, `compacted` and `output_chars`; the harness
//! builds real parts from them (an output of exactly `output_chars` UTF-16 units), runs
//! `apply_prune` and checks that the parts it reports are the parts it marked.

use rust_decimal::Decimal;
use serde_json::{Value, json};
use session_core::{
    AssistantMessage, AssistantTime, CompactionPart, CompletedTime, CreatedTime, ErrorTime, JsonObject,
    Message, MessageId, MessagePath, MessageWithParts, ModelRef, Part, PartId, PartKind, RunningTime,
    SessionId, StepStartPart, TextPart, TokenUsage, ToolPart, ToolState, UserMessage,
    compaction::apply_prune, config::CompactionConfig,
};

use crate::{Report, case_name, cases};

const NOW: u64 = 1_700_000_000_000;

/// Runs every case of the file.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        let name = case_name(case);
        if let Some(kind) = case.get("kind") {
            report.record(&name, Err(format!("unknown kind {kind}")));
            continue;
        }
        match actual(case) {
            Ok(actual) => {
                let expected = case.get("expected").cloned().unwrap_or(Value::Null);
                report.compare(&name, &expected, &actual);
            }
            Err(error) => report.record(&name, Err(format!("unmappable case: {error}"))),
        }
    }
}

fn actual(case: &Value) -> Result<Value, String> {
    let input = case.get("input").ok_or("no input")?;
    let cfg: CompactionConfig = match input.get("cfg").and_then(|cfg| cfg.get("compaction")) {
        Some(compaction) => serde_json::from_value(compaction.clone()).map_err(|e| format!("cfg: {e}"))?,
        None => CompactionConfig::default(),
    };
    let mut messages = input
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("no messages")?
        .iter()
        .map(message)
        .collect::<Result<Vec<_>, _>>()?;
    let before = messages.clone();
    let plan = apply_prune(&cfg, &mut messages, NOW);
    let marked = newly_marked(&before, &messages);
    if marked != plan.pruned_part_ids {
        return Err(format!("plan reports {:?} but marked {marked:?}", plan.pruned_part_ids));
    }
    let ids = |ids: &[PartId]| ids.iter().map(|id| json!(id.as_str())).collect::<Vec<_>>();
    Ok(json!({
        "enabled": plan.enabled,
        "pruned_part_ids": ids(&plan.pruned_part_ids),
        "candidates": ids(&plan.candidates),
        "total": plan.total,
        "pruned": plan.pruned,
    }))
}

/// Parts whose state changed between `before` and `after`, newest first, each checked to be
/// exactly a `time.compacted = NOW` mark.
fn newly_marked(before: &[MessageWithParts], after: &[MessageWithParts]) -> Vec<PartId> {
    let mut marked = Vec::new();
    for (old, new) in before.iter().zip(after).rev() {
        for (old_part, new_part) in old.parts.iter().zip(&new.parts).rev() {
            if old_part == new_part {
                continue;
            }
            let mut expected = old_part.clone();
            if let PartKind::Tool(tool) = &mut expected.kind {
                let _ = tool.state.mark_compacted(NOW);
            }
            if &expected == new_part {
                marked.push(new_part.id.clone());
            } else {
                marked.push(PartId::new_unchecked(format!("<unexpected change of {}>", new_part.id)));
            }
        }
    }
    marked
}

fn message(value: &Value) -> Result<MessageWithParts, String> {
    let id = value.get("id").and_then(Value::as_str).ok_or("message without id")?;
    let message_id = MessageId::new_unchecked(id);
    let session_id = SessionId::new_unchecked("ses_conformance");
    let info = match value.get("role").and_then(Value::as_str) {
        Some("user") => Message::User(UserMessage {
            id: message_id.clone(),
            session_id: session_id.clone(),
            time: CreatedTime { created: 0 },
            format: None,
            summary: None,
            agent: "build".into(),
            model: ModelRef { provider_id: "test".into(), model_id: "test-model".into(), variant: None },
            system: None,
            tools: None,
        }),
        Some("assistant") => Message::Assistant(AssistantMessage {
            id: message_id.clone(),
            session_id: session_id.clone(),
            time: AssistantTime { created: 0, completed: Some(1) },
            error: None,
            parent_id: MessageId::new_unchecked("msg_parent"),
            model_id: "test-model".into(),
            provider_id: "test".into(),
            mode: "build".into(),
            agent: "build".into(),
            path: MessagePath { cwd: "/".into(), root: "/".into() },
            summary: match value.get("summary") {
                None | Some(Value::Null) => None,
                Some(Value::Bool(flag)) => Some(*flag),
                Some(other) => return Err(format!("summary {other}")),
            },
            cost: Decimal::ZERO,
            tokens: TokenUsage::default(),
            structured: None,
            variant: None,
            finish: None,
        }),
        other => return Err(format!("message {id} has role {other:?}")),
    };
    let parts = value
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("message {id} without parts"))?
        .iter()
        .map(|part| {
            let part_id = part.get("id").and_then(Value::as_str).ok_or("part without id")?;
            Ok(Part {
                id: PartId::new_unchecked(part_id),
                session_id: session_id.clone(),
                message_id: message_id.clone(),
                kind: part_kind(part)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(MessageWithParts { info, parts })
}

fn part_kind(part: &Value) -> Result<PartKind, String> {
    let text = |key: &str| part.get(key).and_then(Value::as_str).map(str::to_owned);
    match part.get("type").and_then(Value::as_str) {
        Some("text") => {
            Ok(PartKind::Text(TextPart { text: text("text").unwrap_or_default(), ..TextPart::default() }))
        }
        Some("step-start") => Ok(PartKind::StepStart(StepStartPart::default())),
        Some("compaction") => Ok(PartKind::Compaction(CompactionPart {
            auto: part.get("auto").and_then(Value::as_bool).unwrap_or(false),
            ..CompactionPart::default()
        })),
        Some("tool") => {
            let tool = text("tool").ok_or("tool part without tool")?;
            let output_chars = match part.get("output_chars") {
                None => 0,
                Some(value) => value.as_u64().ok_or_else(|| format!("output_chars {value}"))?,
            };
            let output = "x".repeat(usize::try_from(output_chars).map_err(|e| e.to_string())?);
            let compacted = match part.get("compacted") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => None,
                Some(Value::Bool(true)) => Some(1),
                Some(other) => return Err(format!("compacted {other}")),
            };
            let input = JsonObject::new();
            let state = match part.get("status").and_then(Value::as_str) {
                Some("completed") => ToolState::Completed {
                    input,
                    output,
                    title: tool.clone(),
                    metadata: JsonObject::new(),
                    time: CompletedTime { start: 0, end: 1, compacted },
                    attachments: None,
                },
                // Only completed parts carry an output or a compacted time; the vectors give
                // them on other states to show that prune ignores them there.
                Some("error") => ToolState::Error {
                    input,
                    error: "failed".into(),
                    metadata: None,
                    time: ErrorTime { start: 0, end: 1 },
                    raw: None,
                    title: None,
                },
                Some("running") => {
                    ToolState::Running { input, title: None, metadata: None, time: RunningTime { start: 0 } }
                }
                Some("pending") => ToolState::pending(),
                other => return Err(format!("tool status {other:?}")),
            };
            let call_id = text("id").unwrap_or_default();
            Ok(PartKind::Tool(ToolPart { call_id, tool, state, metadata: None }))
        }
        other => Err(format!("part type {other:?}")),
    }
}
