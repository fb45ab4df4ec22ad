//! The test modules.

mod ahead;
mod config;
mod engine;
mod fuzz_config;
mod long;
mod loopback;
mod mcp_cwd;
mod process;
mod question;
mod revert;
mod snapshot;
mod snapshot_gc;
mod structured;
mod summary;
mod support;
mod symlinks;
mod titles;
