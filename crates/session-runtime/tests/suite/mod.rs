//! The test modules.

mod config;
