//! The one integration-test binary of session-testkit: every fault kind observed by a real
//! HTTP client, the wire formats, pacing, the request log and the invariant check.

// Test helpers outside #[test] functions may unwrap: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
