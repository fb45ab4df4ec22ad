//! The one integration-test binary of session-llm (each test binary is another link).

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions may unwrap: a failure there is a failed test"
)]

mod suite;
