//! The test modules.

mod config;
mod engine;
mod loopback;
mod process;
mod revert;
mod support;
