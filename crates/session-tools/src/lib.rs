//! Tool execution for the session runtime.
//!
//! This crate will own the `Tool` trait, the per-call tracker, the permission engine's state
//! and the built-in tools confined to the workspace (issue 6). It holds no code yet.
