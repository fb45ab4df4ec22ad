//! The one integration test binary of session-tools: real temp dirs, real child processes.

// Test helpers outside #[test] functions may unwrap: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
