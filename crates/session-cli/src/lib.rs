//! The `session` command's library half: what the binary does, as functions tests can call.
//!
//! It holds `replay` (a recorded provider stream through the adapter and the processor, no
//! tools run), `demo` (the whole runtime offline with a scripted model) and the terminal
//! renderer of bus events. `run`, the session commands and `serve` arrive with their issues.

mod demo;
mod models;
mod render;
mod replay;
mod run;
pub mod sessions;

pub use demo::{DemoSummary, run_demo};
pub use models::{ConfiguredModels, ResolvedProvider};
pub use render::{OutputFormat, Renderer};
pub use replay::{ReplayError, ReplayModel, ReplayOutput, replay};
pub use run::{AskMode, EXIT_INTERRUPTED, RunOptions, open_store, run_prompt};
