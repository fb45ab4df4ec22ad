//! The stream processor: a sans-IO state machine (SPEC 1.2, 3, 4 and 8).
//!
//! The processor turns [`LlmEvent`]s into stored parts of one assistant message. It performs
//! no IO: every outside action (persist a part, publish a delta, take a snapshot, compute a
//! patch, ask a permission, run a tool) is an [`Effect`] that the driver drains with
//! [`Processor::poll_effect`] and carries out. Effects that need an answer (a snapshot hash,
//! a patch's files, a permission reply) put the processor in a waiting state until the driver
//! feeds the answer back as an [`Input`]. Time comes in with every input.
//!
//! The driver owns what needs a clock or a runtime: retries (it calls
//! [`Processor::begin_attempt`] before re-running a stream), the 250 ms cleanup grace, and
//! cancellation.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::config::CompactionConfig;
use crate::doom_loop;
use crate::event::{
    FinishReason, LlmEvent, ProviderMetadata, ToolFailure, ToolResultKind, ToolResultValue, Usage,
};
use crate::id::{Entropy, IdGenerator, MessageId, PartId};
use crate::message::{
    AssistantMessage, FilePart, JsonObject, MessageError, Part, PartKind, PartTime, PatchPart, ReasoningPart,
    StepFinishPart, StepStartPart, TextPart, ToolOutput, ToolPart, ToolState, normalize_tool_input,
    with_provider_executed,
};
use crate::overflow::{self, ModelLimit, OUTPUT_TOKEN_MAX};
use crate::permission::PermissionRequest;
use crate::usage::{self, ModelCost};

/// What the processor needs to know about the model and the configuration.
#[derive(Debug, Clone, Default)]
pub struct ProcessorConfig {
    /// Prices of the model, for step costs.
    pub cost: ModelCost,
    /// Limits of the model, for the overflow check.
    pub limit: ModelLimit,
    /// Compaction settings (`auto` decides between compacting and halting on overflow).
    pub compaction: CompactionConfig,
    /// `experimental.continue_loop_on_deny`: a rejected tool does not stop the loop.
    pub continue_loop_on_deny: bool,
}

/// The result of one `process` call (SPEC 8 step 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Run another step.
    Continue,
    /// Stop the loop (error, block or finished).
    Stop,
    /// Compact the history, then continue.
    Compact,
}

/// Why a snapshot is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnapshotPurpose {
    /// Before the stream starts.
    Start,
    /// At a step start, when no snapshot is held.
    StepStart,
    /// At a step finish (the step's end hash).
    StepFinish,
}

/// An outside action for the driver to carry out.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Persist this part and publish `message.part.updated`.
    // Boxed: most effects are small deltas, and the queue moves every effect by value.
    UpsertPart(Box<Part>),
    /// Publish `message.part.delta` (not persisted per delta).
    PartDelta {
        /// The message of the part.
        message_id: MessageId,
        /// The part grown.
        part_id: PartId,
        /// The field grown (always "text").
        field: &'static str,
        /// The appended text.
        delta: String,
    },
    /// Persist the assistant message and publish `message.updated`.
    UpsertMessage(Box<AssistantMessage>),
    /// Track a working-tree snapshot; answer with [`Input::Snapshot`].
    TakeSnapshot(SnapshotPurpose),
    /// List files changed since `hash`; answer with [`Input::Patch`].
    ComputePatch {
        /// The snapshot to diff against.
        hash: String,
    },
    /// Ask the `doom_loop` permission; answer with [`Input::PermissionReply`].
    AskPermission {
        /// The call that triggered the ask.
        call_id: String,
        /// The request (permission, patterns, always, metadata).
        request: PermissionRequest,
    },
    /// Run a tool the model called; feed its result back as a tool-result or tool-error event.
    ExecuteTool {
        /// The tool part.
        part_id: PartId,
        /// The provider's call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Normalized input.
        input: JsonObject,
    },
    /// A step settled: the driver may compute summary diffs (errors ignored).
    StepSettled,
    /// Cleanup waits for these calls; feed their results, then [`Input::GraceElapsed`].
    AwaitToolCalls {
        /// Calls still unsettled.
        call_ids: Vec<String>,
    },
    /// Publish `session.error`.
    SessionError(MessageError),
    /// Set the session status to idle.
    SetIdle,
    /// Processing ended with this outcome; the processor accepts no more input.
    Done(Outcome),
}

