//! The one integration test binary of session-tools: real temp dirs, real child processes.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions may unwrap: a failure there is a failed test"
)]

mod suite;
