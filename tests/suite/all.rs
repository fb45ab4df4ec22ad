//! End-to-end tests through the real `session` binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod demo;
mod replay;
mod run;
