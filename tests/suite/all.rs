//! End-to-end tests through the real `session` binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agents;
mod cli;
mod crash;
mod demo;
mod faults;
mod first_request;
mod long;
mod mcp;
mod opencode_cli;
mod opencode_tui;
mod oracle;
mod proc_environ;
mod question;
mod replay;
mod run;
mod run_format;
mod sandbox;
mod security;
mod serve_sdk;
mod serve_slow;
mod skills;
mod task;
mod tui;
