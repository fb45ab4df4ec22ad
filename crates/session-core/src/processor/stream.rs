//! Stream events (SPEC 1.2): text and reasoning grow their parts, tool events go to the
//! tool-call handlers, step events to the step handlers.

use super::protocol::{Effect, ProcessorError, SnapshotPurpose};
use super::state::{Phase, Processor, StepFinish};
use crate::event::LlmEvent;
use crate::message::{MessageError, PartKind, PartTime, ReasoningPart, TextPart};

/// The error text when a summary message tries to call a tool.
pub fn summary_tool_call_error(name: &str) -> String {
    format!("Tool call not allowed while generating summary: {name}")
}

/// The capacity a text or reasoning part's text starts with at its first delta: deltas are a
/// few bytes each, and growing from empty doubles through 8, 16, 32 and 64 bytes first, each
/// step a reallocation and a copy.
const TEXT_START_CAPACITY: usize = 128;

/// Appends a delta to a part's text, starting its buffer at [`TEXT_START_CAPACITY`].
fn append(text: &mut String, delta: &str) {
    if text.capacity() == 0 {
        text.reserve(TEXT_START_CAPACITY.max(delta.len()));
    }
    text.push_str(delta);
}

impl Processor {
    // Always inlined into `handle`, its only caller: the event is then matched where the input
    // holds it instead of being copied (200 bytes) into this call's argument first.
    #[inline(always)]
    pub(super) fn handle_event(&mut self, event: LlmEvent, now: u64) -> Result<(), ProcessorError> {
        match self.phase {
            Phase::Streaming => {}
            // After the overflow cut the rest of the stream is not processed.
            Phase::Cut => return Ok(()),
            // During the cleanup grace only the results of running tools count.
            Phase::Grace => {
                return match event {
                    LlmEvent::ToolResult { id, name, result, .. } => {
                        self.complete_tool_call(&id, name, result, now);
                        self.maybe_end_grace(now);
                        Ok(())
                    }
                    LlmEvent::ToolError { id, message, error, .. } => {
                        self.fail_tool_call(&id, message, error.as_ref(), now);
                        self.maybe_end_grace(now);
                        Ok(())
                    }
                    _ => Ok(()),
                };
            }
            // Results of tools the driver runs may arrive while a permission ask is open or the
            // step waits for its tools.
            Phase::AwaitPermission { .. } | Phase::AwaitStepTools(_) => {
                let waiting = self.waiting();
                match event {
                    LlmEvent::ToolResult { id, name, result, .. } => {
                        self.complete_tool_call(&id, name, result, now);
                    }
                    LlmEvent::ToolError { id, message, error, .. } => {
                        self.fail_tool_call(&id, message, error.as_ref(), now);
                    }
                    _ => return Err(ProcessorError::Unexpected { waiting, input: "event" }),
                }
                self.resume_held_step();
                return Ok(());
            }
            _ => return Err(ProcessorError::Unexpected { waiting: self.waiting(), input: "event" }),
        }
        match event {
            LlmEvent::ReasoningStart { id, provider_metadata } => {
                if self.reasoning_index(&id).is_none() {
                    let index = self.push_part(
                        PartKind::Reasoning(ReasoningPart {
                            text: String::new(),
                            metadata: provider_metadata,
                            time: PartTime { start: now, end: None },
                        }),
                        now,
                    );
                    // The newest part: the list stays in part order.
                    self.reasoning.push((id, index));
                    self.upsert(index);
                }
            }
            LlmEvent::ReasoningDelta { id, text, provider_metadata } => {
                // An orphan delta (no start) is dropped silently, as OpenCode does.
                if let Some(index) = self.reasoning_index(&id) {
                    if let PartKind::Reasoning(part) = &mut self.part_mut(index).kind {
                        append(&mut part.text, &text);
                        if let Some(metadata) = provider_metadata {
                            part.metadata = Some(metadata);
                        }
                    }
                    self.delta(index, text);
                }
            }
            LlmEvent::ReasoningEnd { id, provider_metadata } => {
                if let Some(at) = self.reasoning.iter().position(|(open, _)| *open == id) {
                    let (_, index) = self.reasoning.remove(at);
                    if let PartKind::Reasoning(part) = &mut self.part_mut(index).kind {
                        if let Some(metadata) = provider_metadata {
                            part.metadata = Some(metadata);
                        }
                        part.time.end = Some(now);
                    }
                    self.upsert(index);
                }
            }
            LlmEvent::TextStart { provider_metadata, .. } => {
                let index = self.push_part(
                    PartKind::Text(TextPart {
                        text: String::new(),
                        time: Some(PartTime { start: now, end: None }),
                        metadata: provider_metadata,
                        ..TextPart::default()
                    }),
                    now,
                );
                self.current_text = Some(index);
                self.upsert(index);
            }
            LlmEvent::TextDelta { text, provider_metadata, .. } => {
                if let Some(index) = self.current_text {
                    if let PartKind::Text(part) = &mut self.part_mut(index).kind {
                        append(&mut part.text, &text);
                        if let Some(metadata) = provider_metadata {
                            part.metadata = Some(metadata);
                        }
                    }
                    self.delta(index, text);
                }
            }
            LlmEvent::TextEnd { provider_metadata, .. } => {
                if let Some(index) = self.current_text.take() {
                    if let PartKind::Text(part) = &mut self.part_mut(index).kind {
                        let start = part.time.map_or(now, |t| t.start);
                        part.time = Some(PartTime { start, end: Some(now) });
                        if let Some(metadata) = provider_metadata {
                            part.metadata = Some(metadata);
                        }
                    }
                    self.upsert(index);
                }
            }
            LlmEvent::ToolInputStart { id, name, provider_executed } => {
                self.refuse_in_summary(&name)?;
                self.start_tool_input(id, name, provider_executed, now);
            }
            LlmEvent::ToolInputDelta { .. } => {}
            LlmEvent::ToolInputEnd { id, name } => {
                self.ensure_tool_call(&id, &name, false, now);
            }
            LlmEvent::ToolCall { id, name, input, provider_executed, provider_metadata } => {
                self.refuse_in_summary(&name)?;
                self.tool_call(id, name, input, provider_executed, provider_metadata, now);
            }
            LlmEvent::ToolResult { id, name, result, .. } => self.complete_tool_call(&id, name, result, now),
            LlmEvent::ToolError { id, message, error, .. } => {
                self.fail_tool_call(&id, message, error.as_ref(), now);
            }
            LlmEvent::ProviderError { message, .. } => {
                return Err(ProcessorError::Stream(MessageError::UnknownError { message }));
            }
            LlmEvent::StepStart { .. } => {
                if self.snapshot.is_none() {
                    self.phase = Phase::AwaitStepStartSnapshot;
                    self.effects.push_back(Effect::TakeSnapshot(SnapshotPurpose::StepStart));
                } else {
                    let snapshot = self.snapshot.clone();
                    self.push_step_start(snapshot, now);
                }
            }
            LlmEvent::StepFinish { reason, usage, provider_metadata, .. } => {
                self.step_finished(StepFinish { reason, usage, metadata: provider_metadata });
            }
            LlmEvent::Finish { .. } => {}
        }
        Ok(())
    }

    pub(super) fn refuse_in_summary(&self, name: &str) -> Result<(), ProcessorError> {
        if self.message.is_summary() {
            Err(ProcessorError::Stream(MessageError::UnknownError { message: summary_tool_call_error(name) }))
        } else {
            Ok(())
        }
    }
}
