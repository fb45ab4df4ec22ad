//! Scripted models: the script format of `../shared/peers/mockllm.py` (turns of text and tool
//! calls, usage per turn, faults), extended with reasoning, a recorded `.sse` file per turn,
//! the API to speak and pacing.
//!
//! The pieces are pure and shared by the two ways a script is served:
//! - [`ScriptRunner`] counts requests and chooses each answer as mockllm does: the kind of
//!   request, the turn from the history (assistant turns after the last summary marker), the
//!   fault by request number, the tools translated to what the request offers;
//! - [`wire_stream`] renders a reply in each provider's SSE format, and [`FaultAction`] holds
//!   each provider's error bodies;
//! - [`ScriptedProvider`] answers in process (the demo, replays, fast tests): its bytes go
//!   through the matching parser and its HTTP errors through [`api_failure`](crate::api_failure),
//!   so that events and errors are exactly those of an HTTP provider;
//! - the test server of `session-testkit` writes the same bytes over loopback.

mod provider;
mod render;
mod reply;
mod runner;
mod script;
mod translate;

pub use provider::{ScriptedProvider, ScriptedRequest};
pub use render::{FaultAction, StreamFault, WireEnding, WireStream, error_body, overflow_body, wire_stream};
pub use reply::{Reply, ReplyCall, ReplyUsage};
pub use runner::{
    Plan, PlannedResponse, RequestFacts, RequestKind, ScriptRunner, classify, history_violations,
    summary_marker, turn_from_history,
};
pub use script::{
    DEFAULT_CHUNK_CHARS, Fault, FaultKind, FaultScope, OpKind, Script, ScriptCall, ScriptError, ScriptModel,
    ScriptOp, ScriptUsage, Turn,
};
