//! The `session` command.
//!
//! This crate will build the `session` binary: `replay` (issue 3), `run`, `demo` and the
//! session commands (issue 8), and `serve` (issue 9). It holds no code yet.
