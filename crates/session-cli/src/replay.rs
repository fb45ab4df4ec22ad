//! `session replay`: a recorded stream through an adapter and the processor.
//!
//! Tools are not executed: cleanup runs with no grace, so a call the recording left open ends
//! as SPEC 8 says ("Tool execution aborted", marked interrupted), its input kept.

use std::fmt::Write as _;

use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::{Value, json};
use session_core::{
    AssistantMessage, AssistantTime, Entropy, IdGenerator, Message, MessageError, MessageId, MessagePath,
    ModelCost, Part, PartKind, SessionId, ToolState, overflow::ModelLimit, processor::Effect,
    processor::Input, processor::Processor, processor::ProcessorConfig, processor::ProcessorError,
};
use session_llm::{Api, replay as decode_replay};
use session_runtime::BusEvent;

/// The model a replay prices its steps with.
#[derive(Debug, Clone, Default)]
pub struct ReplayModel {
    /// Provider id, such as `anthropic`.
    pub provider_id: String,
    /// Model id, such as `claude-sonnet-4-5`.
    pub model_id: String,
    /// Prices (zero when unknown).
    pub cost: ModelCost,
    /// Limits (context 0 turns the overflow check off).
    pub limit: ModelLimit,
}

/// Why a replay ended early.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayError {
    /// The error's kind, such as `Truncated` or `APIError`.
    pub name: String,
    /// What happened, such as "stream ended before `[DONE]`".
    pub message: String,
}

/// The assistant message and parts a replay produced.
#[derive(Debug, Clone)]
pub struct ReplayOutput {
    /// The assistant message (cost, tokens, finish, error).
    pub message: AssistantMessage,
    /// Its parts in id order.
    pub parts: Vec<Part>,
    /// The stream or provider error, if one ended the stream.
    pub error: Option<ReplayError>,
}

impl ReplayOutput {
    /// True when a stream or provider error ended the replay (a `length` finish is not one).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// The one JSON document of `{"message", "parts", "error"}` (`sessions export`'s shape).
    pub fn to_json(&self) -> Value {
        json!({ "message": self.message, "parts": self.parts, "error": self.error })
    }

    /// What `--format json` prints, as `run` and `demo` do: one bus event per line, each part
    /// (`message.part.updated`), the assistant message (`message.updated`), and the error
    /// that ended the stream, if one did (`session.error`).
    pub fn to_events(&self) -> Vec<BusEvent> {
        let mut events: Vec<BusEvent> =
            self.parts.iter().map(|part| BusEvent::PartUpdated { part: Box::new(part.clone()) }).collect();
        events.push(BusEvent::MessageUpdated { info: Box::new(Message::Assistant(self.message.clone())) });
        if let Some(error) = &self.error {
            let error = self.message.error.clone().unwrap_or_else(|| MessageError::UnknownError {
                message: format!("{}: {}", error.name, error.message),
            });
            events.push(BusEvent::SessionError { session_id: self.message.session_id.clone(), error });
        }
        events
    }

    /// A readable rendering; tool calls are marked as not executed.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match &part.kind {
                PartKind::Text(text) => {
                    let _ = writeln!(out, "{}", text.text);
                }
                PartKind::Reasoning(reasoning) => {
                    let _ = writeln!(out, "[reasoning] {}", reasoning.text);
                }
                PartKind::Tool(tool) => {
                    let input = serde_json::to_string(tool.state.input()).unwrap_or_default();
                    let state = match &tool.state {
                        ToolState::Completed { output, .. } => format!("completed by the provider: {output}"),
                        ToolState::Error { error, .. } => format!("not executed: {error}"),
                        other => format!("not executed ({})", other.status().as_str()),
                    };
                    let _ = writeln!(out, "[tool {}] {} {input} - {state}", tool.call_id, tool.tool);
                }
                PartKind::StepFinish(step) => {
                    let tokens = &step.tokens;
                    let _ = writeln!(
                        out,
                        "[step finished: {}] tokens in {} out {} reasoning {} cache read {} write {} - ${}",
                        step.reason.as_str(),
                        tokens.input,
                        tokens.output,
                        tokens.reasoning,
                        tokens.cache.read,
                        tokens.cache.write,
                        step.cost.normalize(),
                    );
                }
                _ => {}
            }
        }
        let _ = writeln!(out, "cost: ${}", self.message.cost.normalize());
        out
    }
}

