//! What goes in and out of the processor: its configuration, the effects it asks for, the
//! inputs it takes, what it waits for, and its errors and outcome.

use std::sync::Arc;

use crate::config::CompactionConfig;
use crate::event::{LlmEvent, ToolFailure};
use crate::id::{MessageId, PartId};
use crate::js_json::JsonObject;
use crate::message::{AssistantMessage, MessageError, Part, ToolOutput};
use crate::overflow::ModelLimit;
use crate::permission::PermissionRequest;
use crate::usage::ModelCost;

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
    /// The tools offered with the request, for tool-call repair (SPEC 1.1); `None` runs every
    /// call as named.
    pub offered_tools: Option<Vec<String>>,
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
// The queue and every poll move effects by value, one or more per stream event: the rare
// large payloads are boxed so that an effect stays small enough (at most 128 bytes) to move
// inline instead of through `memcpy`.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Persist this part and publish `message.part.updated`.
    // Shared with the processor's own list: an upsert copies nothing, and the processor copies
    // the part on its next change only if the driver still holds this one.
    UpsertPart(Arc<Part>),
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
        /// The step's closing snapshot when it was just taken: the worktree is that tree, so
        /// the patch is the difference of the two trees (no second pass over the worktree).
        to: Option<String>,
    },
    /// Ask the `doom_loop` permission; answer with [`Input::PermissionReply`].
    AskPermission {
        /// The call that triggered the ask.
        call_id: String,
        /// The request (permission, patterns, always, metadata).
        request: Box<PermissionRequest>,
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
        input: Box<JsonObject>,
    },
    /// A step settled: the driver may compute summary diffs (errors ignored).
    StepSettled,
    /// Cleanup waits for these calls; feed their results, then [`Input::GraceElapsed`].
    AwaitToolCalls {
        /// Calls still unsettled.
        call_ids: Vec<String>,
    },
    /// Publish `session.error`.
    SessionError(Box<MessageError>),
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
    /// A tool the driver ran settled, typed: no JSON value to derive the output from.
    ToolSettled(ToolSettlement),
    /// The stream ended; cleanup starts.
    EndOfStream,
    /// The user cancelled; the message gets `MessageAbortedError` and cleanup starts.
    Interrupt,
    /// The retry policy gave up on this error; halt, then clean up.
    Halt(MessageError),
    /// The cleanup grace ran out; unsettled calls become aborted errors.
    GraceElapsed,
}

/// How a tool the driver ran ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolSettlement {
    /// It produced this output.
    Completed {
        /// The provider's call id.
        call_id: String,
        /// What the completed state records.
        output: ToolOutput,
    },
    /// It failed.
    Failed {
        /// The provider's call id.
        call_id: String,
        /// The error text the model reads.
        message: String,
        /// Why, when a rejection should stop the loop (SPEC 1.2).
        failure: Option<ToolFailure>,
    },
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
    /// Results of the step's running tools, before the step's closing snapshot.
    StepTools,
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

/// Label of an input, for errors.
pub(super) fn input_name(input: &Input) -> &'static str {
    match input {
        Input::Event(_) => "event",
        Input::Snapshot(_) => "snapshot",
        Input::Patch(_) => "patch",
        Input::PermissionReply(_) => "permission reply",
        Input::ToolProgress { .. } => "tool progress",
        Input::ToolSettled(_) => "tool result",
        Input::EndOfStream => "end of stream",
        Input::Interrupt => "interrupt",
        Input::Halt(_) => "halt",
        Input::GraceElapsed => "grace elapsed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_effect_moves_inline() {
        // Larger than 128 bytes, every move of an effect becomes a call to `memcpy`.
        assert!(std::mem::size_of::<Effect>() <= 128, "{}", std::mem::size_of::<Effect>());
    }
}
