//! The one integration test binary of session-core.

mod suite;
