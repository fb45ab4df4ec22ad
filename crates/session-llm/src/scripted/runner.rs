//! Choosing the reply to a request, as mockllm.py does: the kind of request (main, title,
//! summary, auxiliary), the turn from the history, the fault by request number, and the turn's
//! content with tools translated and usage completed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use session_core::{FinishReason, history::AssistantContent, history::ModelMessage, history::UserContent};

use super::render::FaultAction;
use super::reply::{Reply, ReplyCall, ReplyUsage};
use super::script::{Fault, Script};
use super::translate::translate;
use crate::decode::Api;
use crate::provider::build_request;
use crate::request::{LlmRequest, output_text};

/// The marker a summary reply carries, so that later requests resume counting turns from it.
const MARK_PREFIX: &str = "[mock-summary turn=";

/// The kind of a request, from its system prompt, last user message and tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    /// An agent turn.
    Main,
    /// A title request.
    Title,
    /// A summary (compaction) request.
    Summary,
    /// Any other request without tools, when the script treats those as auxiliary.
    Aux,
}

/// Classifies a request as mockllm's `classify()` does.
pub fn classify(system: &str, last_user: &str, has_tools: bool, aux_without_tools: bool) -> RequestKind {
    let system = system.to_lowercase();
    let user = last_user.to_lowercase();
    if system.contains("title generator")
        || user.contains("generate a title")
        || user.contains("title for this conversation")
    {
        return RequestKind::Title;
    }
    if (system.contains("summar") && !has_tools)
        || user.contains("checkpoint compaction")
        || user.contains("provide a detailed prompt for continuing")
        || (user.contains("summar") && user.contains("conversation") && !has_tools)
    {
        return RequestKind::Summary;
    }
    if !has_tools && aux_without_tools {
        return RequestKind::Aux;
    }
    RequestKind::Main
}

/// The turn number of a summary marker at the start of `text`'s first marker, if any.
pub fn summary_marker(text: &str) -> Option<usize> {
    let start = text.find(MARK_PREFIX)? + MARK_PREFIX.len();
    let rest = &text[start..];
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    if digits == 0 || !rest[digits..].starts_with(']') {
        // Not a marker; a later one in the same text is not looked for (mockllm's `search`).
        return None;
    }
    rest[..digits].parse().ok()
}

/// What the reply to a request depends on, read from the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFacts {
    /// Model turns already in the history (after the last summary marker, plus its number).
    pub turn: usize,
    /// The system prompt.
    pub system: String,
    /// The last user message's text.
    pub last_user: String,
    /// The names of the tools offered.
    pub tool_names: Vec<String>,
    /// The size of the request body, for estimated prompt tokens.
    pub body_chars: usize,
}

impl RequestFacts {
    /// The facts of an in-process request (the body is the one `api` would send).
    pub fn from_request(api: Api, request: &LlmRequest) -> Self {
        let body_chars = match build_request(api, request) {
            Ok(built) => built.body.to_string().len(),
            Err(_) => serde_json::to_string(&request.messages).map_or(0, |text| text.len()),
        };
        let last_user = request
            .messages
            .iter()
            .rev()
            .find_map(|message| match message {
                ModelMessage::User { .. } => Some(message_text(message)),
                _ => None,
            })
            .unwrap_or_default();
        Self {
            turn: turn_from_history(&request.messages),
            system: request.system.join("\n"),
            last_user,
            tool_names: request.tools.iter().map(|tool| tool.name.clone()).collect(),
            body_chars,
        }
    }
}

/// The text of a message as mockllm's `text_of` sees it on the wire.
fn message_text(message: &ModelMessage) -> String {
    let parts: Vec<String> = match message {
        ModelMessage::User { content } => content
            .iter()
            .filter_map(|item| match item {
                UserContent::Text { text } => Some(text.clone()),
                UserContent::File(_) => None,
            })
            .collect(),
        ModelMessage::Assistant { content } => content
            .iter()
            .filter_map(|item| match item {
                AssistantContent::Text { text, .. } => Some(text.clone()),
                AssistantContent::Reasoning { .. } | AssistantContent::ToolCall(_) => None,
            })
            .collect(),
        ModelMessage::Tool { content } => content.iter().map(|result| output_text(&result.output)).collect(),
    };
    parts.join("\n")
}

