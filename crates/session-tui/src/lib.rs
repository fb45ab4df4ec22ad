//! The interactive terminal UI of the session runtime (`session` on a terminal, `session tui`).
//!
//! It runs in process on the runtime and its bus: [`run`] takes an assembled runtime whose
//! permission asks go to the UI ([`asker`]), opens the session (`--session`, `--continue` or
//! a new one) and draws, on every event and never without one, the transcript (markdown with
//! coloured code, collapsed reasoning, one line per tool call that expands, diffs, patch
//! summaries, compaction, errors and retries), the permission and question dialogs in their own area, the
//! prompt (multi-line, history, large pastes, `@path` completion, `!command`) and the status
//! line. Slash commands cover sessions, undo and redo (revert, unrevert), compaction, the
//! model and agent pickers, export and help, plus the configured commands.
//!
//! The state and its key handling ([`App`]) and the frame ([`view::draw`]) are pure, so frames
//! are tested on ratatui's `TestBackend`; the runner carries out their effects on the runtime.
//! It does not own the agent loop, the store or the tools, nor reads the environment: the
//! binary passes the setup, `NO_COLOR` included.

pub mod app;
mod app_questions;
mod asker;
pub mod commands;
pub mod complete;
mod effects;
pub mod fixtures;
#[cfg(test)]
mod frame_tests;
pub mod question;
pub mod render;
mod runner;
mod setup;
mod terminal;
pub mod theme;
pub mod transcript;
pub mod view;

pub use app::{App, Effect, PickerItem, PickerKind, Status};
pub use asker::{Ask, AskReceiver, TuiAsker, asker};
pub use effects::{mentioned_files, shell};
pub use runner::{TuiOptions, run};
pub use setup::time_of;
pub use terminal::{TerminalGuard, restore};
pub use theme::Theme;
pub use transcript::{NoteKind, Transcript};
