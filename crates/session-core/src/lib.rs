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

mod compaction;
mod config;
mod doom_loop;
mod event;
mod history;
mod id;
mod js_json;
mod message;
mod overflow;
mod permission;
mod processor;
mod provider_error;
mod retry;
mod token;
mod usage;

pub use config::CompactionConfig;
pub use event::{FinishReason, LlmEvent, ProviderMetadata, ToolFailure, ToolResultKind, ToolResultValue, Usage};
pub use id::{
    Entropy, IdError, IdGenerator, IdOrder, Identifier, MessageId, PartId, PermissionId, QuestionId, SessionId,
};
pub use message::{
    AgentPart, AssistantMessage, AssistantTime, CacheTokens, CompactionPart, CompletedTime, CreatedTime, ErrorTime,
    FilePart, JsonObject, Message, MessageError, MessagePath, MessageWithParts, ModelRef, OutputFormat, Part, PartKind,
    PartTime, PatchPart, ReasoningPart, RetryPart, RunningTime, SnapshotPart, StepFinishPart, StepStartPart,
    SubtaskPart, TOOL_ABORTED_TEXT, TextPart, TokenUsage, ToolOutput, ToolPart, ToolState, ToolStatus,
    TransitionError, UserMessage, UserSummary, normalize_tool_input,
};
// Each line below is filled by the module's author; keep one line per module.
pub use compaction::{};
pub use doom_loop::{};
pub use history::{};
pub use js_json::{};
pub use overflow::{};
pub use permission::{};
pub use processor::{};
pub use provider_error::{};
pub use retry::{};
pub use token::{};
pub use usage::{};
