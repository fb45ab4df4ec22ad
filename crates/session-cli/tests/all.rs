//! The one integration test binary of session-cli.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