/// An input from the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A stream event (also tool results of tools the driver ran).
    Event(LlmEvent),
    /// Answer to [`Effect::TakeSnapshot`]: the tree hash, or none when snapshots are off.
    Snapshot(Option<String>),
    /// Answer to [`Effect::ComputePatch`]: changed files (empty on failure).
    Patch(Vec<String>),
    /// Answer to [`Effect::AskPermission`]: allowed, or the denial's error text.
    PermissionReply(Result<(), String>),
    /// A running tool reported progress (`ctx.metadata`).
    ToolProgress {
        /// The call.
        call_id: String,
        /// New title.
        title: Option<String>,
        /// New metadata.
        metadata: Option<JsonObject>,
    },
    /// The stream ended; cleanup starts.
    EndOfStream,
    /// The user cancelled; the message gets `MessageAbortedError` and cleanup starts.
    Interrupt,
    /// The retry policy gave up on this error; halt, then clean up.
    Halt(MessageError),
    /// The cleanup grace ran out; unsettled calls become aborted errors.
    GraceElapsed,
}

/// What the processor is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// Nothing: stream events are accepted.
    Nothing,
    /// A snapshot hash.
    Snapshot,
    /// A patch's file list.
    Patch,
    /// A permission reply.
    Permission,
    /// Tool results during the cleanup grace.
    ToolCalls,
    /// Nothing more: processing is done.
    Finished,
}

/// An input the processor refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProcessorError {
    /// The stream failed; the driver passes the error through the retry policy.
    #[error("stream failed: {}", .0.message())]
    Stream(MessageError),
    /// The input does not fit what the processor waits for; nothing changed.
    #[error("unexpected input while waiting for {waiting:?}: {input}")]
    Unexpected {
        /// What the processor waits for.
        waiting: Waiting,
        /// A short name of the refused input.
        input: &'static str,
    },
}

#[derive(Debug, Clone, Copy)]
struct TrackedCall {
    /// Index of the call's part in `parts` (parts are never removed or reordered).
    index: usize,
}

#[derive(Debug)]
enum Phase {
    Streaming,
    /// The overflow cut: later stream events are ignored.
    Cut,
    AwaitStartSnapshot,
    AwaitStepStartSnapshot,
    AwaitFinishSnapshot {
        reason: FinishReason,
        usage: Option<Usage>,
        metadata: Option<ProviderMetadata>,
    },
    AwaitStepPatch,
    AwaitPermission {
        call_id: String,
    },
    CleanupPatch,
    Grace,
    Done,
}

/// Label of an input, for errors.
fn input_name(input: &Input) -> &'static str {
    match input {
        Input::Event(_) => "event",
        Input::Snapshot(_) => "snapshot",
        Input::Patch(_) => "patch",
        Input::PermissionReply(_) => "permission reply",
        Input::ToolProgress { .. } => "tool progress",
        Input::EndOfStream => "end of stream",
        Input::Interrupt => "interrupt",
        Input::Halt(_) => "halt",
        Input::GraceElapsed => "grace elapsed",
    }
}

/// The error text when a summary message tries to call a tool.
pub fn summary_tool_call_error(name: &str) -> String {
    format!("Tool call not allowed while generating summary: {name}")
}

