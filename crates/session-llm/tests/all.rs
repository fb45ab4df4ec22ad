//! The one integration-test binary of session-llm (each test binary is another link).

// Test helpers outside #[test] functions may unwrap: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
