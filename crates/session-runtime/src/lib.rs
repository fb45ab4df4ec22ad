//! The async engine of the session runtime.
//!
//! This crate will wire the provider, the store and the tools around session-core's processor,
//! run the prompt loop with retries, compaction and snapshots, and own the configuration types
//! (issues 4 and 7). It holds no code yet.
