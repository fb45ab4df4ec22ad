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
pub mod token;
pub mod usage;

pub use calendar::{civil_from_days, days_from_civil, iso_time, utc_date};
pub use config::CompactionConfig;
pub use event::{
    FinishReason, LlmEvent, ProviderMetadata, ToolFailure, ToolResultKind, ToolResultValue, Usage,
};
pub use id::{
    Clock, Entropy, IdError, IdGenerator, IdOrder, Identifier, MessageId, PartId, PermissionId, QuestionId,
    SessionId, SplitMix,
};
pub use message::{
    AgentPart, AssistantMessage, AssistantTime, CompactionPart, CompletedTime, CreatedTime, ErrorTime,
    FilePart, Message, MessageError, MessagePath, MessageWithParts, ModelRef, OutputFormat, Part, PartKind,
    PartTime, PatchPart, ReasoningPart, RetryPart, RunningTime, SnapshotPart, StepFinishPart, StepStartPart,
    SubtaskPart, TOOL_ABORTED_TEXT, TextPart, ToolOutput, ToolPart, ToolState, ToolStatus, TransitionError,
    UserMessage, UserSummary, normalize_tool_input,
};
// Each line below is filled by the module's author; keep one line per module.
pub use compaction::{
    COMPACTION_AGENT, COMPACTION_SYSTEM_PROMPT, CONTINUE_TEXT, CompactionError, CompactionHistory,
    DEFAULT_TAIL_TURNS, MAX_PRESERVE_RECENT_TOKENS, MIN_PRESERVE_RECENT_TOKENS, NEW_SUMMARY_ANCHOR,
    OVERFLOW_CONTINUE_PREFIX, PRUNE_MINIMUM, PRUNE_PROTECT, PRUNE_PROTECTED_TOOLS, PrunePlan,
    REPLAY_TOO_LARGE_TEXT, SESSION_TOO_LARGE_TEXT, SUMMARY_TEMPLATE, TailSelection, TailStart, Turn,
    UPDATE_SUMMARY_ANCHOR, UPDATE_SUMMARY_RULE, apply_prune, compaction_history, continue_part,
    continue_text, filter_compacted, is_compaction_message, plan_prune, preserve_budget, prune_enabled,
    replay_parts, replay_user_message, select_tail, split_turn, summary_anchor, summary_message,
    summary_prompt, summary_request, summary_text, tail_turns, too_large_error, turns,
};
pub use history::{
    AssistantContent, CLEARED_TOOL_OUTPUT, COMPACTION_QUESTION, COMPACTION_TOOL_OUTPUT_MAX_CHARS,
    FileContent, INTERRUPTED_TOOL_RESULT, ModelMessage, ModelTarget, SUBTASK_TEXT, TOOL_MEDIA_INTRO,
    ToModelOptions, ToolCall, ToolResult, ToolResultContent, ToolResultOutput, UserContent, estimate_history,
    estimate_model_messages, is_media, media_placeholder, to_model_messages,
};
pub use js_json::{JsonObject, format_js_number, stringify, stringify_object};
pub use overflow::{COMPACTION_BUFFER, ModelLimit, OUTPUT_TOKEN_MAX, is_overflow, max_output_tokens, usable};
pub use permission::{
    Action, AgentPaths, AskOutcome, BuiltinAgent, DOOM_LOOP_PERMISSION, DOOM_LOOP_THRESHOLD, EDIT_TOOLS,
    PERMISSION_CORRECTED_PREFIX, PERMISSION_DENIED_PREFIX, PERMISSION_REJECTED_TEXT, PermissionAsk,
    PermissionAsks, PermissionConfigError, PermissionError, PermissionRequest, QUESTION_REJECTED_TEXT,
    QuestionRejectedError, Reply, Resolution, Rule, Ruleset, ToolCallRef, agent_ruleset, builtin_agent_rules,
    check_doom_loop, default_rules, disabled_tools, doom_loop_request, evaluate, matching_rule,
    rules_from_config, tool_permission, wildcard_match,
};
pub use processor::{
    Effect, Input, Outcome, Processor, ProcessorConfig, ProcessorError, SnapshotPurpose, Waiting,
    derive_output, summary_tool_call_error,
};
pub use provider_error::{
    ApiCallFailure, ClassifiedError, NO_BODY_PATTERN, OVERFLOW_PATTERNS, STATUS_TEXT, classify_stream_error,
    parse_api_call_error, parse_stream_error, status_text,
};
pub use retry::{
    RETRY_BACKOFF_FACTOR, RETRY_INITIAL_DELAY_MS, RETRY_JITTER_FACTOR, RETRY_MAX_DELAY_MS,
    RETRY_MAX_DELAY_NO_HEADERS_MS, RETRY_MAX_RETRIES, RETRY_UNSAFE_CODE, RETRYABLE_PATTERNS, RetryCarry,
    RetryConfig, RetryDecision, RetryLimit, RetryRequest, clamp_delay, decide, delay, parse_float,
    parse_http_date, retryable,
};
pub use token::{
    Utf16Cut, cut_utf16, estimate, estimate_units, truncate_tool_output, truncation_suffix, utf16_len,
};
pub use usage::{
    CONTEXT_TIER, CachePrices, CacheTokens, CatalogCost, CatalogPrices, CatalogTier, CatalogTierBound,
    CostTier, ModelCost, Prices, StepUsage, TierBound, TokenUsage, get_usage,
};
