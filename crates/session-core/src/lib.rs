//! The pure centre of the agent session runtime.
//!
//! `session-core` owns the data model (ids, stream events, messages, parts and tool states),
//! the math and rules of SPEC (usage and cost, context overflow, retry, provider error
//! classification, doom loops, permissions, compaction, history conversion) and the
//! processor: a sans-IO state machine that turns stream events into parts and effects.
//!
//! It deliberately does no IO: no async runtime, no filesystem, network, environment, clock
//! or randomness. Time, ids and random draws come in as arguments, so every function here is
//! deterministic. The crates around it carry the effects out.

pub mod calendar;
pub mod compaction;
pub mod config;
pub mod event;
pub mod history;
pub mod id;
pub mod js_json;
mod js_text;
pub mod message;
pub mod overflow;
pub mod permission;
pub mod processor;
pub mod prompt_loop;
pub mod provider_error;
pub mod retry;
pub mod summary;
pub mod title;
pub mod token;
pub mod usage;

// The root holds the core model types (ids, stream events, messages and parts, usage and
// cost); rules, math and the processor are reached through their modules.
pub use event::{
    FinishReason, LlmEvent, ProviderMetadata, ToolFailure, ToolResultKind, ToolResultValue, Usage,
};
pub use id::{
    Clock, Entropy, IdError, IdGenerator, IdOrder, IdSource, Identifier, MessageId, PartId, PermissionId,
    QuestionId, SessionId, SplitMix,
};
pub use js_json::JsonObject;
pub use message::{
    AgentPart, AssistantMessage, AssistantTime, CompactionPart, CompletedTime, CreatedTime, ErrorTime,
    FileDiff, FilePart, FileStatus, Message, MessageError, MessagePath, MessageWithParts, ModelRef,
    OutputFormat, Part, PartKind, PartTime, PatchPart, ReasoningPart, RetryPart, RunningTime, SnapshotPart,
    StepFinishPart, StepStartPart, SubtaskPart, TextPart, ToolOutput, ToolPart, ToolState, ToolStatus,
    TransitionError, UserMessage, UserSummary, two_files_patch,
};
pub use usage::{CachePrices, CacheTokens, CostTier, ModelCost, Prices, StepUsage, TierBound, TokenUsage};
