//! The `session` command's library half: what the binary does, as functions tests and
//! embedders can call.
//!
//! It owns the assembly of a runtime from the configuration and the environment the binary
//! reads ([`RuntimeSetup`], [`assemble`], [`open_store`], [`ConfiguredModels`]), and each
//! command: [`run_prompt`] (one prompt, permission asks at a terminal or by flag),
//! [`run_demo`] (the whole runtime offline with a scripted model), [`replay()`] (a recorded
//! provider stream through the adapter and the processor, no tools run), [`sessions`] (list,
//! show, export, import, delete) and [`serve`] (session-server's HTTP API on a listener), with the
//! [`Renderer`] of bus events as text or JSON lines, and [`run_json`], the lines of OpenCode's
//! `opencode run --format json` that `run --format json` prints.
//!
//! It deliberately does not own the agent loop (`session-runtime`), the providers and the
//! catalog (`session-llm`), storage (`session-store`) or the tools (`session-tools`); and only
//! `main` reads the process environment: these functions take it as arguments.

pub mod attach;
pub mod color;
pub mod config_check;
mod demo;
pub mod mcp;
pub mod models;
pub mod process_env;
mod render;
mod replay;
mod run;
pub mod run_json;
mod run_question;
pub mod sandbox;
pub mod serve;
pub mod sessions;
pub mod skills;
pub mod stats;
mod status_line;
pub mod terminal;
pub mod token;
pub mod trust;

pub use color::ColorChoice;
pub use demo::{DemoSummary, run_demo};
pub use render::{OutputFormat, Renderer};
pub use replay::{ReplayError, ReplayModel, ReplayOutput, replay, replay_model};
pub use run::{
    AskMode, Assembled, EXIT_INTERRUPTED, RunOptions, RuntimeSetup, assemble, open_store, open_store_with,
    run_prompt,
};
pub use run_json::RunFormat;
pub use session_runtime::ConfiguredModels;
pub use session_runtime::models::ResolvedProvider;
pub use status_line::{StatusLine, StatusPause};
