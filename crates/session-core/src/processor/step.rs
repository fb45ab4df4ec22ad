//! Step start and step-finish settlement (SPEC 4): snapshots, usage and cost, the patch part,
//! and the overflow cut.

use super::protocol::{Effect, Input, ProcessorError};
use super::state::{Phase, Processor};
use crate::event::{FinishReason, ProviderMetadata, Usage};
use crate::message::{PartKind, PatchPart, StepFinishPart, StepStartPart};
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

    pub(super) fn patch_computed(&mut self, files: Vec<String>, now: u64) -> Result<(), ProcessorError> {
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

    pub(super) fn push_step_start(&mut self, snapshot: Option<String>, now: u64) {
        let index = self.push_part(PartKind::StepStart(StepStartPart { snapshot }), now);
        self.upsert(index);
    }

    /// SPEC 4, from step 2 on (step 1, the end snapshot, is `completed`).
    pub(super) fn settle_step(
        &mut self,
        reason: FinishReason,
        usage: Option<Usage>,
        metadata: Option<ProviderMetadata>,
        completed: Option<String>,
        now: u64,
    ) {
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
        if let Some(hash) = self.snapshot.clone() {
            self.phase = Phase::AwaitStepPatch;
            self.effects.push_back(Effect::ComputePatch { hash });
        } else {
            self.after_patch();
        }
    }

    /// SPEC 4 steps 8 and 9.
    pub(super) fn after_patch(&mut self) {
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

    pub(super) fn write_patch(&mut self, files: Vec<String>, now: u64) {
        if let Some(hash) = self.snapshot.take()
            && !files.is_empty()
        {
            let index = self.push_part(PartKind::Patch(PatchPart { hash, files }), now);
            self.upsert(index);
        }
    }
}