/// The turn a request is at: the assistant messages after the last summary marker, plus the
/// marker's number (mockllm's `chat_turn_index`).
pub fn turn_from_history(messages: &[ModelMessage]) -> usize {
    let (mut offset, mut start) = (0, 0);
    for (index, message) in messages.iter().enumerate() {
        if let Some(turn) = summary_marker(&message_text(message)) {
            (offset, start) = (turn, index + 1);
        }
    }
    let assistants = messages[start..].iter().filter(|m| matches!(m, ModelMessage::Assistant { .. })).count();
    offset.saturating_add(assistants)
}

/// Tool calls without a result before the next assistant message, and results without a call.
pub fn history_violations(messages: &[ModelMessage]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut open: Vec<(String, String)> = Vec::new();
    let mut known: BTreeSet<String> = BTreeSet::new();
    let close = |open: &mut Vec<(String, String)>, violations: &mut Vec<String>| {
        for (id, name) in open.drain(..) {
            violations.push(format!("tool call {id} ({name}) has no result"));
        }
    };
    for message in messages {
        match message {
            ModelMessage::Assistant { content } => {
                close(&mut open, &mut violations);
                for item in content {
                    if let AssistantContent::ToolCall(call) = item
                        && !call.provider_executed
                    {
                        known.insert(call.tool_call_id.clone());
                        open.push((call.tool_call_id.clone(), call.tool_name.clone()));
                    }
                }
            }
            ModelMessage::Tool { content } => {
                for result in content.iter().filter(|result| !result.provider_executed) {
                    if let Some(at) = open.iter().position(|(id, _)| *id == result.tool_call_id) {
                        open.remove(at);
                    } else if !known.contains(&result.tool_call_id) {
                        violations.push(format!("tool result {} answers no call", result.tool_call_id));
                    }
                }
            }
            ModelMessage::User { .. } => {}
        }
    }
    close(&mut open, &mut violations);
    violations
}

/// What to answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The request's number among all requests (1-based).
    pub index: u64,
    /// Its number among main requests, for a main request.
    pub main_index: Option<u64>,
    /// Its kind.
    pub kind: RequestKind,
    /// The turn it is at.
    pub turn: usize,
    /// The fault that fires on it.
    pub fault: Option<Fault>,
    /// The answer.
    pub response: PlannedResponse,
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedResponse {
    /// A streamed reply.
    Reply(Reply),
    /// A fault instead of the reply (faults inside a stream carry the reply they cut).
    Fault(FaultAction),
}

#[derive(Debug, Default)]
struct Counters {
    all: u64,
    main: u64,
    /// The furthest main turn answered (mockllm's `max_turn`).
    max_turn: Option<usize>,
}

/// A script with its request counters: what both the in-process provider and the test server
/// consult for every request. Cheap to clone; clones share the counters.
#[derive(Debug, Clone)]
pub struct ScriptRunner {
    script: Arc<Script>,
    counters: Arc<Mutex<Counters>>,
}

impl ScriptRunner {
    /// A runner at the script's start.
    pub fn new(script: Script) -> Self {
        Self { script: Arc::new(script), counters: Arc::new(Mutex::new(Counters::default())) }
    }

    /// The script.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// Counts the request and chooses its answer in `api`'s terms.
    pub fn plan(&self, api: Api, facts: &RequestFacts) -> Plan {
        let script = &self.script;
        let kind =
            classify(&facts.system, &facts.last_user, !facts.tool_names.is_empty(), script.aux_without_tools);
        let (index, main_index, turn) = {
            let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
            counters.all += 1;
            if kind == RequestKind::Main {
                counters.main += 1;
            }
            let mut turn = facts.turn;
            if kind == RequestKind::Summary {
                // Summarisers may flatten the history into one message, so the turn is not
                // recoverable from the request: the furthest main turn answered tells it.
                turn = turn.max(counters.max_turn.map_or(0, |max| max + 1));
            }
            (counters.all, counters.main, turn)
        };
        let is_main = kind == RequestKind::Main;
        let fault = script.faults.iter().find(|fault| fault.fires(index, main_index, is_main)).cloned();
        let reply = self.reply(kind, turn, facts);
        let response = match &fault {
            Some(fault) => PlannedResponse::Fault(FaultAction::new(fault, api, script, reply)),
            None => {
                if is_main {
                    let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
                    counters.max_turn = Some(counters.max_turn.map_or(turn, |max| max.max(turn)));
                }
                PlannedResponse::Reply(reply)
            }
        };
        Plan { index, main_index: is_main.then_some(main_index), kind, turn, fault, response }
    }

