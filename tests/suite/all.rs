//! End-to-end tests through the real `session` binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crash;
mod demo;
mod faults;
mod long;
mod opencode_cli;
mod replay;
mod run;
mod security;
mod serve_sdk;
