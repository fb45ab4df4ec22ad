//! The processor's state and the plumbing every handler shares: dispatch of inputs by phase,
//! the effect queue, and adding parts.

use std::collections::VecDeque;
use std::sync::Arc;

use super::protocol::{Effect, Input, ProcessorConfig, ProcessorError, SnapshotPurpose, Waiting, input_name};
use crate::event::{FinishReason, ProviderMetadata, Usage};
use crate::id::{Entropy, IdGenerator, PartId};
use crate::message::{AssistantMessage, Part, PartKind};

/// A step-finish event held until its closing snapshot is taken.
#[derive(Debug)]
pub(super) struct StepFinish {
    pub(super) reason: FinishReason,
    pub(super) usage: Option<Usage>,
    pub(super) metadata: Option<ProviderMetadata>,
}

/// Where the processor is in its run, and what it waits for.
#[derive(Debug)]
pub(super) enum Phase {
    Streaming,
    /// The overflow cut: later stream events are ignored.
    Cut,
    AwaitStartSnapshot,
    AwaitStepStartSnapshot,
    /// The step finished on the wire while tools it called still run: its closing snapshot
    /// waits for them, so the patch covers what they change (SPEC 4.1, 13).
    AwaitStepTools(StepFinish),
    AwaitFinishSnapshot(StepFinish),
    AwaitStepPatch,
    AwaitPermission {
        call_id: String,
    },
    CleanupPatch,
    Grace,
    Done,
}

/// Turns the events of one assistant message into parts and effects.
pub struct Processor {
    pub(super) config: ProcessorConfig,
    pub(super) message: AssistantMessage,
    /// The message's parts in id order; handlers refer to them by index. Shared with the
    /// `UpsertPart` effects that carry them: an upsert costs a reference count, and a handler
    /// that changes a part copies it only while a driver still holds an earlier upsert.
    pub(super) parts: Vec<Arc<Part>>,
    /// Unsettled tool calls: indices of their parts in `parts`, ascending (parts are never
    /// removed or reordered). A list, not a map by call id: a step has a handful of open
    /// calls, and the part already holds the id, so tracking a call allocates nothing.
    pub(super) toolcalls: Vec<usize>,
    /// The open text part, if any.
    pub(super) current_text: Option<usize>,
    /// Open reasoning parts: the provider's reasoning id and the part's index, in part order.
    /// A list, not a map: there are one or two at a time, and a delta then costs a string
    /// comparison instead of hashing its id.
    pub(super) reasoning: Vec<(String, usize)>,
    /// The snapshot held since the stream or the step started, consumed by the next patch.
    pub(super) snapshot: Option<String>,
    /// A permission or question rejection stopped a tool (SPEC 8 step 6).
    pub(super) blocked: bool,
    /// The overflow cut or an overflow halt asks for compaction.
    pub(super) needs_compaction: bool,
    /// Whether a rejection blocks the loop (`!continue_loop_on_deny`).
    pub(super) should_break: bool,
    pub(super) aborted: bool,
    pub(super) phase: Phase,
    /// Effects not yet polled by the driver, in order.
    pub(super) effects: VecDeque<Effect>,
    pub(super) ids: IdGenerator,
    pub(super) entropy: Box<dyn Entropy + Send>,
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
            toolcalls: Vec::new(),
            current_text: None,
            reasoning: Vec::new(),
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
    pub fn parts(&self) -> &[Arc<Part>] {
        &self.parts
    }

    /// The snapshot the newest step closed on, when no step started after it: the next step
    /// of the run may start from it instead of taking one of its own (SPEC 13).
    pub fn closing_snapshot(&self) -> Option<&str> {
        self.parts.iter().rev().find_map(|part| match &part.kind {
            PartKind::StepStart(_) => Some(None),
            PartKind::StepFinish(finish) => Some(finish.snapshot.as_deref()),
            _ => None,
        })?
    }

    /// True when the user interrupted this message.
    pub fn aborted(&self) -> bool {
        self.aborted
    }