/// Replays a recorded SSE `body` of `api` through the adapter and the processor.
///
/// `clock` gives epoch milliseconds and `entropy` the random part of ids, so tests can make
/// the output deterministic.
pub fn replay(
    api: Api,
    body: &[u8],
    model: Option<&ReplayModel>,
    clock: &mut dyn FnMut() -> u64,
    mut entropy: Box<dyn Entropy + Send>,
) -> ReplayOutput {
    let decoded = decode_replay(api, body);
    let mut ids = IdGenerator::new();
    let now = clock();
    let session_id: SessionId = ids.next(now, entropy.as_mut());
    let parent_id: MessageId = ids.next(now, entropy.as_mut());
    let message_id: MessageId = ids.next(now, entropy.as_mut());
    let (provider_id, model_id) = match model {
        Some(model) => (model.provider_id.clone(), model.model_id.clone()),
        None => ("replay".to_owned(), api.as_str().to_owned()),
    };
    let message = AssistantMessage {
        id: message_id,
        session_id,
        time: AssistantTime { created: now, completed: None },
        error: None,
        parent_id,
        model_id,
        provider_id,
        mode: "build".to_owned(),
        agent: "build".to_owned(),
        path: MessagePath::default(),
        summary: None,
        cost: Decimal::ZERO,
        tokens: Default::default(),
        structured: None,
        variant: None,
        finish: None,
    };
    let config = ProcessorConfig {
        cost: model.map(|m| m.cost.clone()).unwrap_or_default(),
        limit: model.map(|m| m.limit).unwrap_or_default(),
        ..ProcessorConfig::default()
    };
    let mut processor = Processor::new(message, config, entropy);
    let mut error = None;
    answer(&mut processor, clock);
    for event in decoded.events {
        if !processor.wants_events() {
            break;
        }
        match processor.handle(Input::Event(event), clock()) {
            Ok(()) => {}
            Err(ProcessorError::Stream(failure)) => {
                error = Some(ReplayError {
                    name: failure.name().to_owned(),
                    message: failure.message().to_owned(),
                });
                let _ = processor.handle(Input::Halt(failure), clock());
                break;
            }
            Err(refused) => tracing::debug!(%refused, "processor refused an input during replay"),
        }
        answer(&mut processor, clock);
    }
    if error.is_none()
        && let Some(stream_error) = &decoded.error
    {
        error = Some(ReplayError { name: stream_error.name().to_owned(), message: stream_error.to_string() });
        let _ = processor.handle(Input::Halt(stream_error.to_message_error()), clock());
    } else if error.is_none() {
        let _ = processor.handle(Input::EndOfStream, clock());
    }
    answer(&mut processor, clock);
    ReplayOutput {
        message: processor.message().clone(),
        parts: processor.parts().iter().map(|part| Part::clone(part)).collect(),
        error,
    }
}

/// Answers the processor's requests as a replay does: no snapshots, no tool execution,
/// doom-loop asks allowed (nothing runs anyway), no cleanup grace.
fn answer(processor: &mut Processor, clock: &mut dyn FnMut() -> u64) {
    while let Some(effect) = processor.poll_effect() {
        let reply = match effect {
            Effect::TakeSnapshot(_) => Input::Snapshot(None),
            Effect::ComputePatch { .. } => Input::Patch(Vec::new()),
            Effect::AskPermission { .. } => Input::PermissionReply(Ok(())),
            Effect::AwaitToolCalls { .. } => Input::GraceElapsed,
            _ => continue,
        };
        if let Err(ProcessorError::Stream(failure)) = processor.handle(reply, clock()) {
            let _ = processor.handle(Input::Halt(failure), clock());
        }
    }
}
/// The catalog entry `--model` names; an unknown model is priced at 0 with a warning.
pub fn replay_model(reference: &str) -> anyhow::Result<Option<ReplayModel>> {
    let Some((provider, model)) = session_llm::split_model_ref(reference) else {
        anyhow::bail!(
            "--model must be provider/model, for example anthropic/claude-sonnet-4-5; got {reference:?}"
        );
    };
    let catalog = session_llm::Catalog::embedded()?;
    match catalog.resolve(provider, model) {
        Some(found) => Ok(Some(ReplayModel {
            provider_id: provider.to_owned(),
            model_id: found.id,
            cost: found.cost,
            limit: found.limit,
        })),
        None => {
            tracing::warn!("{reference} is not in the model catalog; the replay's cost is 0");
            Ok(Some(ReplayModel {
                provider_id: provider.to_owned(),
                model_id: model.to_owned(),
                ..Default::default()
            }))
        }
    }
}
