//! Test support for the session runtime (not published).
//!
//! [`TestServer`] serves a [`Script`](session_llm::Script) over real HTTP on loopback, in the
//! wire format of each adapter: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages
//! and Gemini. It streams with the script's pacing, injects the script's faults on a chosen
//! request or mid-stream (429 with `retry-after-ms`, `retry-after` seconds or an HTTP date;
//! 500, 502, 503, 529; a connection reset; a stall; a malformed event; a cut stream; each
//! provider's context-overflow error), records every request, and checks on each one that
//! every tool call in the history has its result. A script's text may carry [`SENT_US`], which
//! each streamed chunk replaces by the moment it was sent (for latency measurements).
//!
//! The choice of reply (turn from the history, faults by request number, tool translation)
//! and the wire bytes are session-llm's, shared with the in-process
//! [`ScriptedProvider`](session_llm::ScriptedProvider): a script answers the same in process
//! and over HTTP. This crate only adds the HTTP side, the request log and the invariant check.
//! It deliberately holds no assertions about a runtime's behaviour: tests make those.
//!
//! [`git_traps`] makes a repository booby-trapped as a model could leave it (fsmonitor, hooks,
//! filter and diff drivers, a submodule and a nested repository with their own fsmonitor),
//! each trap leaving a marker file when some `git` runs it.
//!
//! [`ApiClient`] and [`Events`] speak to the session server's HTTP API the way its tests do:
//! JSON requests and the `/event` stream read event by event.

mod api;
mod git_traps;
mod listener;
mod server;
mod trust;
mod wire;

pub use api::{ApiClient, Events, PATIENCE};
pub use git_traps::{GitTraps, git_traps, plain_git_status};
pub use server::{RecordedRequest, SENT_US, TestServer, Violation};
pub use trust::trust_folder;
pub use wire::{WireFacts, read as read_request};
