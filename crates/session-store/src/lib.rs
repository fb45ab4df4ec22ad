//! Persistence for the session runtime.
//!
//! This crate will own the `Store` trait over sessions, messages and parts, with SQLite as the
//! embedded default and PostgreSQL for several instances (issue 5). It holds no code yet.
