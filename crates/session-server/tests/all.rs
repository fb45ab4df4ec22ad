//! The one integration test binary of session-server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