    /// The next effect to carry out, in order.
    // Inline: the effect then moves from the queue straight into the caller's slot.
    #[inline]
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// What the processor waits for before it takes stream events again.
    pub fn waiting(&self) -> Waiting {
        match self.phase {
            Phase::Streaming | Phase::Cut => Waiting::Nothing,
            Phase::AwaitStartSnapshot | Phase::AwaitStepStartSnapshot | Phase::AwaitFinishSnapshot(_) => {
                Waiting::Snapshot
            }
            Phase::AwaitStepTools(_) => Waiting::StepTools,
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
        self.toolcalls
            .iter()
            .filter_map(|&index| self.parts[index].as_tool())
            .map(|tool| tool.call_id.clone())
            .collect()
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
            Input::ToolSettled(settlement) => self.tool_settled(settlement, now),
            Input::EndOfStream => {
                self.settle_held_step(now);
                self.when_free(input_name(&Input::EndOfStream), |p| p.cleanup(now))
            }
            Input::Interrupt => {
                self.settle_held_step(now);
                self.interrupt(now)
            }
            Input::Halt(error) => {
                self.settle_held_step(now);
                self.when_free("halt", |p| {
                    p.halt(error);
                    p.cleanup(now);
                })
            }
            Input::GraceElapsed => match self.phase {
                Phase::Grace => {
                    self.end_grace(now);
                    Ok(())
                }
                _ => Err(self.unexpected(&Input::GraceElapsed)),
            },
        }
    }

    pub(super) fn unexpected(&self, input: &Input) -> ProcessorError {
        ProcessorError::Unexpected { waiting: self.waiting(), input: input_name(input) }
    }

    pub(super) fn when_free(
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

    /// The part index of the unsettled call `call_id`. Searched from the newest call: the
    /// events of a call mostly follow its start.
    pub(super) fn tracked_index(&self, call_id: &str) -> Option<usize> {
        self.toolcalls
            .iter()
            .rev()
            .copied()
            .find(|&index| self.parts[index].as_tool().is_some_and(|tool| tool.call_id == call_id))
    }

    /// The part index of the open reasoning `id`.
    pub(super) fn reasoning_index(&self, id: &str) -> Option<usize> {
        self.reasoning.iter().find(|(open, _)| open == id).map(|&(_, index)| index)
    }

    /// Stops tracking the call whose part is at `index`.
    pub(super) fn untrack(&mut self, index: usize) {
        if let Some(at) = self.toolcalls.iter().rposition(|&tracked| tracked == index) {
            self.toolcalls.remove(at);
        }
    }

    /// Ends every open reasoning part at `now`, in part order (SPEC 4 step 2, SPEC 8 step 5c).
    pub(super) fn end_open_reasoning(&mut self, now: u64) {
        for (_, index) in std::mem::take(&mut self.reasoning) {
            if let PartKind::Reasoning(part) = &mut self.part_mut(index).kind {
                part.time.end = Some(now);
            }
            self.upsert(index);
        }
    }

    pub(super) fn push_part(&mut self, kind: PartKind, now: u64) -> usize {
        let id: PartId = self.ids.next(now, self.entropy.as_mut());
        let index = self.parts.len();
        self.parts.push(Arc::new(Part {
            id,
            session_id: self.message.session_id.clone(),
            message_id: self.message.id.clone(),
            kind,
        }));
        index
    }

    /// The part at `index`, to change: copied first only when an upsert of it is still held.
    pub(super) fn part_mut(&mut self, index: usize) -> &mut Part {
        Arc::make_mut(&mut self.parts[index])
    }

    pub(super) fn upsert(&mut self, index: usize) {
        self.effects.push_back(Effect::UpsertPart(Arc::clone(&self.parts[index])));
    }

    pub(super) fn delta(&mut self, index: usize, delta: String) {
        self.effects.push_back(Effect::PartDelta {
            message_id: self.message.id.clone(),
            part_id: self.parts[index].id.clone(),
            field: "text",
            delta,
        });
    }
}