/// Turns the events of one assistant message into parts and effects.
pub struct Processor {
    config: ProcessorConfig,
    message: AssistantMessage,
    parts: Vec<Part>,
    toolcalls: HashMap<String, TrackedCall>,
    current_text: Option<usize>,
    reasoning: HashMap<String, usize>,
    snapshot: Option<String>,
    blocked: bool,
    needs_compaction: bool,
    should_break: bool,
    aborted: bool,
    phase: Phase,
    effects: VecDeque<Effect>,
    ids: IdGenerator,
    entropy: Box<dyn Entropy + Send>,
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("message", &self.message.id)
            .field("parts", &self.parts.len())
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl Processor {
    /// A processor for `message` (already persisted by the caller, cost 0, zero tokens).
    ///
    /// It starts by asking for the snapshot taken before the stream starts.
    pub fn new(message: AssistantMessage, config: ProcessorConfig, entropy: Box<dyn Entropy + Send>) -> Self {
        let should_break = !config.continue_loop_on_deny;
        let mut processor = Self {
            config,
            message,
            parts: Vec::new(),
            toolcalls: HashMap::new(),
            current_text: None,
            reasoning: HashMap::new(),
            snapshot: None,
            blocked: false,
            needs_compaction: false,
            should_break,
            aborted: false,
            phase: Phase::AwaitStartSnapshot,
            effects: VecDeque::new(),
            ids: IdGenerator::new(),
            entropy,
        };
        processor.effects.push_back(Effect::TakeSnapshot(SnapshotPurpose::Start));
        processor
    }

    /// The assistant message as it stands.
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    /// The message's parts in id order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// True when the user interrupted this message.
    pub fn aborted(&self) -> bool {
        self.aborted
    }

    /// The next effect to carry out, in order.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// What the processor waits for before it takes stream events again.
    pub fn waiting(&self) -> Waiting {
        match self.phase {
            Phase::Streaming | Phase::Cut => Waiting::Nothing,
            Phase::AwaitStartSnapshot | Phase::AwaitStepStartSnapshot | Phase::AwaitFinishSnapshot { .. } => {
                Waiting::Snapshot
            }
            Phase::AwaitStepPatch | Phase::CleanupPatch => Waiting::Patch,
            Phase::AwaitPermission { .. } => Waiting::Permission,
            Phase::Grace => Waiting::ToolCalls,
            Phase::Done => Waiting::Finished,
        }
    }

    /// False once the overflow cut happened: the driver stops reading the stream.
    pub fn wants_events(&self) -> bool {
        matches!(self.phase, Phase::Streaming)
    }

    /// Call ids of tool calls still pending or running.
    pub fn open_calls(&self) -> Vec<String> {
        let mut calls: Vec<(usize, &String)> = self.toolcalls.iter().map(|(id, c)| (c.index, id)).collect();
        calls.sort();
        calls.into_iter().map(|(_, id)| id.clone()).collect()
    }

    /// A new attempt of the stream after a retry: forgets the open text and reasoning.
    pub fn begin_attempt(&mut self) {
        self.current_text = None;
        self.reasoning.clear();
    }

    /// Feeds one input at time `now` (epoch ms).
    pub fn handle(&mut self, input: Input, now: u64) -> Result<(), ProcessorError> {
        match input {
            Input::Event(event) => self.handle_event(event, now),
            Input::Snapshot(hash) => self.snapshot_taken(hash, now),
            Input::Patch(files) => self.patch_computed(files, now),
            Input::PermissionReply(reply) => self.permission_replied(reply),
            Input::ToolProgress { call_id, title, metadata } => {
                self.tool_progress(&call_id, title, metadata, now);
                Ok(())
            }
            Input::EndOfStream => self.when_free(input_name(&Input::EndOfStream), |p| p.cleanup(now)),
            Input::Interrupt => self.interrupt(now),
            Input::Halt(error) => self.when_free("halt", |p| {
                p.halt(error);
                p.cleanup(now);
            }),
            Input::GraceElapsed => match self.phase {
                Phase::Grace => {
                    self.finish_cleanup(now);
                    Ok(())
                }
                _ => Err(self.unexpected(&Input::GraceElapsed)),
            },
        }
    }

    fn unexpected(&self, input: &Input) -> ProcessorError {
        ProcessorError::Unexpected { waiting: self.waiting(), input: input_name(input) }
    }

    fn when_free(
        &mut self,
        name: &'static str,
        action: impl FnOnce(&mut Self),
    ) -> Result<(), ProcessorError> {
        match self.phase {
            Phase::Streaming | Phase::Cut | Phase::AwaitPermission { .. } => {
                action(self);
                Ok(())
            }
            _ => Err(ProcessorError::Unexpected { waiting: self.waiting(), input: name }),
        }
    }

    fn interrupt(&mut self, now: u64) -> Result<(), ProcessorError> {
        match self.phase {
            Phase::Done => Err(self.unexpected(&Input::Interrupt)),
            Phase::Grace => {
                // Already cleaning up: an interrupt only shortens the grace.
                self.aborted = true;
                self.finish_cleanup(now);
                Ok(())
            }
            _ => {
                self.aborted = true;
                if self.message.error.is_none() {
                    self.halt(MessageError::aborted());
                }
                self.cleanup(now);
                Ok(())
            }
        }
    }

    fn handle_event(&mut self, event: LlmEvent, now: u64) -> Result<(), ProcessorError> {
        match self.phase {
            Phase::Streaming => {}
            // After the overflow cut the rest of the stream is not processed.
            Phase::Cut => return Ok(()),
            // During the cleanup grace only the results of running tools count.
            Phase::Grace => {
                return match event {
                    LlmEvent::ToolResult { id, name, result, .. } => {
                        self.complete_tool_call(&id, &name, result, now);
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
            // Results of tools the driver runs may arrive while a permission ask is open.
            Phase::AwaitPermission { .. } => {
                return match event {
                    LlmEvent::ToolResult { id, name, result, .. } => {
                        self.complete_tool_call(&id, &name, result, now);
                        Ok(())
                    }
                    LlmEvent::ToolError { id, message, error, .. } => {
                        self.fail_tool_call(&id, message, error.as_ref(), now);
                        Ok(())
                    }
                    _ => Err(ProcessorError::Unexpected { waiting: Waiting::Permission, input: "event" }),
                };
            }
            _ => return Err(ProcessorError::Unexpected { waiting: self.waiting(), input: "event" }),
        }
        match event {
            LlmEvent::ReasoningStart { id, provider_metadata } => {
                if !self.reasoning.contains_key(&id) {
                    let index = self.push_part(
                        PartKind::Reasoning(ReasoningPart {
                            text: String::new(),
                            metadata: provider_metadata,
                            time: PartTime { start: now, end: None },
                        }),
                        now,
                    );
                    self.reasoning.insert(id, index);
                    self.upsert(index);
                }
            }
            LlmEvent::ReasoningDelta { id, text, provider_metadata } => {
                // An orphan delta (no start) is dropped silently, as OpenCode does.
                if let Some(&index) = self.reasoning.get(&id) {
                    if let PartKind::Reasoning(part) = &mut self.parts[index].kind {
                        part.text.push_str(&text);
                        if provider_metadata.is_some() {
                            part.metadata = provider_metadata;
                        }
                    }
                    self.delta(index, text);
                }
            }
            LlmEvent::ReasoningEnd { id, provider_metadata } => {
                if let Some(index) = self.reasoning.remove(&id) {
                    if let PartKind::Reasoning(part) = &mut self.parts[index].kind {
                        if provider_metadata.is_some() {
                            part.metadata = provider_metadata;
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
                    if let PartKind::Text(part) = &mut self.parts[index].kind {
                        part.text.push_str(&text);
                        if provider_metadata.is_some() {
                            part.metadata = provider_metadata;
                        }
                    }
                    self.delta(index, text);
                }
            }
            LlmEvent::TextEnd { provider_metadata, .. } => {
                if let Some(index) = self.current_text.take() {
                    if let PartKind::Text(part) = &mut self.parts[index].kind {
                        let start = part.time.map_or(now, |t| t.start);
                        part.time = Some(PartTime { start, end: Some(now) });
                        if provider_metadata.is_some() {
                            part.metadata = provider_metadata;
                        }
                    }
                    self.upsert(index);
                }
            }
            LlmEvent::ToolInputStart { id, name, provider_executed } => {
                self.refuse_in_summary(&name)?;
                self.ensure_tool_call(&id, &name, provider_executed, now);
            }
            LlmEvent::ToolInputDelta { .. } => {}
            LlmEvent::ToolInputEnd { id, name } => {
                self.ensure_tool_call(&id, &name, false, now);
            }
            LlmEvent::ToolCall { id, name, input, provider_executed, provider_metadata } => {
                self.refuse_in_summary(&name)?;
                self.tool_call(id, name, input, provider_executed, provider_metadata, now);
            }
            LlmEvent::ToolResult { id, name, result, .. } => self.complete_tool_call(&id, &name, result, now),
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
                self.phase = Phase::AwaitFinishSnapshot { reason, usage, metadata: provider_metadata };
                self.effects.push_back(Effect::TakeSnapshot(SnapshotPurpose::StepFinish));
            }
            LlmEvent::Finish { .. } => {}
        }
        Ok(())
    }

    fn refuse_in_summary(&self, name: &str) -> Result<(), ProcessorError> {
        if self.message.is_summary() {
            Err(ProcessorError::Stream(MessageError::UnknownError { message: summary_tool_call_error(name) }))
        } else {
            Ok(())
        }
    }

    fn tool_call(
        &mut self,
        id: String,
        name: String,
        input: Value,
        provider_executed: bool,
        provider_metadata: Option<ProviderMetadata>,
        now: u64,
    ) {
        let index = self.ensure_tool_call(&id, &name, provider_executed, now);
        let input = normalize_tool_input(input);
        let PartKind::Tool(tool) = &mut self.parts[index].kind else { return };
        let executed_by_provider = provider_executed || tool.provider_executed();
        tool.tool.clone_from(&name);
        if tool.state.start(input.clone(), now).is_err() {
            // A call for a settled part: the table allows no transition, so nothing changes.
            return;
        }
        tool.metadata = if executed_by_provider {
            Some(with_provider_executed(provider_metadata))
        } else {
            provider_metadata
        };
        let part_id = self.parts[index].id.clone();
        self.upsert(index);
        let message_parts = &self.parts;
        if let Some(request) = doom_loop::check(message_parts, &name, &input) {
            self.phase = Phase::AwaitPermission { call_id: id.clone() };
            self.effects.push_back(Effect::AskPermission { call_id: id, request });
            return;
        }
        if !executed_by_provider {
            self.effects.push_back(Effect::ExecuteTool { part_id, call_id: id, tool: name, input });
        }
    }

    fn permission_replied(&mut self, reply: Result<(), String>) -> Result<(), ProcessorError> {
        let Phase::AwaitPermission { call_id } = &self.phase else {
            return Err(self.unexpected(&Input::PermissionReply(reply)));
        };
        let call_id = call_id.clone();
        self.phase = Phase::Streaming;
        match reply {
            Ok(()) => {
                if let Some(index) = self.tracked_index(&call_id)
                    && let PartKind::Tool(tool) = &self.parts[index].kind
                    && !tool.provider_executed()
                    && let ToolState::Running { input, .. } = &tool.state
                {
                    self.effects.push_back(Effect::ExecuteTool {
                        part_id: self.parts[index].id.clone(),
                        call_id,
                        tool: tool.tool.clone(),
                        input: input.clone(),
                    });
                }
                Ok(())
            }
            Err(message) => Err(ProcessorError::Stream(MessageError::UnknownError { message })),
        }
    }

    fn tool_progress(
        &mut self,
        call_id: &str,
        title: Option<String>,
        metadata: Option<JsonObject>,
        now: u64,
    ) {
        let Some(index) = self.tracked_index(call_id) else { return };
        if let PartKind::Tool(tool) = &mut self.parts[index].kind
            && tool.state.update_progress(title, metadata, now).is_ok()
        {
            self.upsert(index);
        }
    }

    fn snapshot_taken(&mut self, hash: Option<String>, now: u64) -> Result<(), ProcessorError> {
        match std::mem::replace(&mut self.phase, Phase::Streaming) {
            Phase::AwaitStartSnapshot => {
                self.snapshot = hash;
            }
            Phase::AwaitStepStartSnapshot => {
                self.snapshot.clone_from(&hash);
                self.push_step_start(hash, now);
            }
            Phase::AwaitFinishSnapshot { reason, usage, metadata } => {
                self.settle_step(reason, usage, metadata, hash, now);
            }
            other => {
                self.phase = other;
                return Err(self.unexpected(&Input::Snapshot(hash)));
            }
        }
        Ok(())
    }

    fn patch_computed(&mut self, files: Vec<String>, now: u64) -> Result<(), ProcessorError> {
        match std::mem::replace(&mut self.phase, Phase::Streaming) {
            Phase::AwaitStepPatch => {
                self.write_patch(files, now);
                self.after_patch();
            }
            Phase::CleanupPatch => {
                self.write_patch(files, now);
                self.cleanup_after_patch(now);
            }
            other => {
                self.phase = other;
                return Err(self.unexpected(&Input::Patch(files)));
            }
        }
        Ok(())
    }

    fn push_step_start(&mut self, snapshot: Option<String>, now: u64) {
        let index = self.push_part(PartKind::StepStart(StepStartPart { snapshot }), now);
        self.upsert(index);
    }

    /// SPEC 4, from step 2 on (step 1, the end snapshot, is `completed`).
    fn settle_step(
        &mut self,
        reason: FinishReason,
        usage: Option<Usage>,
        metadata: Option<ProviderMetadata>,
        completed: Option<String>,
        now: u64,
    ) {
        let mut open: Vec<usize> = self.reasoning.drain().map(|(_, index)| index).collect();
        open.sort_unstable();
        for index in open {
            if let PartKind::Reasoning(part) = &mut self.parts[index].kind {
                part.time.end = Some(now);
            }
            self.upsert(index);
        }
        let step = usage::get_usage(&self.config.cost, &usage.unwrap_or_default(), metadata.as_ref());
        self.message.finish = Some(reason);
        self.message.cost += step.cost;
        self.message.tokens = step.tokens;
        let index = self.push_part(
            PartKind::StepFinish(StepFinishPart {
                reason,
                snapshot: completed,
                cost: step.cost,
                tokens: step.tokens,
            }),
            now,
        );
        self.upsert(index);
        self.effects.push_back(Effect::UpsertMessage(Box::new(self.message.clone())));
        if let Some(hash) = self.snapshot.clone() {
            self.phase = Phase::AwaitStepPatch;
            self.effects.push_back(Effect::ComputePatch { hash });
        } else {
            self.after_patch();
        }
    }

    /// SPEC 4 steps 8 and 9.
    fn after_patch(&mut self) {
        self.snapshot = None;
        self.effects.push_back(Effect::StepSettled);
        let overflow = !self.message.is_summary()
            && overflow::is_overflow(
                &self.config.compaction,
                &self.message.tokens,
                &self.config.limit,
                OUTPUT_TOKEN_MAX,
            );
        if overflow {
            self.needs_compaction = true;
            self.phase = Phase::Cut;
        } else {
            self.phase = Phase::Streaming;
        }
    }

    fn write_patch(&mut self, files: Vec<String>, now: u64) {
        if let Some(hash) = self.snapshot.take()
            && !files.is_empty()
        {
            let index = self.push_part(PartKind::Patch(PatchPart { hash, files }), now);
            self.upsert(index);
        }
    }

    /// SPEC 8 step 4.
    fn halt(&mut self, error: MessageError) {
        let overflow = matches!(error, MessageError::ContextOverflowError { .. });
        if overflow && (self.config.compaction.auto_enabled() || self.message.is_summary()) {
            self.needs_compaction = true;
            self.effects.push_back(Effect::SessionError(error));
            return;
        }
        if overflow {
            self.message.finish = Some(FinishReason::Error);
        }
        self.message.error = Some(error.clone());
        self.effects.push_back(Effect::SessionError(error));
        self.effects.push_back(Effect::SetIdle);
    }

    /// SPEC 8 step 5.
    fn cleanup(&mut self, now: u64) {
        if let Some(hash) = self.snapshot.clone() {
            self.phase = Phase::CleanupPatch;
            self.effects.push_back(Effect::ComputePatch { hash });
        } else {
            self.cleanup_after_patch(now);
        }
    }

    fn cleanup_after_patch(&mut self, now: u64) {
        self.snapshot = None;
        if let Some(index) = self.current_text.take() {
            if let PartKind::Text(part) = &mut self.parts[index].kind {
                let start = part.time.map_or(now, |t| t.start);
                part.time = Some(PartTime { start, end: Some(now) });
            }
            self.upsert(index);
        }
        let mut open: Vec<usize> = self.reasoning.drain().map(|(_, index)| index).collect();
        open.sort_unstable();
        for index in open {
            if let PartKind::Reasoning(part) = &mut self.parts[index].kind {
                part.time.end = Some(now);
            }
            self.upsert(index);
        }
        if self.toolcalls.is_empty() {
            self.finish_cleanup(now);
        } else {
            self.phase = Phase::Grace;
            self.effects.push_back(Effect::AwaitToolCalls { call_ids: self.open_calls() });
        }
    }

    fn maybe_end_grace(&mut self, now: u64) {
        if self.toolcalls.is_empty() {
            self.finish_cleanup(now);
        }
    }

    fn finish_cleanup(&mut self, now: u64) {
        let mut leftovers: Vec<usize> = self.toolcalls.drain().map(|(_, call)| call.index).collect();
        leftovers.sort_unstable();
        for index in leftovers {
            if let PartKind::Tool(tool) = &mut self.parts[index].kind
                && tool.state.abort(now).is_ok()
            {
                self.upsert(index);
            }
        }
        self.message.time.completed = Some(now);
        self.effects.push_back(Effect::UpsertMessage(Box::new(self.message.clone())));
        let outcome = if self.needs_compaction {
            Outcome::Compact
        } else if self.blocked || self.message.error.is_some() {
            Outcome::Stop
        } else {
            Outcome::Continue
        };
        self.phase = Phase::Done;
        self.effects.push_back(Effect::Done(outcome));
    }

    fn tracked_index(&self, call_id: &str) -> Option<usize> {
        self.toolcalls.get(call_id).map(|call| call.index)
    }

    /// Reuses the tracked part of a call or creates a pending one; returns its index.
    fn ensure_tool_call(&mut self, id: &str, name: &str, provider_executed: bool, now: u64) -> usize {
        if let Some(index) = self.tracked_index(id)
            && let PartKind::Tool(tool) = &mut self.parts[index].kind
        {
            if provider_executed && !tool.provider_executed() {
                tool.metadata = Some(with_provider_executed(tool.metadata.take()));
                self.upsert(index);
            }
            return index;
        }
        let index = self.push_part(
            PartKind::Tool(ToolPart {
                call_id: id.to_owned(),
                tool: name.to_owned(),
                state: ToolState::pending(),
                metadata: provider_executed.then(|| with_provider_executed(None)),
            }),
            now,
        );
        self.toolcalls.insert(id.to_owned(), TrackedCall { index });
        self.upsert(index);
        index
    }

    fn complete_tool_call(&mut self, id: &str, name: &str, result: ToolResultValue, now: u64) {
        let Some(index) = self.tracked_index(id) else { return };
        let PartKind::Tool(tool) = &mut self.parts[index].kind else { return };
        if tool.state.complete(derive_output(name, result), now).is_ok() {
            self.toolcalls.remove(id);
            self.upsert(index);
        }
    }

    fn fail_tool_call(&mut self, id: &str, message: String, failure: Option<&ToolFailure>, now: u64) {
        let Some(index) = self.tracked_index(id) else { return };
        let PartKind::Tool(tool) = &mut self.parts[index].kind else { return };
        if tool.state.fail(message, now).is_ok() {
            if matches!(failure, Some(ToolFailure::PermissionRejected | ToolFailure::QuestionRejected)) {
                self.blocked = self.should_break;
            }
            self.toolcalls.remove(id);
            self.upsert(index);
        }
    }

    fn push_part(&mut self, kind: PartKind, now: u64) -> usize {
        let id: PartId = self.ids.next(now, self.entropy.as_mut());
        let index = self.parts.len();
        self.parts.push(Part {
            id,
            session_id: self.message.session_id.clone(),
            message_id: self.message.id.clone(),
            kind,
        });
        index
    }

    fn upsert(&mut self, index: usize) {
        self.effects.push_back(Effect::UpsertPart(Box::new(self.parts[index].clone())));
    }

    fn delta(&mut self, index: usize, delta: String) {
        self.effects.push_back(Effect::PartDelta {
            message_id: self.message.id.clone(),
            part_id: self.parts[index].id.clone(),
            field: "text",
            delta,
        });
    }
}

/// SPEC 1.2 "Tool-result output derivation".
pub fn derive_output(tool_name: &str, result: ToolResultValue) -> ToolOutput {
    if let Value::Object(value) = &result.value
        && let Some(Value::String(output)) = value.get("output")
    {
        let title = match value.get("title") {
            Some(Value::String(title)) => title.clone(),
            _ => tool_name.to_owned(),
        };
        let metadata = match value.get("metadata") {
            Some(Value::Object(metadata)) => metadata.clone(),
            _ => JsonObject::new(),
        };
        let attachments: Vec<FilePart> = match value.get("attachments") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| serde_json::from_value::<FilePart>(item.clone()).ok())
                .collect(),
            _ => Vec::new(),
        };
        return ToolOutput {
            title,
            output: output.clone(),
            metadata,
            attachments: (!attachments.is_empty()).then_some(attachments),
        };
    }
    let metadata = match (&result.kind, &result.value) {
        (ToolResultKind::Json, Value::Object(object)) => object.clone(),
        _ => JsonObject::new(),
    };
    let output = match result.value {
        Value::String(text) => text,
        other => crate::js_json::stringify(&other),
    };
    ToolOutput { title: tool_name.to_owned(), output, metadata, attachments: None }
}
