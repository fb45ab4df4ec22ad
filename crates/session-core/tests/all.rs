//! The one integration test binary of session-core.

#![expect(
    clippy::expect_used,
    reason = "test helpers outside #[test] functions may expect: a failure there is a failed test"
)]

mod suite;
