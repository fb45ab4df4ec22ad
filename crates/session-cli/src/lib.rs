//! The `session` command's library half: what the binary does, as functions tests can call.
//!
//! Today it holds `replay`: a recorded provider stream through the adapter and the
//! session-core processor, with no tool execution. The interactive commands (`run`, `demo`,
//! the session commands) and `serve` arrive with their issues; they are not here yet.

mod replay;

pub use replay::{ReplayError, ReplayModel, ReplayOutput, replay};
