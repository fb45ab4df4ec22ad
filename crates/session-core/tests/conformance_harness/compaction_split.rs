//! Cases of `compaction_split.json`.
//!
//! Messages carry an injected `tokens` size; the harness passes `select_tail` and `split_turn`
//! an estimator that sums them over a range, as the file's `about` asks.

use std::collections::HashMap;

use rust_decimal::Decimal;
use serde_json::{Value, json};
use session_core::{
    AssistantMessage, AssistantTime, CompactionPart, CreatedTime, Message, MessageId, MessagePath,
    MessageWithParts, ModelRef, Part, PartId, PartKind, SessionId, TextPart, TokenUsage, UserMessage,
    compaction::Turn, compaction::preserve_budget, compaction::select_tail, compaction::split_turn,
    compaction::turns, config::CompactionConfig, overflow::ModelLimit, overflow::OUTPUT_TOKEN_MAX,
    overflow::usable,
};

use crate::{Report, case_name, cases};

/// Runs every case of the file.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        let name = case_name(case);
        let outcome = match case.get("kind").and_then(Value::as_str) {
            Some("budget") => budget(case),
            Some("turns") => turns_case(case),
            Some("split_turn") => split_case(case),
            Some("select") => select_case(case),
            other => {
                report.record(&name, Err(format!("unknown kind {other:?}")));
                continue;
            }
        };
        match outcome {
            Ok(actual) => {
                let expected = case.get("expected").cloned().unwrap_or(Value::Null);
                report.compare(&name, &expected, &actual);
            }
            Err(error) => report.record(&name, Err(format!("unmappable case: {error}"))),
        }
    }
}

fn input(case: &Value) -> Result<&Value, String> {
    case.get("input").ok_or_else(|| "no input".to_owned())
}

fn config(input: &Value) -> Result<CompactionConfig, String> {
    match input.get("cfg").and_then(|cfg| cfg.get("compaction")) {
        Some(compaction) => serde_json::from_value(compaction.clone()).map_err(|e| format!("cfg: {e}")),
        None => Ok(CompactionConfig::default()),
    }
}

fn budget(case: &Value) -> Result<Value, String> {
    let input = input(case)?;
    let cfg = config(input)?;
    let usable = match (input.get("model"), input.get("usable")) {
        (Some(model), _) => {
            let limit: ModelLimit =
                serde_json::from_value(model.get("limit").cloned().ok_or("model without limit")?)
                    .map_err(|e| format!("limit: {e}"))?;
            let output_token_max = match input.get("outputTokenMax") {
                None | Some(Value::Null) => OUTPUT_TOKEN_MAX,
                Some(value) => value.as_u64().ok_or_else(|| format!("outputTokenMax {value}"))?,
            };
            usable(&cfg, &limit, output_token_max)
        }
        (None, Some(value)) => value.as_u64().ok_or_else(|| format!("usable {value}"))?,
        (None, None) => return Err("neither model nor usable".to_owned()),
    };
    Ok(json!({"usable": usable, "budget": preserve_budget(&cfg, usable)}))
}

/// The messages of a case and the injected size of each, by id.
struct Sized {
    messages: Vec<MessageWithParts>,
    tokens: HashMap<MessageId, u64>,
}

impl Sized {
    fn estimate(&self) -> impl FnMut(&[MessageWithParts]) -> u64 + '_ {
        |range: &[MessageWithParts]| {
            range.iter().map(|m| self.tokens.get(m.info.id()).copied().unwrap_or(0)).sum()
        }
    }
}