    /// The reply for `turn` (mockllm's `build_turn`).
    fn reply(&self, kind: RequestKind, turn: usize, facts: &RequestFacts) -> Reply {
        let script = &self.script;
        // Side requests and an exhausted script answer with fixed text; a main turn with its own.
        let (source, usage, fixed_text) = match kind {
            RequestKind::Title => {
                (None, None, Some(script.title.clone().unwrap_or_else(|| "Scripted mock session".to_owned())))
            }
            RequestKind::Summary => {
                let text = format!(
                    "{MARK_PREFIX}{turn}] Summary of the session so far: the user asked for a scripted \
                     task; {turn} assistant turns were completed. Continue with the next step."
                );
                (None, script.summary_usage.as_ref(), Some(text))
            }
            RequestKind::Aux => (None, None, Some("ok".to_owned())),
            RequestKind::Main => match script.turns.get(turn) {
                Some(source) => (Some(source), source.usage.as_ref(), None),
                None => {
                    let text = script
                        .exhausted_text
                        .clone()
                        .unwrap_or_else(|| "[mock] script exhausted; done.".to_owned());
                    (None, None, Some(text))
                }
            },
        };
        let workdir = script.workdir.as_deref();
        let calls: Vec<ReplyCall> = source
            .map(|source| {
                source
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(n, call)| {
                        let (name, input) = translate(call, &facts.tool_names, workdir);
                        ReplyCall { id: format!("call_{turn}_{n}"), name, input }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let text = fixed_text.or_else(|| source.map(|s| s.text.clone())).unwrap_or_default();
        let reasoning = source.map(|s| s.reasoning.clone()).unwrap_or_default();
        let out_chars = text.chars().count()
            + reasoning.chars().count()
            + calls.iter().map(|call| call.arguments().chars().count()).sum::<usize>();
        let given = usage.cloned().unwrap_or_default();
        let usage = ReplyUsage {
            prompt: given.prompt_tokens.unwrap_or_else(|| estimate(facts.body_chars)),
            completion: given.completion_tokens.unwrap_or(if out_chars > 0 {
                estimate(out_chars)
            } else {
                1
            }),
            cached: given.cached_tokens.unwrap_or(0),
            cache_write: given.cache_write_tokens.unwrap_or(0),
            reasoning: given.reasoning_tokens.unwrap_or(0),
        };
        Reply {
            turn,
            finish: if calls.is_empty() { FinishReason::Stop } else { FinishReason::ToolCalls },
            reasoning,
            text,
            calls,
            usage,
            delay: source.map_or(Duration::ZERO, |s| s.delay),
            chunk_delay: source.and_then(|s| s.chunk_delay).unwrap_or(script.chunk_delay),
            chunk_chars: script.chunk_chars,
            recorded: source.and_then(|s| s.recorded.clone()),
        }
    }
}

/// mockllm's token estimate: a quarter of the characters, at least 1.
fn estimate(chars: usize) -> u64 {
    u64::try_from(chars / 4).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_mockllm() {
        assert_eq!(classify("You are a title generator.", "", false, false), RequestKind::Title);
        assert_eq!(classify("", "Generate a title for this", true, false), RequestKind::Title);
        assert_eq!(classify("Summarize the conversation", "", false, false), RequestKind::Summary);
        assert_eq!(classify("Summarize", "", true, false), RequestKind::Main);
        assert_eq!(
            classify("", "Provide a detailed prompt for continuing our conversation", true, false),
            RequestKind::Summary
        );
        assert_eq!(classify("", "hello", false, true), RequestKind::Aux);
        assert_eq!(classify("", "hello", false, false), RequestKind::Main);
    }

    #[test]
    fn markers_are_read_strictly() {
        assert_eq!(summary_marker("x [mock-summary turn=12] y"), Some(12));
        assert_eq!(summary_marker("[mock-summary turn=] y"), None);
        assert_eq!(summary_marker("[mock-summary turn=3"), None);
        assert_eq!(summary_marker("[mock-summary turn=99999999999999999999999]"), None);
    }
}
