//! Step start and step-finish settlement (SPEC 4): snapshots, usage and cost, the patch part,
//! and the overflow cut.

use super::protocol::{Effect, Input, ProcessorError, SnapshotPurpose};
use super::state::{Phase, Processor, StepFinish};
use crate::message::{PartKind, PatchPart, StepFinishPart, StepStartPart, ToolStatus};
use crate::overflow::{self, OUTPUT_TOKEN_MAX};
use crate::usage;

impl Processor {
    pub(super) fn snapshot_taken(&mut self, hash: Option<String>, now: u64) -> Result<(), ProcessorError> {
        match std::mem::replace(&mut self.phase, Phase::Streaming) {
            Phase::AwaitStartSnapshot => {
                self.snapshot = hash;
            }
            Phase::AwaitStepStartSnapshot => {
                self.snapshot.clone_from(&hash);
                self.push_step_start(hash, now);
            }
            Phase::AwaitFinishSnapshot(finish) => self.settle_step(finish, hash, now),
            other => {
                self.phase = other;
                return Err(self.unexpected(&Input::Snapshot(hash)));
            }
        }
        Ok(())
    }

    pub(super) fn patch_computed(&mut self, files: Vec<String>, now: u64) -> Result<(), ProcessorError> {
        match std::mem::replace(&mut self.phase, Phase::Streaming) {
            Phase::AwaitStepPatch => {
                self.write_patch(files, now);
                self.after_patch();
            }
            Phase::CleanupPatch => {
                self.write_patch(files, now);
                self.finish_cleanup(now);
            }
            other => {
                self.phase = other;
                return Err(self.unexpected(&Input::Patch(files)));
            }
        }
        Ok(())
    }

    pub(super) fn push_step_start(&mut self, snapshot: Option<String>, now: u64) {
        let index = self.push_part(PartKind::StepStart(StepStartPart { snapshot }), now);
        self.upsert(index);
    }

    /// A step-finish event: the closing snapshot is taken once the step's own tools settled
    /// (a tool still writing would otherwise land in no patch).
    pub(super) fn step_finished(&mut self, finish: StepFinish) {
        if self.runs_local_tools() {
            self.phase = Phase::AwaitStepTools(finish);
        } else {
            self.phase = Phase::AwaitFinishSnapshot(finish);
            self.effects.push_back(Effect::TakeSnapshot(SnapshotPurpose::StepFinish));
        }
    }

    /// After a tool settled: a step-finish held for the step's tools goes on once none runs.
    pub(super) fn resume_held_step(&mut self) {
        if !self.runs_local_tools()
            && let Some(finish) = self.take_held_step()
        {
            self.step_finished(finish);
        }
    }

    /// The step-finish held in [`Phase::AwaitStepTools`], leaving the phase streaming; `None`
    /// (and the phase as it was) in any other phase.
    fn take_held_step(&mut self) -> Option<StepFinish> {
        match std::mem::replace(&mut self.phase, Phase::Streaming) {
            Phase::AwaitStepTools(finish) => Some(finish),
            other => {
                self.phase = other;
                None
            }
        }
    }

    /// The end of the stream, a halt or an interrupt while a step-finish waits for tools: the
    /// step is settled at once without a closing snapshot (the held start snapshot stays for
    /// cleanup's patch), so its usage and cost are never lost.
    pub(super) fn settle_held_step(&mut self, now: u64) {
        if let Some(finish) = self.take_held_step() {
            self.record_step_finish(finish, None, now);
            self.effects.push_back(Effect::StepSettled);
            self.needs_compaction |= self.overflowed();
        }
    }

    /// True while a call the driver runs (not one the provider executes) is running.
    fn runs_local_tools(&self) -> bool {
        self.toolcalls.iter().any(|&index| {
            matches!(&self.parts[index].kind, PartKind::Tool(tool)
                if !tool.provider_executed() && tool.state.status() == ToolStatus::Running)
        })
    }

    /// SPEC 4, from step 2 on (step 1, the end snapshot, is `completed`).
    pub(super) fn settle_step(&mut self, finish: StepFinish, completed: Option<String>, now: u64) {
        let to = completed.clone();
        self.record_step_finish(finish, completed, now);
        if let Some(hash) = self.snapshot.clone() {
            self.phase = Phase::AwaitStepPatch;
            self.effects.push_back(Effect::ComputePatch { hash, to });
        } else {
            self.after_patch();
        }
    }

    /// SPEC 4 steps 2 to 5: reasoning closed, usage and cost, the step-finish part and the
    /// message totals.
    fn record_step_finish(&mut self, finish: StepFinish, completed: Option<String>, now: u64) {
        let StepFinish { reason, usage, metadata } = finish;
        self.end_open_reasoning(now);
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
    }

    /// SPEC 4 steps 8 and 9.
    pub(super) fn after_patch(&mut self) {
        self.snapshot = None;
        self.effects.push_back(Effect::StepSettled);
        if self.overflowed() {
            self.needs_compaction = true;
            self.phase = Phase::Cut;
        } else {
            self.phase = Phase::Streaming;
        }
    }

    /// SPEC 4 step 9: the step's tokens reached the usable context (summaries never count).
    fn overflowed(&self) -> bool {
        !self.message.is_summary()
            && overflow::is_overflow(
                &self.config.compaction,
                &self.message.tokens,
                &self.config.limit,
                OUTPUT_TOKEN_MAX,
            )
    }

    pub(super) fn write_patch(&mut self, files: Vec<String>, now: u64) {
        if let Some(hash) = self.snapshot.take()
            && !files.is_empty()
        {
            let index = self.push_part(PartKind::Patch(PatchPart { hash, files }), now);
            self.upsert(index);
        }
    }
}