fn sized(input: &Value) -> Result<Sized, String> {
    let mut messages = Vec::new();
    let mut tokens = HashMap::new();
    let session_id = SessionId::new_unchecked("ses_conformance");
    for value in input.get("messages").and_then(Value::as_array).ok_or("no messages")? {
        let id = value.get("id").and_then(Value::as_str).ok_or("message without id")?;
        let message_id = MessageId::new_unchecked(id);
        let size = value
            .get("tokens")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("message {id} without tokens"))?;
        tokens.insert(message_id.clone(), size);
        let compaction = match value.get("compaction") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(other) => return Err(format!("compaction {other}")),
        };
        let (info, kind) = match value.get("role").and_then(Value::as_str) {
            Some("user") => (
                Message::User(UserMessage {
                    id: message_id.clone(),
                    session_id: session_id.clone(),
                    time: CreatedTime { created: 0 },
                    format: None,
                    summary: None,
                    agent: "build".into(),
                    model: ModelRef {
                        provider_id: "test".into(),
                        model_id: "test-model".into(),
                        variant: None,
                    },
                    system: None,
                    tools: None,
                }),
                if compaction {
                    PartKind::Compaction(CompactionPart { auto: true, ..CompactionPart::default() })
                } else {
                    PartKind::Text(TextPart { text: id.to_owned(), ..TextPart::default() })
                },
            ),
            Some("assistant") if !compaction => (
                Message::Assistant(AssistantMessage {
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
                    summary: None,
                    cost: Decimal::ZERO,
                    tokens: TokenUsage::default(),
                    structured: None,
                    variant: None,
                    finish: None,
                }),
                PartKind::Text(TextPart { text: id.to_owned(), ..TextPart::default() }),
            ),
            other => return Err(format!("message {id}: role {other:?} with compaction {compaction}")),
        };
        let part = Part {
            id: PartId::new_unchecked(format!("prt_{id}")),
            session_id: session_id.clone(),
            message_id,
            kind,
        };
        messages.push(MessageWithParts { info, parts: vec![part] });
    }
    Ok(Sized { messages, tokens })
}

fn turns_case(case: &Value) -> Result<Value, String> {
    let sized = sized(input(case)?)?;
    let turns: Vec<Value> = turns(&sized.messages)
        .into_iter()
        .map(|turn| json!({"start": turn.start, "end": turn.end, "id": turn.id.as_str()}))
        .collect();
    Ok(json!({"turns": turns}))
}

fn split_case(case: &Value) -> Result<Value, String> {
    let input = input(case)?;
    let sized = sized(input)?;
    let turn = input.get("turn").ok_or("no turn")?;
    let index = |key: &str| {
        turn.get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| format!("turn without {key}"))
    };
    let turn = Turn {
        start: index("start")?,
        end: index("end")?,
        id: MessageId::new_unchecked(turn.get("id").and_then(Value::as_str).ok_or("turn without id")?),
    };
    let budget = budget_input(input)?;
    let tail = split_turn(&sized.messages, &turn, budget, sized.estimate());
    Ok(json!({"tail": tail.map(|tail| json!({"start": tail.start, "id": tail.id.as_str()}))}))
}

fn select_case(case: &Value) -> Result<Value, String> {
    let input = input(case)?;
    let sized = sized(input)?;
    let tail_turns = match input.get("tail_turns") {
        None | Some(Value::Null) => session_core::compaction::tail_turns(&CompactionConfig::default()),
        Some(value) => value.as_i64().ok_or_else(|| format!("tail_turns {value}"))?,
    };
    let budget = budget_input(input)?;
    let selection = select_tail(&sized.messages, tail_turns, budget, sized.estimate());
    Ok(json!({
        "tail_start_id": selection.tail_start_id.as_ref().map(MessageId::as_str),
        "head_count": selection.head(&sized.messages).len(),
    }))
}

fn budget_input(input: &Value) -> Result<u64, String> {
    let value = input.get("budget").ok_or("no budget")?;
    // A negative budget behaves as 0: nothing fits.
    match (value.as_u64(), value.as_i64()) {
        (Some(budget), _) => Ok(budget),
        (None, Some(negative)) if negative < 0 => Ok(0),
        _ => Err(format!("budget {value}")),
    }
}
