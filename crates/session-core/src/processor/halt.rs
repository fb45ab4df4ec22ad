//! Halt, abort and cleanup (SPEC 8): what an error, an interrupt or the end of the stream do,
//! the cleanup grace for running tools, and the outcome.

use super::protocol::{Effect, Input, Outcome, ProcessorError};
use super::state::{Phase, Processor};
use crate::event::FinishReason;
use crate::message::{MessageError, PartKind, PartTime};

impl Processor {
    pub(super) fn interrupt(&mut self, now: u64) -> Result<(), ProcessorError> {
        match self.phase {
            Phase::Done => Err(self.unexpected(&Input::Interrupt)),
            Phase::Grace => {
                // Already cleaning up: an interrupt only shortens the grace.
                self.aborted = true;
                self.end_grace(now);
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

    /// SPEC 8 step 4.
    pub(super) fn halt(&mut self, error: MessageError) {
        let overflow = matches!(error, MessageError::ContextOverflowError { .. });
        if overflow && (self.config.compaction.auto_enabled() || self.message.is_summary()) {
            self.needs_compaction = true;
            self.effects.push_back(Effect::SessionError(Box::new(error)));
            return;
        }
        if overflow {
            self.message.finish = Some(FinishReason::Error);
        }
        self.message.error = Some(error.clone());
        self.effects.push_back(Effect::SessionError(Box::new(error)));
        self.effects.push_back(Effect::SetIdle);
    }

    /// SPEC 8 step 5, with the patch (5a) moved after the tools' grace (5d, 5e): a tool that
    /// writes during the grace, or is killed halfway, still lands in the patch that revert uses.
    pub(super) fn cleanup(&mut self, now: u64) {
        if let Some(index) = self.current_text.take() {
            if let PartKind::Text(part) = &mut self.part_mut(index).kind {
                let start = part.time.map_or(now, |t| t.start);
                part.time = Some(PartTime { start, end: Some(now) });
            }
            self.upsert(index);
        }
        self.end_open_reasoning(now);
        if self.toolcalls.is_empty() {
            self.cleanup_patch(now);
        } else {
            self.phase = Phase::Grace;
            self.effects.push_back(Effect::AwaitToolCalls { call_ids: self.open_calls() });
        }
    }

    pub(super) fn maybe_end_grace(&mut self, now: u64) {
        if self.toolcalls.is_empty() {
            self.cleanup_patch(now);
        }
    }

    /// The grace is over: calls still unsettled become aborted errors (SPEC 8 step 5e).
    pub(super) fn end_grace(&mut self, now: u64) {
        for index in std::mem::take(&mut self.toolcalls) {
            if let PartKind::Tool(tool) = &mut self.part_mut(index).kind
                && tool.state.abort(now).is_ok()
            {
                self.upsert(index);
            }
        }
        self.cleanup_patch(now);
    }

    /// SPEC 8 step 5a: a patch part for what changed since the held snapshot, if any.
    fn cleanup_patch(&mut self, now: u64) {
        if let Some(hash) = self.snapshot.clone() {
            self.phase = Phase::CleanupPatch;
            self.effects.push_back(Effect::ComputePatch { hash, to: None });
        } else {
            self.finish_cleanup(now);
        }
    }

    /// SPEC 8 step 5f and the outcome (step 6).
    pub(super) fn finish_cleanup(&mut self, now: u64) {
        self.snapshot = None;
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
}
