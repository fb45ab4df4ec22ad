//! Permissions and the doom-loop rule (SPEC 3).
//!
//! The submodules are private; every item is reached as `session_core::permission::name`.
//!
//! - `rules`: actions and rules, wildcard matching, "last match wins" evaluation, rules from
//!   configuration;
//! - `agents`: the built-in agents' rulesets, an agent's complete ruleset, disabled tools;
//! - `asks`: the error texts and the pure bookkeeping of pending asks;
//! - `doom_loop`: three identical tool calls in a row ask the `doom_loop` permission.

mod agents;
mod asks;
mod doom_loop;
mod rules;

pub use agents::{
    AgentPaths, BuiltinAgent, EDIT_TOOLS, agent_ruleset, builtin_agent_rules, default_rules, disabled_tools,
    tool_permission,
};
pub use asks::{
    AskOutcome, PERMISSION_CORRECTED_PREFIX, PERMISSION_DENIED_PREFIX, PERMISSION_REJECTED_TEXT,
    PermissionAsk, PermissionAsks, PermissionError, PermissionRequest, QUESTION_REJECTED_TEXT,
    QuestionRejectedError, Reply, Resolution, ToolCallRef,
};
pub(crate) use doom_loop::check_doom_loop_in;
pub use doom_loop::{DOOM_LOOP_PERMISSION, DOOM_LOOP_THRESHOLD, check_doom_loop, doom_loop_request};
pub use rules::{
    Action, PermissionConfigError, Rule, Ruleset, evaluate, expand_home, matching_rule, rules_from_config,
    wildcard_match,
};
